"""Numbers and names in the words a team lead reads: figures formatted once, and sentences as message
codes (:class:`Msg`) the edge renders in the request's language. Names are messages too — an option
(``option.<key>.ref``), a plan (``plan.<key>``) — so that no sentence shows a key."""

from __future__ import annotations

import string
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, overload

import numpy as np

from app.core.ranges import Range


def _scalar(value: Any) -> float:
    """Monte Carlo runs pass arrays of draws through the plugins: their sentences use the mean."""
    return float(np.mean(value)) if isinstance(value, np.ndarray) else float(value)


def _scalar_range(r: Range) -> Range:
    return r if not isinstance(r.low, np.ndarray) else Range.point(_scalar(r.expected))


def num(value: float, digits: int = 0) -> str:
    """A number in words: thousands separated, ``digits`` decimals (an array's mean over draws)."""
    return f"{_scalar(value):,.{digits}f}"


def money(value: float, currency: str) -> str:
    """An amount in whole units of ``currency``, thousands separated."""
    return f"{_scalar(value):,.0f} {currency}"


def money_range(r: Range, currency: str, digits: int = 0) -> str:
    """A money range in words; whole units by default (a range whose ends round to the same thousand is
    one figure), ``digits`` decimals for a unit price (a cost per million tokens)."""
    r = _scalar_range(r)
    same = round(r.low, -3) == round(r.high, -3) if digits == 0 else round(r.low, digits) == round(r.high, digits)
    if r.is_point or same:
        return f"{_scalar(r.expected):,.{digits}f} {currency}"
    low, high, expected = f"{r.low:,.{digits}f}", f"{r.high:,.{digits}f}", f"{r.expected:,.{digits}f}"
    return msg(
        "unit.money_range",
        f"{low}–{high} {currency} (expected {expected})",
        low=low,
        high=high,
        expected=expected,
        currency=currency,
    )


def pct(fraction: float) -> str:
    """A fraction as a whole percentage (0.4 → ``40%``)."""
    return f"{_scalar(fraction) * 100:.0f}%"


def span(r: Range, unit: str, digits: int = 0) -> str:
    """A range of a count in words: one figure where its ends meet, else ``low–high`` and ``unit``."""
    r = _scalar_range(r)
    if r.is_point:
        return f"{r.expected:,.{digits}f} {unit}"
    return f"{r.low:,.{digits}f}–{r.high:,.{digits}f} {unit}"


class Msg(str):
    """A sentence that is also a message code with parameters.

    It *is* its English text (a ``str``: everything that joins, compares or stores sentences keeps
    working, byte for byte), and carries ``code`` and ``params`` so the edge can render it in the
    request's language from the message catalogs (``app/i18n/__init__.py``). Parameters are strings
    already formatted the way the English text shows them, or nested messages.
    """

    code: str
    params: dict[str, Any]

    def __new__(cls, code: str, text: str, params: dict[str, Any]) -> Msg:
        self = super().__new__(cls, text)
        self.code = code
        self.params = params
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (Msg, (self.code, str(self), self.params))


def msg(code: str, text: str, **params: Any) -> Msg:
    """The sentence ``text`` (English) as the message ``code`` with ``params``."""
    return Msg(code, text, params)


def plan_name(plan: str) -> Msg:
    """A rental or price plan as people say it (``plan.<key>``: "on demand", "reserved for 1 year")."""
    return msg(f"plan.{plan}", plan.replace("_", " "))


def option_ref(key: str) -> Msg:
    """How a sentence names an option (``option.<key>.ref``), or an option on one plan
    (``rented_gpu_instances:on_demand`` → "Rented GPU instances (on demand)")."""
    option, _, plan = key.partition(":")
    ref = msg(f"option.{option}.ref", option)
    if not plan:
        return ref
    return msg("option.on_plan", f"{ref} ({plan.replace('_', ' ')})", option=ref, plan=plan_name(plan))


def joined(separator: str, items: list[str] | tuple[str, ...]) -> Msg:
    """Items joined by ``", "`` (code ``join.comma``) or ``"; "`` (``join.semicolon``); each item translated."""
    code = {", ": "join.comma", "; ": "join.semicolon"}[separator]
    return Msg(code, separator.join(items), {"items": tuple(items)})


def flat_messages(table: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """A catalog's nested tables as flat dotted codes (``{"note": {"x": "…"}}`` → ``{"note.x": "…"}``)."""
    out: dict[str, str] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flat_messages(value, f"{name}."))
        else:
            out[name] = str(value)
    return out


def placeholders(template: str) -> frozenset[str]:
    """The ``{name}`` fields a template uses."""
    return frozenset(field for _, field, _, _ in string.Formatter().parse(template) if field)


class Composed(Sequence[str]):
    """Sentences composed when first read: an answer that shows no notes (a price comparison) never
    formats their figures. Reads as the tuple ``compose()`` returns, and equals it."""

    __slots__ = ("_compose", "_sentences")

    def __init__(self, compose: Callable[[], tuple[str, ...]]) -> None:
        self._compose: Callable[[], tuple[str, ...]] | None = compose
        self._sentences: tuple[str, ...] = ()

    def sentences(self) -> tuple[str, ...]:
        """The sentences, composed at the first call."""
        compose = self._compose
        if compose is not None:
            self._sentences, self._compose = tuple(compose()), None
        return self._sentences

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return self.sentences()[index]

    def __len__(self) -> int:
        return len(self.sentences())

    def __iter__(self) -> Iterator[str]:
        return iter(self.sentences())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Composed):
            other = other.sentences()
        return isinstance(other, tuple) and self.sentences() == other

    def __hash__(self) -> int:
        return hash(self.sentences())

    def __repr__(self) -> str:
        return f"Composed({self.sentences()!r})"
