"""docs/plugins.md's reference is the SDK's code: the block between its markers is what
``tests/sdk_reference.render()`` writes from ``app.sdk``, the extension points and the kernels' required
assumptions, and every extension point it lists exists on its class with words of its own (a docstring
for a method, a ``#:`` comment for an attribute).

``SDK_REFERENCE_UPDATE=1 .venv/bin/pytest -q tests/test_sdk_reference.py`` rewrites the block. The
guide's quotes of what the service says when it refuses a plugin at start, or warns of a deprecated
hook, are the service's words too.
"""

from __future__ import annotations

import difflib
import inspect
import logging
import os

import pluggy
import pytest
import sdk_reference
from sdk_reference import DOCS, END, OWNERS, START

import app.sdk
from app.core.declarations import OptionSpec
from app.core.extensions import EXTENSION_POINTS, Extension
from app.core.offer_kernel import OfferKernel
from app.core.option import OptionPlugin
from app.host import hookspecs
from app.host.compatibility import check_sdk_ranges
from app.host.manager import PluginError
from app.sdk import hookimpl

REGENERATE = "SDK_REFERENCE_UPDATE=1 .venv/bin/pytest -q tests/test_sdk_reference.py"


def test_the_docs_reference_is_the_sdks_code() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert text.count(START) == 1 and text.count(END) == 1, f"docs/plugins.md needs one {START} and one {END}"
    wanted = "\n" + sdk_reference.render()
    if os.environ.get("SDK_REFERENCE_UPDATE") == "1":
        text = sdk_reference.with_block(text, sdk_reference.render())
        DOCS.write_text(text, encoding="utf-8")
    found = sdk_reference.block(text)
    if found != wanted:
        diff = difflib.unified_diff(found.splitlines(), wanted.splitlines(), "docs", "code", lineterm="", n=1)
        shown = "\n".join(list(diff)[:60])
        pytest.fail(f"docs/plugins.md's SDK reference differs from the code; regenerate it: {REGENERATE}\n{shown}")


def test_the_reference_is_the_same_each_time() -> None:
    assert sdk_reference.render() == sdk_reference.render()


def test_the_reference_names_every_export_once() -> None:
    reference = sdk_reference.render()
    for name in app.sdk.__all__:
        obj = getattr(app.sdk, name)
        shown = f"- `{name} = " if sdk_reference.kind(obj) == "constant" else f"- `{name}("
        assert reference.count(shown) == 1, f"{name} is not listed once in the reference"


@pytest.mark.parametrize("point", EXTENSION_POINTS, ids=lambda p: f"{p.owner}.{p.name}")
def test_every_extension_point_is_on_its_class_with_its_own_words(point: Extension) -> None:
    """A method has a docstring; an attribute (with or without a default) a ``#:`` comment above it in the
    class that declares it."""
    cls = OWNERS[point.owner]
    found = inspect.getattr_static(cls, point.name, None)
    declaring = next(
        (k for k in cls.__mro__ if point.name in vars(k) or point.name in vars(k).get("__annotations__", {})), None
    )
    assert declaring is not None, f"{point.owner}.{point.name} is in EXTENSION_POINTS but not on the class"
    comment = sdk_reference.doc_comment(inspect.getsource(declaring), point.name)
    if isinstance(found, staticmethod | classmethod):
        found = found.__func__
    if inspect.isfunction(found) and comment is None:
        assert sdk_reference.own_doc(found), f"{point.owner}.{point.name} has no docstring"
    else:
        assert comment, f"{point.owner}.{point.name} has no #: comment in {declaring.__name__}"


def test_the_roles_of_the_extension_points_are_titled() -> None:
    assert {p.role for p in EXTENSION_POINTS} <= set(sdk_reference.ROLES)
    assert {p.owner for p in EXTENSION_POINTS} == set(OWNERS)


# ---- the messages the guide quotes ------------------------------------------------------------------------


class _Quoted(OptionPlugin):
    spec = OptionSpec(key="quoted", name="quoted", description="an option whose refusals the docs quote", version="1")
    kernel = OfferKernel


def _refusal(declared: str | None) -> str:
    """What the service says, starting, of a plugin named ``hpc_allocation`` that declares ``declared``."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.register(type("Quoted", (_Quoted,), {} if declared is None else {"sdk": declared})(), name="hpc_allocation")
    with pytest.raises(PluginError) as refused:
        check_sdk_ranges(pm)
    return str(refused.value)


@pytest.mark.parametrize("declared", [">=5,<6", None, "four"])
def test_the_docs_quote_the_start_up_refusals(declared: str | None) -> None:
    said = _refusal(declared)
    assert f"\n  {said}\n" in DOCS.read_text(encoding="utf-8"), f"docs/plugins.md does not quote: {said}"


def test_the_docs_quote_the_deprecation_warning(caplog: pytest.LogCaptureFixture) -> None:
    class Assessing(_Quoted):
        sdk = ">=4,<5"

        @hookimpl
        def compute_advisor_assess(self, option: str) -> None:
            return None

    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.register(Assessing(), name="<name>")
    with caplog.at_level(logging.WARNING, logger="compute_advisor.plugins"):
        check_sdk_ranges(pm)
    [said] = [r.getMessage() for r in caplog.records]
    assert f"\n{said}\n" in DOCS.read_text(encoding="utf-8"), f"docs/plugins.md does not quote: {said}"
