"""The baseline for ``make bench``: a bare Litestar app, no database, no validation, no middleware.

It answers ``POST /bare`` (the JSON body is decoded into a plain ``dict`` and ignored) and ``GET /bare``
with the same fixed bytes: a real compute-advisor recommendation that ``bench/run.py`` captured from the
real service at start-up and names in ``BENCH_BODY_FILE``. Served exactly like the service::

    BENCH_BODY_FILE=/tmp/…/sample_recommendation.json \\
        .venv/bin/uvicorn --app-dir bench --factory bare_app:create_app --loop uvloop --http httptools
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from litestar import Litestar, Response, get, post

BODY_FILE_ENV = "BENCH_BODY_FILE"
JSON = "application/json"


def create_app() -> Litestar:
    name = os.environ.get(BODY_FILE_ENV)
    if not name:
        raise RuntimeError(f"{BODY_FILE_ENV} must name a captured recommendation body (bench/run.py sets it)")
    body = Path(name).read_bytes()

    @post("/bare", status_code=200)
    async def bare_post(data: dict[str, Any]) -> Response[bytes]:
        return Response(body, media_type=JSON)

    @get("/bare")
    async def bare_get() -> Response[bytes]:
        return Response(body, media_type=JSON)

    return Litestar(route_handlers=[bare_post, bare_get], openapi_config=None, debug=False)
