"""The representation layer: one road from a handler's computation to its answer.

A handler says what to compute and how to draw it; this module does the rest the same way for every operation:
the media type negotiated among those the operation offers (JSON and those the OpenAPI document lists for it,
``app.openapi.document.ALTERNATIVE_MEDIA``: 406 for none of them, 400 for a malformed ``Accept``), the
computation run on the event loop or, heavy, in the worker pool together with its drawing and encoding
(``app.web.offload``: what the thread answers is final), an ``ETag`` and a 304 where the operation validates its
answers (``app.web.caching``), and the answer in JSON, CSV, XLSX or SVG with its headers: ``Vary``, and a
download's ``Content-Disposition`` naming its knowledge version and day. ``Content-Language`` is sent with every
answer (``app.i18n``); the catalog's reads are validated by their controller's middleware
(``app.web.caching.conditional_get_middleware``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec
from litestar import Request, Response

from app.domain.shared.advisor import Advisor
from app.i18n import Lang, language
from app.openapi.document import answered_media
from app.web.caching import answer_etag, caching_headers, not_modified
from app.web.negotiation import CSV, JSON, negotiate
from app.web.offload import worker_pool
from app.web.spreadsheets import XLSX, attachment

__all__ = ["CSV", "JSON", "XLSX", "Draw", "Formats", "Representation", "as_of", "knowledge_version", "offered"]

D = TypeVar("D")
#: a document in a media type beyond JSON (its CSV, XLSX workbook or SVG chart), in the request's language
Draw = Callable[[D, str, Lang], str | bytes]
#: the downloads, and what their file names end with
EXTENSIONS = {CSV: "csv", XLSX: "xlsx"}
#: the ``Vary`` of an operation whose JSON a chart or a download may replace
VARY = "Accept, Accept-Language"


def knowledge_version(doc: Any) -> str:
    """The knowledge version a document was computed on, as most answers name it."""
    version: str = doc.knowledge_version
    return version


def as_of(doc: Any) -> dt.date:
    """The day a document is of, as most answers name it."""
    day: dt.date = doc.as_of
    return day


@dataclass(frozen=True, slots=True)
class Formats:
    """What an operation's answers share whatever the request."""

    #: what a download (CSV, XLSX) is: its file name's first word (``capacity-plan``); None: it offers none
    file: str | None = None
    #: the version a download's file name names (and an ETag's document must be computed on)
    version: Callable[[Any], str] = knowledge_version
    #: every answer says ``Vary: Accept, Accept-Language`` (a chart or a download may replace the JSON)
    vary: bool = False


#: an operation that answers JSON alone, names no download and varies on nothing of its own
JSON_ONLY = Formats()


def offered(request: Request[Any, Any, Any]) -> list[str]:
    """The media types the request's operation answers in, the default first: JSON, then those the OpenAPI
    document lists for it."""
    operation = request.route_handler.operation_id
    return list(answered_media(operation if isinstance(operation, str) else None) or (JSON,))


class Representation:
    """One request's answer: its media type and language, negotiated as it is made — before any other work, so
    a 406 comes before a 403 or a 404 — then its document computed, validated and drawn (:meth:`computed`,
    :meth:`answer`). An operation that answers JSON alone negotiates nothing here: the app refused an ``Accept``
    without JSON before the handler (``app.asgi``)."""

    __slots__ = ("formats", "lang", "media", "request")

    def __init__(self, request: Request[Any, Any, Any], formats: Formats = JSON_ONLY) -> None:
        media = offered(request)
        self.request = request
        self.formats = formats
        self.media = media[0] if len(media) == 1 else negotiate(request, media)
        self.lang = language(request.scope)

    async def computed(
        self,
        compute: Callable[[], D],
        draw: Draw[D] | None = None,
        *,
        heavy: bool = False,
        etag: Sequence[str] = (),
        day: dt.date | Callable[[D], dt.date] = as_of,
    ) -> Response[Any]:
        """``compute()``'s document as the answer: computed on the loop, or (``heavy``) in the worker pool together
        with its drawing and encoding. ``etag``: the parts that identify the answer, for an operation that
        validates it; ``day``: the day a download is of (default: the document's ``as_of``)."""
        if not heavy:
            return self.answer(compute(), draw, etag=etag, day=day)
        doc, content = await worker_pool(self.request).run(self._made, compute, draw)
        return self._answer(doc, lambda: content, etag, day)

    def answer(
        self,
        doc: D,
        draw: Draw[D] | None = None,
        *,
        etag: Sequence[str] = (),
        day: dt.date | Callable[[D], dt.date] = as_of,
    ) -> Response[Any]:
        """A document computed on the loop as the answer, drawn only once a 304 will not do (JSON: encoded as
        Litestar encodes a handler's return value)."""
        return self._answer(doc, lambda: doc if self.media == JSON else self._drawn(doc, draw), etag, day)

    def _made(self, compute: Callable[[], D], draw: Draw[D] | None) -> tuple[D, str | bytes]:
        """In a worker thread: the document, and its JSON (as ``app.web.offload``'s answers encode it) or
        drawing."""
        doc = compute()
        return doc, msgspec.json.encode(doc) if self.media == JSON else self._drawn(doc, draw)

    def _drawn(self, doc: D, draw: Draw[D] | None) -> str | bytes:
        assert draw is not None, f"the operation offers {self.media}: its handler must say how to draw it"
        return draw(doc, self.media, self.lang)

    def _answer(
        self, doc: D, content: Callable[[], Any], parts: Sequence[str], day: dt.date | Callable[[D], dt.date]
    ) -> Response[Any]:
        headers = {"Vary": VARY} if self.formats.vary else {}
        etag = self._etag(doc, parts)
        if etag is not None:
            headers |= caching_headers(etag)
            if not_modified(self.request.scope, etag):
                return Response(None, status_code=304, headers=headers)
        if self.media in EXTENSIONS:
            headers |= self._download(doc, day(doc) if callable(day) else day)
        return Response(content(), media_type=self.media, headers=headers)

    def _download(self, doc: D, day: dt.date) -> dict[str, str]:
        """``Content-Disposition`` of a download: what it is, its knowledge version and day."""
        assert self.formats.file is not None, f"the operation offers {self.media}: its formats must name the file"
        return attachment(self.formats.file, self.formats.version(doc), day, EXTENSIONS[self.media])

    def _etag(self, doc: D, parts: Sequence[str]) -> str | None:
        """The answer's validator: ``parts`` and the media type (``app.web.caching.answer_etag``); none for an
        operation that names no parts, nor for a document computed on the knowledge version before a swap (no
        validator of the new one for it)."""
        if not parts:
            return None
        etag = answer_etag(self.request.scope, *parts, self.media)
        advisor: Advisor = self.request.app.state.advisor  # the advisor answer_etag reads the version of
        if etag is None or self.formats.version(doc) != advisor.knowledge().version:
            return None
        return etag
