"""``OPTIONS`` answers that name every method of their path.

Litestar (2.25) makes a path's automatic ``OPTIONS`` handler when the path's first handler is registered, and
keeps it when the path's other handlers join (``GET`` and ``POST /v1/watches``): the handler answers ``Allow``
from the route it was made for, which knew only that first handler's methods. ``allow_every_method`` points
each automatic handler at the route that serves it, so ``Allow`` names the methods the path answers and the
OpenAPI document declares (schemathesis checks it: ``tests/test_schemathesis.py``).
"""

from __future__ import annotations

from litestar import Litestar
from litestar.routes import HTTPRoute

__all__ = ["allow_every_method"]


def allow_every_method(app: Litestar) -> int:
    """Re-point the automatic ``OPTIONS`` handlers at their routes; returns how many were re-pointed."""
    fixed = 0
    for route in app.routes:
        if not isinstance(route, HTTPRoute) or "OPTIONS" not in route.route_handler_map:
            continue
        handler = route.route_handler_map["OPTIONS"][0]
        fn = getattr(handler.fn, "__wrapped__", handler.fn)
        if handler.handler_name != "options_handler" or not fn.__closure__:
            continue  # an OPTIONS handler of the application's own
        for cell in fn.__closure__:
            made_for = cell.cell_contents
            if isinstance(made_for, HTTPRoute) and made_for is not route:
                cell.cell_contents = route
                fixed += 1
    return fixed
