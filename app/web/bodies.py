"""Request bodies read strictly: whatever a client sends, a body that is not plain, well-formed JSON
is a 400 problem before any handler runs — never a 500.

Litestar reads JSON with msgspec, which is fast and lenient: a duplicated key silently keeps the
last value, a lone UTF-16 surrogate (``"\\ud800"``) becomes a string no encoder can write back,
``1e999`` becomes infinity and a body nested 50,000 levels deep raises ``RecursionError``. This
module's decoder refuses each of them with a ``detail`` that says which:

- not UTF-8 (overlong forms, encoded surrogates included), or not JSON;
- nesting deeper than the decoder's recursion limit (about 1,000 levels; no schema of this API goes
  beyond 5);
- ``NaN``, ``Infinity``, ``-Infinity`` (not JSON, but Python's reader accepts them) and numbers that
  overflow a double (``1e400``);
- integers of more than 4,300 digits (Python's limit on converting text to int);
- a lone surrogate escape in a key or a string;
- an object that names one key twice (RFC 8259 leaves the meaning undefined: we refuse it);
- an object of more than :data:`MAX_KEYS` keys, a string (or key) of more than :data:`MAX_STRING`
  characters, an array of more than :data:`MAX_ARRAY` items — checked object by object as the scanner
  closes each one, so a body is refused at the first object that breaks a limit, before any schema
  sees it (no schema of this API needs more: its largest object has about 30 fields, its longest
  string 50 characters, its longest array the 10,000 profiles of a batch).

A body over :data:`OFF_LOOP_BYTES` is read in a thread (``asyncio.to_thread``), so that the event loop
goes on serving other requests meanwhile; the reader and its answers are the same. When its route takes
a request model (a batch's ``EvaluationCreate``, a capacity plan's), the same thread validates it too
(pydantic, strict, as ``PydanticPlugin(validate_strict=True)`` does): ``json()`` then gives the model, and
Litestar's signature step takes an instance of the handler's type as it is. A body the model refuses is
handed on as its JSON value, and the signature step refuses it on the loop with the problem it always
gives. Cost functions read the JSON value (``json_value()``) whatever the route takes.

Before this reader, each route bounds its body's size (:data:`BODY_LIMITS`, 413 problem): a body over
its route's limit is refused from its ``Content-Length`` (or as soon as the bytes streamed pass it)
and never read.

The cost is the standard library's C scanner with a hook per object, which lets the common object (no key
twice, no array, short strings) through with one pass over its members: for a 1.3 MB body of 10,000 profiles
about 24 ms on the AMD EPYC of docs/performance.md (29 ms with every member checked one by one), against
10 ms for the scanner without hooks and 4 ms for msgspec.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import msgspec
from litestar import Request
from litestar.exceptions import ClientException, ValidationException
from litestar.exceptions.http_exceptions import RequestEntityTooLarge
from litestar.types import Empty
from pydantic import BaseModel

#: the most keys one object may have
MAX_KEYS = 64
#: the longest string or key, in characters
MAX_STRING = 1_024
#: the most items one array may have (a batch's profiles: ``MAX_BATCH_PROFILES``)
MAX_ARRAY = 10_000
#: the largest body of a route that holds one profile (comparisons, recommendations, insights, training
#: plans); the batch route's limit is ``MAX_BODY_BYTES`` (settings), every other route's ``MAX_BODY_BYTES`` too
SINGLE_BODY_BYTES = 65_536
#: a capacity plan: one profile and up to 120 demand phases
CAPACITY_BODY_BYTES = 131_072
#: an organisation's private price rows: up to 500 rows with their sources and notes, as JSON, CSV or a workbook
PRICE_BOOK_BODY_BYTES = 1_048_576
#: each route's own body limit (bytes), for the documentation and the tests; the handlers declare it
BODY_LIMITS = {
    "/v1/price-comparisons": SINGLE_BODY_BYTES,
    "/v1/recommendations": SINGLE_BODY_BYTES,
    "/v1/break-even": SINGLE_BODY_BYTES,
    "/v1/sensitivity": SINGLE_BODY_BYTES,
    "/v1/cost-curves": SINGLE_BODY_BYTES,
    "/v1/uncertainty": SINGLE_BODY_BYTES,
    "/v1/training-plans": SINGLE_BODY_BYTES,
    "/v1/capacity-plans": CAPACITY_BODY_BYTES,
    "/v1/price-books/prices": PRICE_BOOK_BODY_BYTES,
}
#: a route handler's ``opt[BODY_MEDIA_OPT]``: the media types besides JSON its body may come in; such a body
#: is the handler's to read (``require_json_body`` lets it in, ``json_value`` gives no JSON value of it)
BODY_MEDIA_OPT = "body_media"
#: bodies larger than this (a batch's, a capacity plan's) are read in a thread of the loop's executor:
#: 2,000 profiles hold the loop ~5 ms, ~3 times that while worker threads share the GIL, and every other
#: request (``/health/live`` too) would wait for them; a single profile's body never comes near it
OFF_LOOP_BYTES = SINGLE_BODY_BYTES
#: at most this many characters of a client's value are quoted back in a problem
QUOTE_CHARS = 40
#: the scope state's key of a large body's model, validated in the thread that read it
_VALIDATED = "compute_advisor.validated_body"


class BodyRefused(ValueError):
    """Why a body is refused, in words for the problem's ``detail``; ``field``: the key of the object
    member that broke a limit, when there is one (the problem names it)."""

    def __init__(self, reason: str, field: str | None = None) -> None:
        super().__init__(reason)
        self.field = field


def quoted(text: str) -> str:
    """``text`` as JSON, cut to :data:`QUOTE_CHARS` characters (a problem never echoes much of a body)."""
    cut = text[:QUOTE_CHARS]
    return json.dumps(cut, ensure_ascii=True) + ("…" if len(text) > QUOTE_CHARS else "")


def _named(key: str | None) -> str:
    return f" {quoted(key)}" if key is not None else ""


def _check_value(value: Any, key: str | None = None) -> None:
    """A string or an array within an object (or an array): the scanner has no hook of its own for them."""
    if isinstance(value, str):
        if len(value) > MAX_STRING:
            raise BodyRefused(f"the string{_named(key)} has {len(value)} characters, more than {MAX_STRING}", key)
    elif isinstance(value, list):
        if len(value) > MAX_ARRAY:
            raise BodyRefused(f"the array{_named(key)} has {len(value)} items, more than {MAX_ARRAY}", key)
        for item in value:
            if isinstance(item, str | list):  # objects were checked when the scanner closed them
                _check_value(item, key)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) == len(pairs) <= MAX_KEYS:  # the common object: no key twice, few keys, short strings, no array
        for key, value in pairs:
            if len(key) > MAX_STRING or value.__class__ is list or (value.__class__ is str and len(value) > MAX_STRING):
                return _checked(pairs)
        return found
    return _checked(pairs)


def _checked(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object checked member by member: refused with the first limit it breaks."""
    if len(pairs) > MAX_KEYS:
        raise BodyRefused(f"an object has {len(pairs)} keys, more than {MAX_KEYS} (the first: {quoted(pairs[0][0])})")
    for key, value in pairs:
        if len(key) > MAX_STRING:
            raise BodyRefused(f"a key of {len(key)} characters is longer than {MAX_STRING}: {quoted(key)}")
        if isinstance(value, str | list):
            _check_value(value, key)
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise BodyRefused(f"the key {quoted(twice)} appears twice in one object")
    return found


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BodyRefused(f"the number {text[:40]} is too large for a double")
    return value


def _constant(name: str) -> Any:
    raise BodyRefused(f"{name} is not a JSON number")


def strict_json(body: bytes) -> Any:
    """The JSON value of ``body``, or :class:`BodyRefused` saying why it is not acceptable."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BodyRefused(f"the body is not UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(text, object_pairs_hook=_object, parse_float=_float, parse_constant=_constant)
    except BodyRefused:
        raise
    except RecursionError:
        raise BodyRefused("the body is nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise BodyRefused(f"{exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except ValueError as exc:  # an integer beyond Python's digit limit
        raise BodyRefused(f"a number cannot be read: {str(exc)[:120]}") from None
    if isinstance(value, str | list):  # a top-level string or array: no object hook saw it
        _check_value(value)
    if "\\u" in text:  # only an escape can make a lone surrogate (strict UTF-8 refused encoded ones)
        try:
            msgspec.json.encode(value)
        except UnicodeEncodeError:
            raise BodyRefused("a string holds a lone UTF-16 surrogate escape (\\ud800–\\udfff)") from None
        except RecursionError:  # pragma: no cover - the reader's limit comes first
            raise BodyRefused("the body is nested too deeply") from None
    return value


class StrictJsonRequest(Request[Any, Any, Any]):
    """Litestar's request, reading its JSON body with :func:`strict_json` (400 problem when refused)."""

    async def body(self) -> bytes:
        try:
            return await super().body()
        except RequestEntityTooLarge:
            limit = self.route_handler.resolve_request_max_body_size()
            raise RequestEntityTooLarge(  # the connection closes: the rest of the body is never read
                detail=f"the body is larger than this operation accepts ({limit:,} bytes): send a smaller one",
                headers={"Connection": "close"},
            ) from None

    async def json(self) -> Any:
        """The body as the route's ``data`` takes it: its JSON value, or, for a body over
        :data:`OFF_LOOP_BYTES` whose route takes a request model, the model validated in the reading thread."""
        value = await self.json_value()
        validated = self.scope.get("state", {}).get(_VALIDATED)
        return value if validated is None else validated

    async def json_value(self) -> Any:
        """The body's JSON value (400 problem when the strict reader refuses it); None for a body of another
        media type its route reads itself (``BODY_MEDIA_OPT``: a cost function then reads None)."""
        if self._json is Empty and self.content_type[0].lower() in body_media(self):
            return None
        if self._json is Empty:
            cached = self._connection_state.json
            if cached is not Empty:
                self._json = cached
            else:
                body = await self.body()
                try:
                    if len(body) > OFF_LOOP_BYTES:  # a batch's: read in a thread, the loop serves on
                        model = request_model(self.route_handler)
                        decoded, validated = await asyncio.to_thread(_read_and_validate, body, model)
                        if validated is not None:
                            self.scope.setdefault("state", {})[_VALIDATED] = validated
                    else:
                        decoded = strict_json(body or b"null")
                except BodyRefused as exc:
                    detail = f"the body is not acceptable JSON: {exc}"
                    if exc.field is not None:  # a problem naming the member (field, errors)
                        named = [{"key": exc.field, "message": str(exc)}]
                        raise ValidationException(detail=detail, extra=named) from None
                    raise ClientException(detail=detail) from None
                self._json = self._connection_state.json = decoded
        return self._json


def body_media(request: Request[Any, Any, Any]) -> tuple[str, ...]:
    """The media types besides JSON the request's route reads its body in (``opt[BODY_MEDIA_OPT]``)."""
    return tuple(request.route_handler.opt.get(BODY_MEDIA_OPT, ()))


def request_model(handler: Any) -> type[BaseModel] | None:
    """The pydantic model a route handler's ``data`` parameter is, if it is one."""
    field = handler.parsed_fn_signature.parameters.get("data")
    annotation = None if field is None else field.annotation
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _read_and_validate(body: bytes, model: type[BaseModel] | None) -> tuple[Any, BaseModel | None]:
    """In a thread: the body's JSON value, and the model of it when ``model`` takes it (else None: the
    signature step validates the value again on the loop, and refuses it with the problem it always gives)."""
    value = strict_json(body)
    if model is None:
        return value, None
    try:
        return value, model.model_validate(value, strict=True)
    except Exception:  # whatever the model says of it, the loop's validation says again, as always
        return value, None
