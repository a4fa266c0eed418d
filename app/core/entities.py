"""How a knowledge entity is declared once: its record (``app.core.records``) types each field, an
enumerated one with its vocabulary (``app.core.vocab``), and states in its annotation a field's bounds
(``Annotated[float, Bounds(gt=0)]``), how a Range is held as columns (``Ends``), or that a field is no
column (``Computed``).

The other shapes derive from the record: the catalog's read schema is the record, or the record with its
Ranges spelled out as their ends (``app.domain.catalog.schemas``); the seed record validates its columns
(``stored``) with their bounds (``app.kb.seeds``); and the table (``app.kb.models``) is checked against
``stored`` by ``tests/test_declarations.py``. The markers are plain data: msgspec, Litestar and the
OpenAPI document pass over them, so a read schema shows the types and never a bound.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import typing
from dataclasses import dataclass
from types import NoneType, UnionType
from typing import Annotated, Any, get_args, get_origin

import msgspec

M = typing.TypeVar("M")

if typing.TYPE_CHECKING:
    from _typeshed import DataclassInstance

#: a key of the knowledge base (GPU models, servers, items): 1 to 40 lower-case letters, digits or underscores
KEY_40 = r"^[a-z0-9_]{1,40}$"
#: a longer key (providers, rules, assumptions)
KEY_60 = r"^[a-z0-9_]{1,60}$"
#: a key, or ``*`` for a row tied to none
KEY_OR_ANY = r"^(\*|[a-z0-9_]{1,40})$"
#: an ISO 3166-1 alpha-2 country code
COUNTRY = r"^[A-Z]{2}$"


@dataclass(frozen=True, slots=True)
class Bounds:
    """What a field's value may be beyond its type: a number's limits (``gt``, ``ge``, ``le``) and the
    decimals it is given to (the table's scale), a text's or a list's length, a text's pattern."""

    gt: float | None = None
    ge: float | None = None
    le: float | None = None
    decimal_places: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None

    def stated(self) -> dict[str, Any]:
        """The bounds this states, by name (the keywords pydantic's ``Field`` takes)."""
        return {f.name: v for f in dataclasses.fields(self) if (v := getattr(self, f.name)) is not None}


@dataclass(frozen=True, slots=True)
class Ends:
    """How a ``Range`` field is held as columns: ``<prefix>low`` and ``<prefix>high`` with their bounds, and
    where ``mode`` is given, ``<prefix>expected``: the Range's mode (the source's most likely figure), which
    a row may leave out. A read shows the same columns, ``expected`` being the Range's mean."""

    low: Bounds
    high: Bounds
    mode: Bounds | None = None
    prefix: str = ""

    def columns(self) -> tuple[tuple[str, Bounds], ...]:
        """The columns of the ends, in their order, each with its bounds."""
        named = (("low", self.low), ("expected", self.mode), ("high", self.high))
        return tuple((self.prefix + end, bounds) for end, bounds in named if bounds is not None)


@dataclass(frozen=True, slots=True)
class Computed:
    """A field of a record that no column holds: made from the others when the row is read (``why``)."""

    why: str


@dataclass(frozen=True, slots=True)
class Declared:
    """One field of a record: its type (without its markers), its bounds, how it is held if it is a Range
    (``ends``), whether no column holds it (``computed``), and its default if it has one."""

    name: str
    type: Any
    bounds: Bounds
    default: Any = msgspec.NODEFAULT
    ends: Ends | None = None
    computed: bool = False

    @property
    def nullable(self) -> bool:
        return get_origin(self.type) in (typing.Union, UnionType) and NoneType in get_args(self.type)


def _marker(meta: list[Any], kind: type[M]) -> M | None:
    return next((m for m in meta if isinstance(m, kind)), None)


def unbounded(tp: Any) -> tuple[Any, Bounds]:
    """``tp`` without its ``Annotated`` bounds (at the top or on a member of a union), and those bounds."""
    if get_origin(tp) is Annotated:
        inner, *meta = get_args(tp)
        return unbounded(inner)[0], _marker(meta, Bounds) or Bounds()
    if get_origin(tp) in (typing.Union, UnionType):
        members = [unbounded(a) for a in get_args(tp)]
        bounds = next((b for _, b in members if b != Bounds()), Bounds())
        if bounds == Bounds():
            return tp, bounds
        return functools.reduce(operator.or_, (m for m, _ in members)), bounds
    return tp, Bounds()


@functools.cache
def declared(record: type) -> tuple[Declared, ...]:
    """The fields of a record (a msgspec Struct or a dataclass), in order, each with its bounds (read once
    per record)."""
    hints = typing.get_type_hints(record, include_extras=True)
    if isinstance(record, type) and issubclass(record, msgspec.Struct):
        defaults = {f.name: f.default for f in msgspec.structs.fields(record)}
    else:
        defaults = {f.name: f.default for f in dataclasses.fields(typing.cast("type[DataclassInstance]", record))}
    found = []
    for name, default in defaults.items():
        tp, bounds = unbounded(hints[name])
        meta = list(get_args(hints[name])[1:]) if get_origin(hints[name]) is Annotated else []
        default = msgspec.NODEFAULT if default is dataclasses.MISSING else default
        found.append(Declared(name, tp, bounds, default, _marker(meta, Ends), _marker(meta, Computed) is not None))
    return tuple(found)


def stored(record: type) -> tuple[Declared, ...]:
    """The columns a row of ``record`` has, in order: its fields, a Range as its ends' columns (``Ends``; a
    number each, null where the Range may be, and the mode's where a row leaves it out), a ``Computed``
    field left out."""
    found: list[Declared] = []
    for f in declared(record):
        if f.ends is None:
            found += [] if f.computed else [f]
            continue
        for name, bounds in f.ends.columns():
            may_be_null = f.nullable or name == f.ends.prefix + "expected"
            found.append(Declared(name, float | None if may_be_null else float, bounds))
    return tuple(found)
