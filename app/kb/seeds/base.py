"""The base of every seed record (a frozen pydantic model that refuses fields it does not declare), and
``seed_of``: a seed record's fields derived from its entity's record (``app.core.entities``)."""

from __future__ import annotations

import functools
import operator
import typing
from collections.abc import Callable, Mapping
from decimal import Decimal
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, create_model

from app.core.entities import Declared, stored, unbounded


class SeedRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DerivedSeed(SeedRecord):
    """A seed record whose fields ``seed_of`` derives from its entity's record."""

    if TYPE_CHECKING:
        # the fields are made with the class, from the record: the type checker reads them as Any
        def __getattr__(self, name: str) -> Any: ...


S = TypeVar("S", bound=DerivedSeed)

#: the surrogate key the database assigns: a seed names a row by its natural key
SURROGATE_KEY = "id"


def seed_type(tp: Any) -> Any:
    """A record's field type as a seed file gives it: a figure exact (``Decimal``: the table holds it as
    NUMERIC), a sequence as a list."""
    if tp is float:
        return Decimal
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:  # an element's bounds (a list's items)
        inner, bounds = unbounded(tp)
        return Annotated[seed_type(inner), Field(**bounds.stated())]
    if origin in (typing.Union, UnionType):
        return functools.reduce(operator.or_, (seed_type(a) for a in args))
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return list[seed_type(args[0])]  # type: ignore[misc]
    return tp


def _field(f: Declared, types: Mapping[str, Any], defaults: Mapping[str, Any]) -> tuple[Any, Any]:
    """One seed field of a record's field: its type, its bounds, and its default (a field that may be
    null may be left out of a seed file)."""
    stated = f.bounds.stated()
    if f.name in defaults:
        stated["default"] = defaults[f.name]
    elif f.nullable:
        stated["default"] = None
    return types.get(f.name, seed_type(f.type)), Field(**stated)


def seed_of(
    record: type, *, types: Mapping[str, Any] | None = None, defaults: Mapping[str, Any] | None = None
) -> Callable[[type[S]], type[S]]:
    """A class decorator: the seed record of ``record``, every column of it (``stored``) but the surrogate
    key, with its bounds (``seed_type``: figures exact, sequences lists). The decorated class holds the
    seed's own checks (validators); ``types`` and ``defaults`` name what a seed file says otherwise than the
    record (a default it may leave out, a value it spells another way)."""
    types, defaults = types or {}, defaults or {}

    def derive(checks: type[S]) -> type[S]:
        fields = {f.name: _field(f, types, defaults) for f in stored(record) if f.name != SURROGATE_KEY}
        return create_model(  # type: ignore[call-overload, no-any-return]
            checks.__name__, __base__=checks, __module__=checks.__module__, __doc__=checks.__doc__, **fields
        )

    return derive
