"""A profile as a kernel computes with it (docs/plugins.md "Kernels"): its numbers as **columns** —
plain floats for one profile, NumPy arrays for many (a batch's profiles, a sweep of utilizations or
cluster sizes, Monte Carlo draws in the knowledge) — what follows from them, and the ends of the
ranges a quote computes.

Kernels price one **end** of every range at a time: ``e`` is 0 (low), 1 (expected) or 2 (high), and
an input that lowers a figure as it grows (a utilization, a lifetime, a divisor) is read at the other
end, ``2 - e``. That is what ``Range`` arithmetic does (a quotient divides the low end by the other's
high end), written out once per formula, so a quote is float arithmetic with no objects in between.
``ends`` says which ends a caller needs: every one for an answer, only the expected end where only
it is read (Monte Carlo draws, the break-even sentence, a capacity plan's samples): the others are
then NaN, never a guess.

The helpers (``minimum``, ``maximum``, ``ceil``, ``where``, ``gt``) are Python's for floats and NumPy's
for arrays, chosen once per profile, so one formula serves both.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import NDArray

from app.core.ranges import Range
from app.core.types import HOURS_PER_YEAR, PROFILE_NUMBERS, Profile

#: every end of a range: low, expected, high
ALL: tuple[int, ...] = (0, 1, 2)
#: only the expected end (the others NaN)
EXPECTED: tuple[int, ...] = (1,)
LOW, MID, HIGH = 0, 1, 2
NAN = math.nan
#: a number, or a NumPy array of them (one element per profile, utilization, size or draw): what a
#: kernel's arithmetic takes and gives (the array contract, docs/plugins.md)
Num: TypeAlias = float | NDArray[np.float64]


def _fmin(a: Any, b: Any) -> Any:
    """``min(a, b)`` as Python computes it (the first unless the second is smaller)."""
    return b if b < a else a


def _fmax(a: Any, b: Any) -> Any:
    return b if b > a else a


def _fwhere(condition: Any, yes: Any, no: Any) -> Any:
    return yes if condition else no


def _fgt(a: Any, b: Any) -> bool:
    return bool(a > b)


def gt(a: Num, b: Num) -> Any:
    """``a > b``: a bool, or element-wise where either is an array."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.asarray(a) > np.asarray(b)
    return bool(a > b)


def minimum(a: Num, b: Num) -> Num:
    """``min(a, b)`` for numbers, element-wise where either is an array."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.minimum(a, b)
    return b if b < a else a


def maximum(a: Num, b: Num) -> Num:
    """``max(a, b)`` for numbers, element-wise where either is an array."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.maximum(a, b)
    return b if b > a else a


def ceil(a: Num) -> Num:
    """``math.ceil`` for a number, element-wise for an array."""
    return np.ceil(a) if isinstance(a, np.ndarray) else math.ceil(a)


def where(condition: Any, yes: Any, no: Any) -> Any:
    """``yes`` where ``condition`` holds, else ``no``: element-wise where any is an array."""
    if isinstance(condition, np.ndarray) or isinstance(yes, np.ndarray) or isinstance(no, np.ndarray):
        return np.where(condition, yes, no)
    return yes if condition else no


def delay_per_day(delay_cost_per_day: Any) -> Any:
    """What a day of waiting costs: the profile's ``delay_cost_per_day`` (NaN of a batch's profile that
    gives none: 0), or None where no profile prices waiting."""
    delay = delay_cost_per_day
    if delay is None or (isinstance(delay, np.ndarray) and np.all(np.isnan(delay))):
        return None
    return np.nan_to_num(delay) if isinstance(delay, np.ndarray) else delay


def holds(where: Any) -> bool:
    """Whether a constraint holds anywhere: a bool, or any element of an array."""
    return bool(where.any()) if isinstance(where, np.ndarray) else bool(where)


class Columns:
    """One profile's numbers as a kernel computes with them, for one call (``Kernel.quotes``).

    ``memo`` holds what the candidates of the call share (an efficiency per lead time, the work of a
    machine size…); it lives as long as the call. ``arrays`` is whether any number is an array.
    """

    #: whether a condition (a bool, or an array over a batch) holds for any profile
    holds = staticmethod(holds)

    __slots__ = (
        "arrays",
        "capex_budget",
        "ceil",
        "constraints",
        "delay_cost_per_day",
        "delay_per_day",
        "ends",
        "gpus",
        "gt",
        "horizon",
        "job_gpus",
        "maximum",
        "memo",
        "minimum",
        "preemptible_share",
        "profile",
        "sampled",
        "start_within_days",
        "team_size",
        "useful",
        "useful_total",
        "utilization",
        "where",
    )

    def __init__(self, profile: Profile, ends: tuple[int, ...] = ALL, *, sampled: bool = False) -> None:
        p = profile
        self.profile = p
        self.ends = ends
        self.sampled = sampled
        # a kernel compiled over Monte Carlo draws (``sampled``) computes arrays from a plain profile
        arrays = sampled or any(isinstance(x, np.ndarray) for x in _numbers(p))
        self.arrays = arrays
        self.gpus: Num = p.gpus
        self.utilization: Num = p.utilization
        self.horizon: Num = p.horizon_years
        #: useful GPU-hours a year: ``gpus × utilization × 8760``
        self.useful: Num = p.gpus * p.utilization * HOURS_PER_YEAR
        #: … over the horizon (a kernel that waits for its compute uses fewer: ``Cost.useful_gpu_hours_total``)
        self.useful_total: Num = self.useful * p.horizon_years
        self.job_gpus: Num = p.job_gpus
        self.team_size: Num = p.team_size
        self.start_within_days: Num | None = p.start_within_days
        self.delay_cost_per_day: Num | None = p.delay_cost_per_day
        #: what a day of waiting costs, or None where the profile prices no waiting (``delay_per_day``)
        self.delay_per_day: Num | None = delay_per_day(p.delay_cost_per_day)
        self.capex_budget: Num | None = p.capex_budget
        self.preemptible_share: Num = p.preemptible_share
        self.memo: dict[Any, Any] = {}
        #: the hard constraints each candidate breaks, by ``id`` (``OfferKernel.constraints``)
        self.constraints: dict[int, Any] = {}
        if arrays:
            self.minimum: Callable[[Num, Num], Num] = minimum
            self.maximum: Callable[[Num, Num], Num] = maximum
            self.ceil: Callable[[Num], Num] = ceil
            self.where: Callable[[Any, Any, Any], Any] = where
            self.gt: Callable[[Any, Any], Any] = gt
        else:
            self.minimum, self.maximum, self.ceil, self.where, self.gt = _fmin, _fmax, math.ceil, _fwhere, _fgt

    def at_ends(self, ends: tuple[int, ...]) -> Columns:
        """The same profile's columns for other ``ends``: a new memo (its records depend on the ends),
        the constraints found shared (they do not)."""
        other = object.__new__(Columns)
        for name in _COPIED:  # the profile's numbers as they are: not read from it again
            setattr(other, name, getattr(self, name))
        other.ends = ends
        other.memo = {}
        return other

    def ranges(self, rows: Sequence[Sequence[Num]]) -> list[Range]:
        """Per-end rows of figures (one row per end of ``ends``, in order) as one ``Range`` per figure
        (NaN at an end not computed)."""
        if len(rows) == 3:
            return [tuple.__new__(Range, t) for t in zip(*rows, strict=True)]
        if len(rows) == 1 and self.ends == EXPECTED:
            return [tuple.__new__(Range, (NAN, v, NAN)) for v in rows[0]]
        found: list[list[Num]] = [[NAN] * len(rows[0]) for _ in range(3)]
        for e, row in zip(self.ends, rows, strict=True):
            found[e] = list(row)
        return [tuple.__new__(Range, t) for t in zip(*found, strict=True)]

    def range(self, values: Sequence[Num]) -> Range:
        """Values at each end of ``ends`` as a ``Range`` (NaN at an end not computed)."""
        if len(values) == 3:
            return tuple.__new__(Range, tuple(values))
        if len(values) == 1 and self.ends == EXPECTED:
            return tuple.__new__(Range, (NAN, values[0], NAN))
        found: list[Num] = [NAN, NAN, NAN]
        for e, v in zip(self.ends, values, strict=True):
            found[e] = v
        return tuple.__new__(Range, tuple(found))


#: what ``Columns.at_ends`` keeps of the columns it copies: all but the ends and the memo (the
#: constraints found are shared: they do not depend on the ends)
_COPIED = tuple(name for name in Columns.__slots__ if name not in ("ends", "memo"))

#: a profile's numbers (``PROFILE_NUMBERS``), read at once
_numbers = attrgetter(*PROFILE_NUMBERS)

__all__ = [
    "ALL",
    "EXPECTED",
    "HIGH",
    "LOW",
    "MID",
    "NAN",
    "Columns",
    "Num",
    "ceil",
    "delay_per_day",
    "gt",
    "holds",
    "maximum",
    "minimum",
    "where",
]
