"""The shape of the code: imports point inward, plugins use the SDK only, no file grows past 400 lines.

Units are ``app``'s top-level packages and modules (``core``, ``sdk``, ``engine``, ``host``, ``kb``, ``web``,
``openapi``, ``i18n``, ``domain``, ``cli``, ``settings``…). Imports under ``if TYPE_CHECKING:`` are for
annotations and do not count.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: what each unit may import of ``app`` (besides itself); ``settings`` is a leaf every outer unit may read
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "sdk": {"core", "kb"},  # the plugins' front door: names of the core; kb: app.sdk.testing reads seed files
    "settings": set(),
    "host": {"core", "sdk", "i18n"},  # i18n: the plugins' words join its catalogs; sdk: its version
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
MAX_LINES = 400


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


def test_no_file_in_app_or_plugins_is_over_400_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in [*(ROOT / "app").rglob("*.py"), *(ROOT / "plugins").glob("*.py")]
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, long


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
