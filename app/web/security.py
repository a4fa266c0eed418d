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


_EVERY_ANSWER = [(k.lower().encode(), v.encode()) for k, v in EVERY_ANSWER.items()]
_ON_PAGES = _EVERY_ANSWER + [(k.lower().encode(), v.encode()) for k, v in PAGES.items()]


def security_headers(path: str) -> list[tuple[bytes, bytes]]:
    """The headers above for an answer at ``path`` (404s and 405s included), as raw ASGI headers:
    ``app.web.edge`` adds them to every answer."""
    return _ON_PAGES if PAGE_PATHS.match(path) else _EVERY_ANSWER
