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
- an object that names one key twice (RFC 8259 leaves the meaning undefined: we refuse it).

The cost is the standard library's C scanner with a hook per object: about 15 ms for a 1 MB body of
10,000 profiles, against 4 ms for msgspec.
"""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec
from litestar import Request
from litestar.exceptions import ClientException
from litestar.types import Empty


class BodyRefused(ValueError):
    """Why a body is refused, in words for the problem's ``detail``."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise BodyRefused(f"the key {json.dumps(twice, ensure_ascii=True)} appears twice in one object")
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

    async def json(self) -> Any:
        if self._json is Empty:
            cached = self._connection_state.json
            if cached is not Empty:
                self._json = cached
            else:
                body = await self.body()
                try:
                    decoded = strict_json(body or b"null")
                except BodyRefused as exc:
                    raise ClientException(detail=f"the body is not acceptable JSON: {exc}") from None
                self._json = self._connection_state.json = decoded
        return self._json
