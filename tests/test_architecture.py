"""The shape of the code: imports point inward, plugins use the SDK only, every module says what it is for,
and no function grows past 80 lines.

A module of ``app`` or ``plugins`` opens with a docstring whose first sentence says what the module does
(a title alone is not enough); files are split by meaning, not by size, so there is no cap on a file's
length — but a function or method longer than ``MAX_FUNCTION_LINES`` (decorators and docstring counted)
is a recipe whose steps want names of their own, unless ``LONG_FUNCTIONS`` says why not yet.

Units are ``app``'s top-level packages and modules (``core``, ``sdk``, ``engine``, ``host``, ``kb``, ``web``,
``openapi``, ``i18n``, ``domain``, ``cli``, ``settings``…). Imports under ``if TYPE_CHECKING:`` are for
annotations and do not count.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: what each unit may import of ``app`` (besides itself); ``settings`` is a leaf every outer unit may read
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "sdk": {"core", "kb", "host"},  # the plugins' front door: the core's names; app.sdk.testing: seeds and the host
    "settings": set(),
    "host": {"core", "i18n"},  # i18n: the plugins' words join its catalogs
    "engine": {"core"},
    "i18n": {"core"},
    "kb": {"core", "engine", "settings"},
    "web": {"core", "i18n", "settings"},
    "openapi": {"core", "web", "settings"},
    "domain": {"core", "engine", "host", "i18n", "kb", "openapi", "web", "settings"},
    "cli": {"core", "engine", "host", "i18n", "kb", "web", "settings"},
    "asgi": {"core", "engine", "host", "i18n", "kb", "openapi", "web", "domain", "settings"},
    "openapi_export": {"asgi", "settings"},
    "serve": {"web", "settings"},  # python -m app.serve: uvicorn on the factory string, not an import of asgi
    "openapi_examples": {"asgi", "cli", "kb", "openapi", "web", "settings"},
}
#: what a plugin may import of ``app``: the front door alone
SDK_MODULES = {"app.sdk"}
#: a function or method longer than this (decorators and docstring counted) is a recipe to split into named steps
MAX_FUNCTION_LINES = 80
#: the functions allowed to be longer, each with its reason
LONG_FUNCTIONS: dict[str, str] = {}
#: a module docstring's first sentence shorter than this many words is a title, not what the module is for
MIN_PURPOSE_WORDS = 5


def _runtime_imports(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, module)`` of every import outside ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for n in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name


def _unit(path: Path) -> str:
    return path.relative_to(ROOT / "app").parts[0].removesuffix(".py")


def test_imports_point_inward() -> None:
    wrong = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        unit = _unit(path)
        if unit == "__init__":
            continue
        assert unit in ALLOWED, f"app/{unit} is a new unit: say in ALLOWED what it may import"
        for line, module in _runtime_imports(path):
            parts = module.split(".")
            if parts[0] != "app" or len(parts) < 2 or parts[1] == unit:
                continue
            if parts[1] not in ALLOWED[unit]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not wrong, "\n".join(wrong)


def test_the_units_import_graph_has_no_cycle() -> None:
    # ALLOWED is the graph's upper bound; test_imports_point_inward keeps the code inside it
    done: set[str] = set()

    def visit(unit: str, path: tuple[str, ...]) -> None:
        assert unit not in path, " → ".join((*path, unit))
        if unit not in done:
            for dep in ALLOWED[unit]:
                visit(dep, (*path, unit))
            done.add(unit)

    for unit in ALLOWED:
        visit(unit, ())


@pytest.mark.parametrize("path", sorted((ROOT / "plugins").glob("*.py")), ids=lambda p: p.name)
def test_plugins_use_only_the_sdk(path: Path) -> None:
    outside = [
        f"{path.name}:{line} imports {module}"
        for line, module in _runtime_imports(path)
        if module.split(".")[0] == "app" and module not in SDK_MODULES
    ]
    assert not outside, "\n".join(outside)


def _sources() -> list[Path]:
    """The modules of ``app`` and of ``plugins``."""
    return sorted([*(ROOT / "app").rglob("*.py"), *(ROOT / "plugins").glob("*.py")])


def _first_sentence(doc: str) -> str:
    """A docstring's first sentence, its whitespace made single spaces: up to the first ``.``, ``!`` or ``?``
    that ends a sentence (not the one of "e.g." or "i.e."); "" when its first paragraph is a title (it ends
    without punctuation) or it has no sentence at all."""
    paragraph = " ".join(doc.split("\n\n")[0].split())
    if not paragraph or paragraph[-1] not in ".!?:,;)":
        return ""
    text = " ".join(doc.split())
    end = re.search(r"(?<!e\.g)(?<!i\.e)[.!?](?=\s|$)", text)
    return "" if end is None else text[: end.end()]


def test_every_module_says_what_it_is_for() -> None:
    unsaid = []
    for path in _sources():
        sentence = _first_sentence(ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "")
        if len(re.findall(r"\w+", sentence)) < MIN_PURPOSE_WORDS:
            unsaid.append(f"{path.relative_to(ROOT)}: {sentence or 'no docstring, or a title alone'}")
    assert not unsaid, "a module's docstring opens with a sentence saying what it does:\n" + "\n".join(unsaid)


def _function_lengths(path: Path) -> Iterator[tuple[str, int]]:
    """``(name, lines)`` of every function and method of ``path``, its decorators counted."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            yield node.name, (node.end_lineno or node.lineno) - first + 1


def test_no_function_in_app_or_plugins_is_over_80_lines() -> None:
    long = {
        where: lines
        for path in _sources()
        for name, lines in _function_lengths(path)
        if lines > MAX_FUNCTION_LINES and (where := f"{path.relative_to(ROOT)}:{name}") not in LONG_FUNCTIONS
    }
    assert not long, f"split into named steps (or say why not in LONG_FUNCTIONS): {long}"
    lengths = {
        f"{path.relative_to(ROOT)}:{name}": lines for path in _sources() for name, lines in _function_lengths(path)
    }
    stale = [where for where in LONG_FUNCTIONS if lengths.get(where, 0) <= MAX_FUNCTION_LINES]
    assert not stale, f"no longer over {MAX_FUNCTION_LINES} lines (or gone): drop them from LONG_FUNCTIONS: {stale}"


def _module_name(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def _module_level_imports(path: Path, modules: set[str]) -> set[str]:
    """The ``app`` modules ``path`` names at its top level (in ``if``/``try`` blocks too, and under
    ``if TYPE_CHECKING:``: a module named for annotations is a dependency of its reader as well); not
    imports inside functions, which are deferred on purpose (``app.core.model``'s SDK v2 names)."""
    found: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                    visit(block)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    found.add(sub if sub in modules else node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return {m for m in found if m in modules}


def test_no_module_of_app_imports_itself_round_a_circle() -> None:
    # finer than the units' graph: within a unit too (the decisions service once imported the storing
    # module that imported it back); a circle found is printed as its modules in order
    paths = {_module_name(p): p for p in (ROOT / "app").rglob("*.py")}
    graph = {m: _module_level_imports(p, set(paths)) - {m} for m, p in paths.items()}
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " → ".join((*path[path.index(module) :], module))
        if module not in done:
            for dep in sorted(graph[module]):
                visit(dep, (*path, module))
            done.add(module)

    for module in sorted(graph):
        visit(module, ())


#: where app/'s code may name a built-in option, each with its reason (docstrings and comments always may)
NAMES_AN_OPTION: dict[str, str] = {
    "app/domain/procurement/prices_controller.py": "the OpenAPI example of a private price row (an example, no rule)",
}


def _code_strings(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of every string constant of ``path`` that is not a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def test_app_names_no_built_in_option() -> None:
    """The service knows options from the loaded plugins alone: a rule bound to a built-in option's key
    belongs on its plugin's ``OptionSpec`` (``billings``, ``price_formats``, ``price_plans``, …)."""
    keys = {p.stem for p in (ROOT / "plugins").glob("*.py") if not p.name.startswith("_")}
    assert {"rented_gpu_instances", "ai_compute_platform", "self_built_cluster"} <= keys
    named = [
        f"{path.relative_to(ROOT)}:{line}: {text[:60]!r}"
        for path in sorted((ROOT / "app").rglob("*.py"))
        if str(path.relative_to(ROOT)) not in NAMES_AN_OPTION
        for line, text in _code_strings(path)
        if any(re.search(rf"\b{key}\b", text) for key in keys)
    ]
    assert not named, "app/ names a built-in option:\n" + "\n".join(named)
