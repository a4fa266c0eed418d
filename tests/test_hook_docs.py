"""Meta-tests of the plugin SDK, as datasette keeps its own: every hook of ``app/host/hookspecs.py`` has a
test that calls it (``test_hook_<name>``) and a section of docs/plugins.md that shows its signature,
and every name of the SDK's front door (``app.sdk.__all__``) is in the docs' table of what it is for
(their signatures and words are the generated reference: tests/test_sdk_reference.py). Adding a hook or
an export without them fails here."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import app.sdk
from app.host import hookspecs

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "plugins.md"
HOOKS = sorted(
    name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(fn, f"{hookspecs.PROJECT}_spec")
)


def _section(title: str) -> str:
    """The text of the docs' ``## <title>`` section, up to the next one of its level."""
    text = DOCS.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _hook_tests() -> dict[str, set[str]]:
    """Every ``test_hook_<name>`` function of the tests, with the attributes it calls (``x.<attr>(…)``)."""
    found: dict[str, set[str]] = {}
    for path in sorted(ROOT.glob("tests/**/*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_hook_"):
                calls = {
                    c.func.attr for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                }
                found.setdefault(node.name.removeprefix("test_hook_"), set()).update(calls)
    return found


def test_the_hooks_are_found() -> None:
    """Every function of the hookspec module that is named as a hook carries pluggy's spec marker (so
    the tests below are not vacuous)."""
    named = sorted(n for n, _ in inspect.getmembers(hookspecs, inspect.isfunction) if n.startswith("compute_advisor_"))
    assert HOOKS and named == HOOKS


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_test_that_calls_it(hook: str) -> None:
    tests = _hook_tests()
    assert hook in tests, f"no test_hook_{hook} in tests/"
    assert hook in tests[hook], f"test_hook_{hook} does not call pm.hook.{hook}(...)"


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_section_with_its_signature(hook: str) -> None:
    documented = dict(re.findall(r"^### `(\w+)\(([^)]*)\)`$", _section("Hooks"), flags=re.M))
    assert hook in documented, f"docs/plugins.md has no '### `{hook}(…)`' section under '## Hooks'"
    spec = inspect.signature(getattr(hookspecs, hook))
    assert [a.strip() for a in documented[hook].split(",") if a.strip()] == list(spec.parameters)


def test_no_section_documents_a_hook_that_does_not_exist() -> None:
    documented = re.findall(r"^### `(\w+)\(", _section("Hooks"), flags=re.M)
    assert sorted(documented) == HOOKS


def test_every_export_of_the_sdk_is_documented() -> None:
    """The table of "The front door" names every export once, in its ``names`` column, and nothing else."""
    rows = re.findall(r"^\| [^|]+ \| (.+?) \|$", _section("The front door: `app.sdk`"), flags=re.M)
    listed = [name for row in rows for name in re.findall(r"`(\w+)`", row)]
    exported = set(app.sdk.__all__)
    assert exported - set(listed) == set(), "exported by app.sdk but not in docs/plugins.md's table"
    assert set(listed) - exported == set(), "in docs/plugins.md's table but not exported by app.sdk"
    assert len(listed) == len(set(listed)), "a name is in docs/plugins.md's table twice"
