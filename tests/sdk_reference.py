"""The reference section of docs/plugins.md, written from the SDK's code alone (``render``).

What it states, in a fixed order: ``app.sdk.__version__``; every name of ``app.sdk.__all__`` with its
kind, signature (annotations as written) and the first paragraph of its docstring (a constant: its value
and its ``#:`` comment); every extension point of ``app.core.extensions.EXTENSION_POINTS`` by class and
role, with its default, signature and the first paragraph of its docstring or ``#:`` comment; the
assumptions ``Kernel`` and ``OfferKernel`` require and those each built-in plugin's kernel adds.

tests/test_sdk_reference.py fails when the docs' block differs from ``render()``;
``SDK_REFERENCE_UPDATE=1 .venv/bin/pytest -q tests/test_sdk_reference.py`` rewrites it, and
``.venv/bin/python tests/sdk_reference.py`` prints it.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
import re
import textwrap
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ForwardRef

import app.sdk
import plugins
from app.core.extensions import EXTENSION_POINTS, Extension
from app.core.kernel import Kernel
from app.core.offer_kernel import OfferKernel
from app.core.option import OptionPlugin

DOCS = Path(__file__).resolve().parent.parent / "docs" / "plugins.md"
START, END = "<!-- sdk-reference:start -->", "<!-- sdk-reference:end -->"
#: the classes that own extension points, in the order the reference shows them
OWNERS: dict[str, type] = {"OptionPlugin": OptionPlugin, "Kernel": Kernel, "OfferKernel": OfferKernel}
#: each role of ``app.core.extensions.Role`` as the reference titles it
ROLES = {
    "declare": "Declare: class attributes the plugin sets",
    "write": "Write: methods the plugin writes",
    "replace": "Replace: methods with a default the plugin may replace (calling `super()` where it adds to it)",
    "call": "Call: methods the plugin calls",
}
#: how a name's kind reads
KINDS = ("class", "function", "constant")


# ---- the block in the docs ----------------------------------------------------------------------------


def block(text: str) -> str:
    """The text between the reference's markers in ``text`` (the docs)."""
    start = text.index(START) + len(START)
    return text[start : text.index(END, start)]


def with_block(text: str, reference: str) -> str:
    """``text`` with the reference's block replaced by ``reference``."""
    start = text.index(START) + len(START)
    return text[:start] + "\n" + reference + text[text.index(END, start) :]


# ---- the whole reference ------------------------------------------------------------------------------


def render() -> str:
    """The reference section's block: Markdown, the same for the same code."""
    parts = [
        f"SDK version `{app.sdk.__version__}` (`app.sdk.__version__`): {_comment_of_module('app.sdk', '__version__')}",
        *_names(),
        *_extension_points(),
        *_required_assumptions(),
    ]
    return "\n\n".join(parts) + "\n"


# ---- the front door's names ---------------------------------------------------------------------------


def kind(obj: Any) -> str:
    """A name's kind: ``class``, ``function`` (any other callable, such as pluggy's marker) or ``constant``."""
    if inspect.isclass(obj):
        return "class"
    return "function" if callable(obj) else "constant"


def _names() -> Iterator[str]:
    exported = {name: getattr(app.sdk, name) for name in app.sdk.__all__}
    titles = {"class": "### Classes", "function": "### Functions", "constant": "### Constants"}
    for which in KINDS:
        names = sorted(n for n, obj in exported.items() if kind(obj) == which)
        yield titles[which] + "\n\n" + "\n".join(_name(n, exported[n]) for n in names)


def _name(name: str, obj: Any) -> str:
    if inspect.isclass(obj):
        return _item(f"`{name}{_class_signature(obj)}`{_bases(obj)}", _doc(obj))
    if callable(obj):
        return _item(f"`{name}{_signature(obj)}`", _doc(obj))
    return _item(f"`{name} = {_value(obj)}`", _comment_of_module("app.sdk", name))


def _bases(cls: type) -> str:
    """The bases a reader knows: the front door's own names and Python's."""
    known = [b.__name__ for b in cls.__bases__ if b.__name__ in app.sdk.__all__ or b.__module__ == "builtins"]
    known = [b for b in known if b != "object"]
    return f", a `{'`, `'.join(known)}`" if known else ""


def _class_signature(cls: type) -> str:
    """How the class is built: its constructor's parameters (none shown for an exception)."""
    try:
        signature = inspect.signature(cls)
    except ValueError:  # a class built on a C type (an exception): its message
        return "(message)" if issubclass(cls, BaseException) else "(…)"
    written = [vars(cls)[n] for n in ("__init__", "__new__") if isinstance(vars(cls).get(n), types.FunctionType)]
    defaults = {**_dataclass_defaults(cls), **(_written_defaults(written[0]) if written else {})}
    return _parameters(signature, defaults, returns=False)


def _signature(func: Any, *, bound: bool = False) -> str:
    """A function's parameters and return, annotations as written; ``bound``: without its first one."""
    signature = inspect.signature(func)
    if bound:
        signature = signature.replace(parameters=list(signature.parameters.values())[1:])
    target = func if isinstance(func, types.FunctionType) else type(func).__call__  # a callable object's call
    return _parameters(signature, _written_defaults(target), returns=True)


def _parameters(signature: inspect.Signature, defaults: dict[str, str], *, returns: bool) -> str:
    parts: list[str] = []
    starred = False
    params = list(signature.parameters.values())
    for i, p in enumerate(params):
        if p.kind is p.KEYWORD_ONLY and not starred:
            parts.append("*")
        starred = starred or p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)
        stars = "*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else ""
        text = stars + p.name
        if p.annotation is not p.empty:
            text += f": {_annotation(p.annotation)}"
        if p.default is not p.empty:
            shown = defaults.get(p.name, _value(p.default))
            text += f" = {shown}" if p.annotation is not p.empty else f"={shown}"
        parts.append(text)
        following = params[i + 1] if i + 1 < len(params) else None
        if p.kind is p.POSITIONAL_ONLY and (following is None or following.kind is not p.POSITIONAL_ONLY):
            parts.append("/")
    result = f"({', '.join(parts)})"
    if returns and signature.return_annotation is not signature.empty:
        result += f" -> {_annotation(signature.return_annotation)}"
    return result


def _annotation(annotation: Any) -> str:
    """An annotation as written (a string under ``from __future__ import annotations``)."""
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, ForwardRef):
        return annotation.__forward_arg__
    return inspect.formatannotation(annotation)


def _value(value: Any) -> str:
    """A default or a constant as Python writes it; a set's members sorted (its own order varies by run)."""
    if value is Ellipsis:
        return "..."
    if isinstance(value, set | frozenset) and value:
        members = ", ".join(sorted(map(repr, value)))
        return f"{{{members}}}" if isinstance(value, set) else f"frozenset({{{members}}})"
    return repr(value)


def _written_defaults(func: Callable[..., Any]) -> dict[str, str]:
    """The defaults of ``func``'s parameters as its source writes them (``ZERO``, ``...``), by name;
    none where its source cannot be read."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return {}
    node = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)), None)
    if node is None:
        return {}
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    return {a.arg: ast.unparse(d) for a, d in pairs}


def _dataclass_defaults(cls: type) -> dict[str, str]:
    """A dataclass's defaults made by a factory, shown as what the factory makes (``()``, ``{}``)."""
    if not dataclasses.is_dataclass(cls):
        return {}
    return {
        f.name: repr(f.default_factory())
        for f in dataclasses.fields(cls)
        if f.default_factory is not dataclasses.MISSING
    }


# ---- words: docstrings and ``#:`` comments -------------------------------------------------------------


def first_paragraph(text: str | None) -> str:
    """The first paragraph of a docstring or comment on one line, its reST roles and double backticks as
    Markdown code."""
    if not text:
        return ""
    paragraph = text.strip().split("\n\n", 1)[0]
    line = " ".join(paragraph.split())
    line = re.sub(r":(?:class|func|meth|attr|mod|data):`", "`", line)
    return line.replace("``", "`")


def own_doc(obj: Any) -> str | None:
    """The docstring ``obj`` has itself: not one inherited, nor the one ``dataclasses`` writes from the
    fields of a class without its own."""
    doc = getattr(obj, "__doc__", None)
    if not isinstance(doc, str) or not doc.strip():
        return None
    if inspect.isclass(obj) and dataclasses.is_dataclass(obj) and doc.startswith(f"{obj.__name__}("):
        return None
    return inspect.cleandoc(doc)


def _doc(obj: Any) -> str:
    return first_paragraph(own_doc(obj))


def doc_comment(source: str, name: str) -> str | None:
    """The ``#:`` comment above the assignment of ``name`` in ``source`` (a module's or a class's, at its
    top level): its lines from the first that starts ``#:``, without the marks; None where there is none."""
    source = textwrap.dedent(source)
    tree = ast.parse(source)
    body = tree.body
    if len(body) == 1 and isinstance(body[0], ast.ClassDef):
        body = body[0].body
    lines = source.splitlines()
    for node in body:
        if name not in _targets(node):
            continue
        above: list[str] = []
        row = node.lineno - 2
        while row >= 0 and lines[row].strip().startswith("#"):
            above.insert(0, lines[row].strip())
            row -= 1
        marked = next((i for i, line in enumerate(above) if line.startswith("#:")), None)
        if marked is None:
            return None
        return "\n".join(re.sub(r"^#:? ?", "", line) for line in above[marked:])
    return None


def _targets(node: ast.stmt) -> set[str]:
    """The names a top-level statement assigns (``a = …``, ``a: T = …``, ``a: T``, ``a, b = …``)."""
    targets: list[ast.expr]
    if isinstance(node, ast.AnnAssign):
        targets = [node.target]
    elif isinstance(node, ast.Assign):
        targets = list(node.targets)
    else:
        return set()
    found: set[str] = set()
    for target in targets:
        elements = target.elts if isinstance(target, ast.Tuple) else [target]
        found.update(e.id for e in elements if isinstance(e, ast.Name))
    return found


def _comment_of_module(module: str, name: str) -> str:
    """The ``#:`` comment of ``name`` where it is assigned: in ``module``, or in the module it is imported
    from there (followed as far as it goes)."""
    loaded = importlib.import_module(module)
    source = inspect.getsource(loaded)
    found = doc_comment(source, name)
    if found is not None:
        return first_paragraph(found)
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and node.module and any(a.name == name for a in node.names):
            return _comment_of_module(node.module, name)
    return ""


# ---- the extension points -----------------------------------------------------------------------------


def _extension_points() -> Iterator[str]:
    yield "### Extension points"
    for owner, cls in OWNERS.items():
        points = [p for p in EXTENSION_POINTS if p.owner == owner]
        parts = [f"#### `{owner}`"]
        for role, title in ROLES.items():
            entries = [point_entry(cls, p) for p in points if p.role == role]
            if entries:
                parts.append(f"{title}:\n\n" + "\n".join(entries))
        replaced = _replaced_by(cls)
        if replaced:
            parts.append(
                f"`{owner}`'s own defaults of its bases' points:\n\n"
                + "\n".join(point_entry(cls, p, defaults_only=True) for p in replaced)
            )
        yield "\n\n".join(parts)


def _replaced_by(cls: type) -> list[Extension]:
    """The extension points of ``cls``'s bases that ``cls`` (or a mixin of its own) defines again."""
    own = [k for k in cls.__mro__ if k not in OWNERS.values() or k is cls]
    own = [k for k in own if k is not object]
    bases = {name for name, klass in OWNERS.items() if klass is not cls and issubclass(cls, klass)}
    return [p for p in EXTENSION_POINTS if p.owner in bases and any(p.name in vars(k) for k in own)]


def point_entry(cls: type, point: Extension, *, defaults_only: bool = False) -> str:
    """One extension point of ``cls``: its signature or annotation and default, whether it is required, and
    its first paragraph (the ``#:`` comment where the class assigns it, else the docstring)."""
    found = inspect.getattr_static(cls, point.name, None)
    comment = _class_comment(cls, point.name)
    required = " (required)" if point.required and not defaults_only else ""
    if found is None or not _is_method(found):
        annotation = _class_annotation(cls, point.name)
        head = f"`{point.name}{f': {annotation}' if annotation else ''}`"
        default = "—" if found is None else f"`{_value(found)}`"
        return _item(f"{head}, default {default}{required}", first_paragraph(comment))
    func, bound, marker = _function_of(found)
    head = f"`{point.name}{_signature(func, bound=bound)}`{marker}{required}"
    if _raises_not_implemented(func):
        head += f", no default on `{_definer(cls, point.name).__name__}` (it raises `NotImplementedError`)"
    return _item(head, first_paragraph(comment) if comment else _doc(func))


def _is_method(found: Any) -> bool:
    return isinstance(found, staticmethod | classmethod | types.FunctionType)


def _function_of(found: Any) -> tuple[Any, bool, str]:
    """The function behind a class attribute, whether an instance's call binds its first parameter, and
    how the reference marks it."""
    if isinstance(found, staticmethod):
        return found.__func__, False, " (static)"
    if isinstance(found, classmethod):
        return found.__func__, True, " (class method)"
    return found, True, ""


def _definer(cls: type, name: str) -> type:
    return next(k for k in cls.__mro__ if name in vars(k) or name in vars(k).get("__annotations__", {}))


def _class_comment(cls: type, name: str) -> str | None:
    return doc_comment(inspect.getsource(_definer(cls, name)), name)


def _class_annotation(cls: type, name: str) -> str:
    annotation = vars(_definer(cls, name)).get("__annotations__", {}).get(name)
    return "" if annotation is None else _annotation(annotation)


def _raises_not_implemented(func: Any) -> bool:
    """Whether the function's body (past its docstring) is ``raise NotImplementedError``."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return False
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        return False
    body = node.body[1:] if ast.get_docstring(node) is not None else node.body
    return (
        len(body) == 1
        and isinstance(body[0], ast.Raise)
        and isinstance(body[0].exc, ast.Name | ast.Call)
        and "NotImplementedError" in ast.unparse(body[0].exc)
    )


# ---- required assumptions -----------------------------------------------------------------------------


def builtin_kernels() -> list[tuple[str, type[Kernel]]]:
    """Each built-in plugin's module and its kernel class, by module name."""
    found = []
    for info in sorted(pkgutil.iter_modules(plugins.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"plugins.{info.name}")
        plugin = getattr(module, "plugin", None)
        if isinstance(plugin, OptionPlugin):
            found.append((module.__name__, plugin.kernel))
    return found


def _required_assumptions() -> Iterator[str]:
    base = [
        _item(f"`{name}.required_assumptions()`", _keys(cls.required_assumptions()))
        for name, cls in OWNERS.items()
        if isinstance(cls, type) and issubclass(cls, Kernel)
    ]
    yield "### Assumptions the kernels require\n\n" + "\n".join(base)
    lines = []
    for module, kernel in builtin_kernels():
        own = vars(kernel).get("requires", ())
        comment = _class_comment(kernel, "requires") if "requires" in vars(kernel) else None
        said = _keys(own) + (f". {_sentence(first_paragraph(comment))}" if comment else "")
        lines.append(_item(f"`{module}`: `{kernel.__name__}.requires`", said))
    yield "The built-in plugins' kernels (their own `requires`, beyond their bases'):\n\n" + "\n".join(lines)


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _keys(keys: tuple[str, ...]) -> str:
    return ", ".join(f"`{k}`" for k in keys) if keys else "none"


def _item(head: str, text: str) -> str:
    """A list item: the name's line, then its words on the next line (one paragraph in Markdown)."""
    return f"- {head}" + (f"\n  — {text}" if text else "")


if __name__ == "__main__":
    print(render(), end="")
