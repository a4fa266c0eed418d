"""The paths open to everyone — liveness, readiness and the API documentation — declared once:
authentication skips them and rate limits never count them."""

from __future__ import annotations

PUBLIC_PATHS = ["^/health(/|$)", "^/docs(/|$)"]
