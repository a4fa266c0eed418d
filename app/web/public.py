"""The paths open to everyone — liveness, readiness, the API documentation and the explorer page
(which asks for a key and sends it with each call) — declared once:
authentication skips them and rate limits never count them."""

from __future__ import annotations

PUBLIC_PATHS = ["^/health(/|$)", "^/docs(/|$)", "^/explorer(/|$)"]
