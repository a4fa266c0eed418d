"""The paths open to everyone — liveness, readiness, the API documentation and the explorer page
(which asks for a key and sends it with each call) — declared once: authentication skips them, and
rate limits count only those of ``PUBLIC_CHARGED_PATHS``."""

from __future__ import annotations

PUBLIC_PATHS = ["^/health(/|$)", "^/docs(/|$)", "^/explorer(/|$)"]
#: open paths that cost one unit of the client address's budget (``app.web.rate_limits``): readiness
#: checks the database, and a key it is sent with is weighed — a flood of probes, or of made-up keys, is
#: refused ``429`` like any other from that address. Liveness and documentation are never counted.
PUBLIC_CHARGED_PATHS = ["^/health/ready/?$"]
