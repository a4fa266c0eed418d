"""Security headers: what a browser may do with the service's answers.

Every answer says ``X-Content-Type-Options: nosniff`` (a JSON or CSV answer is never run as a script
or a page) and ``Referrer-Policy: no-referrer``. The pages — the documentation (``/docs``) and the
explorer (``/explorer``) — add a Content-Security-Policy that lets them load scripts, style sheets and
images from this origin only and call only this origin's API, with no inline script or style, no plugin,
and no framing (``frame-ancestors 'none'``, and ``X-Frame-Options: DENY`` for older browsers). The
explorer shows its charts from ``blob:`` URLs it makes itself (and may read them back); Swagger UI's
style sheet draws its icons from ``data:`` URLs.
"""

from __future__ import annotations

import re

from litestar.datastructures import MutableScopeHeaders
from litestar.enums import ScopeType
from litestar.types import Message, Scope

#: the pages (and their files) that get the policy
PAGE_PATHS = re.compile(r"^/(?:docs|explorer)(?:/|$)")
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "connect-src 'self' blob:",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
EVERY_ANSWER = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
PAGES = {"Content-Security-Policy": CONTENT_SECURITY_POLICY, "X-Frame-Options": "DENY"}


async def send_security_headers(message: Message, scope: Scope) -> None:
    """App-level ``before_send``: the headers above, on every answer (404s and 405s included)."""
    if message["type"] == "http.response.start" and scope["type"] == ScopeType.HTTP:
        headers = MutableScopeHeaders.from_message(message)
        for name, value in EVERY_ANSWER.items():
            headers[name] = value
        if PAGE_PATHS.match(scope["path"]):
            for name, value in PAGES.items():
                headers[name] = value
