"""The route declarations the features share: what every handler of a kind declares (the scope its key needs,
what a call costs, the body it accepts, the problems it may answer), said once.

Each returns Litestar's own decorator, so a handler still names its path, ``operation_id`` and summary itself
and the OpenAPI document is what the spelled-out decorator gave.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from advanced_alchemy.filters import LimitOffset
from litestar import Request, get, post
from litestar.di import NamedDependency, Provide
from sqlalchemy.ext.asyncio import AsyncSession

from app.web.bodies import SINGLE_BODY_BYTES
from app.web.pagination import DEFAULT_LIMIT, Limit, Offset, window
from app.web.problems import BODY_PROBLEMS, COMMON_PROBLEMS

#: a handler's request, whatever its user, auth and state
AnyRequest = Request[Any, Any, Any]
#: the request's database session (advanced-alchemy's plugin provides it)
DbSession = NamedDependency[AsyncSession]


def reading(path: str, *, scope: str, **kwargs: Any) -> get:
    """A GET needing ``scope`` that may answer the common problems (or the ``responses`` given)."""
    kwargs.setdefault("responses", COMMON_PROBLEMS)
    return get(path, opt={"scope": scope}, **kwargs)


def computation(path: str, *, cost: Callable[[Any], int], max_body: int = SINGLE_BODY_BYTES, **kwargs: Any) -> post:
    """A POST that computes an answer from its body and stores nothing: the ``decisions:run`` scope, what a
    call costs against the key's budget, a body of at most ``max_body`` bytes, a 200 and the body's problems."""
    opt = {"scope": "decisions:run", "cost": cost}
    return post(path, opt=opt, request_max_body_size=max_body, status_code=200, responses={**BODY_PROBLEMS}, **kwargs)


def paging(limit: Limit = DEFAULT_LIMIT, offset: Offset = 0) -> LimitOffset:
    """The page a list request asks for (its ``limit`` and ``offset`` query parameters), as a dependency."""
    return window(limit, offset)


#: a list handler's ``page`` (after its filters), provided by ``PAGING`` in its controller's ``dependencies``
Page = NamedDependency[LimitOffset]
PAGING = {"page": Provide(paging, sync_to_thread=False)}
