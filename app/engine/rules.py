"""The scenario-rule interpreter: declarative conditions, evaluated here, never with ``eval``.

A condition is ``{field, op, value}``. ``field`` names ``profile.<field>`` or
``assessment.<figure>[.low|.expected|.high]`` (the option's own assessment, ``expected`` when no
end is named). ``value`` is a literal or ``{"ref": "<field path>"}``. A condition on a figure
that is absent (``capex_budget`` not given) is false.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.core.columns import ALL, EXPECTED
from app.core.knowledge import Rule
from app.core.ranges import Range
from app.core.text import Msg
from app.core.types import METRICS, Assessment, Profile
from app.core.vocab import RuleOperator

#: every operator of the vocabulary (``RuleOperator``), and what it does
OPERATORS: Mapping[RuleOperator, Callable[[Any, Any], bool]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "in": lambda left, right: left in right,
    "not_in": lambda left, right: left not in right,
}
PROFILE_FIELDS = frozenset(f.name for f in dataclasses.fields(Profile))
ASSESSMENT_FIGURES = frozenset(METRICS)
RANGE_ENDS = ("low", "expected", "high")
_PLACEHOLDER = re.compile(r"\{([a-z_]+(?:\.[a-z_]+){1,2})\}")


@functools.lru_cache(maxsize=1024)
def check_path(path: str) -> str | None:
    """Why ``path`` is not a field a rule may test, or ``None`` when it is."""
    parts = path.split(".")
    if parts[0] == "profile" and len(parts) == 2:
        return None if parts[1] in PROFILE_FIELDS else f"unknown profile field '{parts[1]}'"
    if parts[0] == "assessment" and len(parts) in (2, 3):
        if parts[1] not in ASSESSMENT_FIGURES:
            return f"unknown assessment figure '{parts[1]}'"
        return None if len(parts) == 2 or parts[2] in RANGE_ENDS else f"unknown range end '{parts[2]}'"
    return f"'{path}' is neither profile.<field> nor assessment.<figure>[.low|.expected|.high]"


@dataclass(frozen=True, slots=True)
class Context:
    profile: Profile
    metrics: Mapping[str, Range]

    @classmethod
    def of(cls, profile: Profile, assessment: Assessment) -> Context:
        return cls(profile, assessment.metrics())

    def resolve(self, path: str) -> Any:
        if check_path(path) is not None:  # only declared fields: never ``__class__`` or other internals
            return None
        parts = path.split(".")
        if parts[0] == "profile":
            return getattr(self.profile, parts[1], None)
        figure = self.metrics.get(parts[1])
        if figure is None:
            return None
        return getattr(figure, parts[2] if len(parts) == 3 else "expected")


def ends_read(rules: Sequence[Rule]) -> tuple[int, ...]:
    """Which ends of an assessment's ranges ``rules`` read (``app.core.columns``): every end where a
    condition names ``assessment.<figure>.low`` or ``.high`` (its field, or its value's ``ref``), else
    the expected end alone — so a batch's kernels compute no end a rule will not test."""
    for rule in rules:
        for c in rule.conditions:
            for path in (c.field, c.value.get("ref") if isinstance(c.value, Mapping) else None):
                if isinstance(path, str) and path.startswith("assessment.") and path.endswith((".low", ".high")):
                    return ALL
    return EXPECTED


def holds(rule: Rule, ctx: Context) -> bool:
    results = (_condition(c.field, c.op, c.value, ctx) for c in rule.conditions)
    return all(results) if rule.match == "all" else any(results)


def _condition(field: str, op: RuleOperator, value: Any, ctx: Context) -> bool:
    left = ctx.resolve(field)
    right = ctx.resolve(value["ref"]) if isinstance(value, Mapping) else value
    if left is None or right is None:
        return False
    try:
        return bool(OPERATORS[op](left, right))
    except TypeError:
        return False


def render(template: str, ctx: Context, code: str = "rule.text") -> Msg:
    """Fill ``{profile.x}`` / ``{assessment.y.low}`` placeholders with formatted figures.

    The result is the message ``code`` whose parameters are the placeholders with ``_`` for ``.``
    (``{profile_gpus}``), so a catalog can hold the rule's sentence in other languages.
    """
    params: dict[str, str] = {}

    def fill(match: re.Match[str]) -> str:
        value = ctx.resolve(match.group(1))
        if isinstance(value, float):
            shown = f"{value:,.0f}" if abs(value) >= 10 else f"{value:,.2f}".rstrip("0").rstrip(".")
        else:
            shown = match.group(0) if value is None else f"{value:,}" if isinstance(value, int) else str(value)
        params[match.group(1).replace(".", "_")] = shown
        return shown

    return Msg(code, _PLACEHOLDER.sub(fill, template), params)


def holds_many(rule: Rule, ctx: Context, n: int) -> np.ndarray:
    """``holds`` for a batch: profile fields and figures are arrays of ``n`` profiles.

    Same semantics element by element: a condition on an absent value (``None``, or NaN for a
    numeric field some profiles left out) is false; values that cannot be compared are false.
    """
    masks = [_condition_many(c.field, c.op, c.value, ctx, n) for c in rule.conditions]
    combined = np.logical_and.reduce(masks) if rule.match == "all" else np.logical_or.reduce(masks)
    return np.asarray(combined, dtype=bool)


def _condition_many(field: str, op: RuleOperator, value: Any, ctx: Context, n: int) -> np.ndarray:
    left = ctx.resolve(field)
    right = ctx.resolve(value["ref"]) if isinstance(value, Mapping) else value
    none = np.zeros(n, dtype=bool)
    if left is None or right is None:
        return none
    left_a = np.asarray(left)
    try:
        if op in ("in", "not_in"):
            inside = np.isin(left_a, list(right))
            result = inside if op == "in" else ~inside
        else:
            right_a = np.asarray(right)
            with np.errstate(invalid="ignore"):
                result = np.asarray(OPERATORS[op](left_a, right_a), dtype=bool)
            for side in (left_a, right_a):
                if side.dtype.kind == "f":
                    result = result & ~np.isnan(side)
    except (TypeError, ValueError):
        return none
    return np.broadcast_to(result, (n,)).copy()
