"""The baseline for ``make bench``: a bare Litestar app, no database, no validation, no middleware.

It answers with fixed bytes: real compute-advisor answers that ``bench/run.py`` captured from the real
service at start-up, one file per answer in the directory named by ``BENCH_BODY_DIR``. Each
``<name>.json`` there is answered by ``POST /bare/<name>`` (the JSON body is decoded into a plain
``dict`` and ignored) and ``GET /bare/<name>``; ``POST /bare`` and ``GET /bare`` answer
``recommendation.json`` (a stored recommendation, the default answer), which the directory must hold.
Served exactly like the service::

    BENCH_BODY_DIR=/tmp/…/bare \\
        .venv/bin/uvicorn --app-dir bench --factory bare_app:create_app --loop uvloop --http httptools
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from litestar import Litestar, Response, get, post
from litestar.handlers import HTTPRouteHandler

BODY_DIR_ENV = "BENCH_BODY_DIR"
#: the answer of ``/bare`` itself
DEFAULT = "recommendation"
JSON = "application/json"


def routes(path: str, body: bytes) -> list[HTTPRouteHandler]:
    """``POST path`` and ``GET path``, both answering ``body``: one fixed route each, as cheap as a route gets."""

    @post(path, status_code=200, name=f"post {path}")
    async def bare_post(data: dict[str, Any]) -> Response[bytes]:
        return Response(body, media_type=JSON)

    @get(path, name=f"get {path}")
    async def bare_get() -> Response[bytes]:
        return Response(body, media_type=JSON)

    return [bare_post, bare_get]


def create_app() -> Litestar:
    name = os.environ.get(BODY_DIR_ENV)
    if not name:
        raise RuntimeError(f"{BODY_DIR_ENV} must name a directory of captured answers (bench/run.py sets it)")
    bodies = {path.stem: path.read_bytes() for path in sorted(Path(name).glob("*.json"))}
    if DEFAULT not in bodies:
        raise RuntimeError(f"{BODY_DIR_ENV}={name} holds no {DEFAULT}.json, the answer of /bare")
    handlers = routes("/bare", bodies[DEFAULT])
    for stem, body in bodies.items():
        handlers += routes(f"/bare/{stem}", body)
    return Litestar(route_handlers=handlers, openapi_config=None, debug=False)
