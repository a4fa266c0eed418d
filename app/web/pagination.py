"""Pagination of list endpoints: ``limit`` and ``offset`` query parameters, declared once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, TypeVar

from advanced_alchemy.filters import LimitOffset
from litestar.params import Parameter

T = TypeVar("T")
MAX_LIMIT = 500
DEFAULT_LIMIT = 100

Limit = Annotated[int, Parameter(ge=1, le=MAX_LIMIT, description="Items per page.")]
Offset = Annotated[int, Parameter(ge=0, le=1_000_000, description="Items to skip.")]


def window(limit: int, offset: int) -> LimitOffset:
    """The page a request asks for, as advanced-alchemy's filter (repositories apply it in SQL)."""
    return LimitOffset(limit=limit, offset=offset)


def page(items: Sequence[T], window: LimitOffset) -> list[T]:
    """The page of an in-memory list (catalog reads come from the knowledge snapshot, not SQL)."""
    return list(items[window.offset : window.offset + window.limit])
