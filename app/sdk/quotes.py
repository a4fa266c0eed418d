"""What a kernel prices and answers with (docs/plugins.md "Kernels"): a compiled ``Candidate`` offer,
the ``Quote`` of one candidate for a profile — numbers and broken constraints, no words — and the
element-wise choice among quotes over a batch or Monte Carlo draws (``select_each``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.sdk.offers import Offer, level
from app.sdk.ranges import Range
from app.sdk.types import Cost, OfferInfo, metrics_of


@dataclass(frozen=True, slots=True)
class Candidate:
    """One offer an option may buy, compiled: priced in the kernel's currency, with its constants."""

    offer: Offer
    #: the price per GPU (per GPU-hour for hourly units), in the kernel's currency
    per_gpu: Range
    label: str
    info: OfferInfo
    #: ``Assessment.offer_label`` of the offer (ties between equal costs are broken on it)
    offer_label: str
    #: GPUs per machine the team looks after (an instance or server; a GPU-billed offer's server size)
    per_machine: int = 1
    #: GPUs of one node a job can run on alone; a larger job spans nodes joined by ``interconnect``
    node_gpus: int = 1
    #: how nodes are joined (``infiniband``, ``roce``, ``efa``, ``ethernet``), None where unknown
    interconnect: str | None = None
    #: the option's own constants for this offer (a bill of materials, a term, sources)
    data: Any = None

    @property
    def plan(self) -> str:
        return self.offer.plan

    @property
    def sort_key(self) -> tuple[float, str]:
        return (level(self.per_gpu.expected), self.label)


class Quote:
    """One candidate's figures for a profile: ranges of numbers (floats, or arrays over a batch or
    Monte Carlo draws) and the constraints the offer breaks, as ``(code, where)`` pairs. The names
    follow ``Assessment``: ``cost`` is a ``Cost`` without breakdown labels; ``lines`` and ``extras``
    are ``(key, annual, upfront, total)`` per line; ``detail`` is what the option's ``materialise``
    needs to write its sentences."""

    __slots__ = (
        "candidate",
        "cost",
        "detail",
        "efficiency",
        "extras",
        "lines",
        "stability",
        "usability",
        "violations",
    )

    def __init__(
        self,
        candidate: Candidate | None,
        cost: Cost,
        efficiency: Any,
        stability: Any,
        usability: Any,
        lines: tuple[tuple[str, Range, Range, Range], ...],
        extras: tuple[tuple[str, Range, Range, Range], ...],
        violations: tuple[tuple[str, Any], ...],
        detail: Any = None,
    ) -> None:
        self.candidate = candidate
        self.cost = cost
        self.efficiency = efficiency
        self.stability = stability
        self.usability = usability
        self.lines = lines
        self.extras = extras
        self.violations = violations
        self.detail = detail

    @property
    def effective(self) -> Range:
        c = self.cost
        return c.per_effective_gpu_hour or c.per_useful_gpu_hour

    def broken(self) -> Any:
        """Where the offer breaks a constraint: a bool, or an array over a batch."""
        found: Any = False
        for _, where in self.violations:
            found = found | where if isinstance(where, np.ndarray) or isinstance(found, np.ndarray) else found or where
        return found

    def metrics(self) -> dict[str, Range]:
        """``Assessment.metrics``: the figures scenario rules may test."""
        return metrics_of(self)


def select_each(quotes: Sequence[Quote]) -> Quote:
    """Per element of a batch or of Monte Carlo draws: the cheapest feasible quote, figure by figure
    (when every quote breaks a constraint there, the cheapest, marked by the one violation
    ``every``). Where one quote is chosen everywhere, it is that quote's figures as they are."""
    n = max(np.size(q.effective.expected) for q in quotes)
    keys = np.stack([np.broadcast_to(q.effective.expected, (n,)) for q in quotes])
    broken = np.stack([np.broadcast_to(np.asarray(q.broken(), dtype=bool), (n,)) for q in quotes])
    ranked = np.where(broken, np.inf, keys)
    every_broken = broken.all(axis=0)
    index = np.where(every_broken, keys.argmin(axis=0), ranked.argmin(axis=0))
    first = int(index[0])
    if bool((index == first).all()):
        q = quotes[first]
        return Quote(
            q.candidate,
            q.cost,
            q.efficiency,
            q.stability,
            q.usability,
            q.lines,
            q.extras,
            (("every", every_broken),),
            q.detail,
        )
    pick = _Picker(index)
    head = quotes[0]
    return Quote(
        head.candidate,
        pick([q.cost for q in quotes]),
        pick([q.efficiency for q in quotes]),
        pick([q.stability for q in quotes]),
        pick([q.usability for q in quotes]),
        head.lines,
        head.extras,
        (("every", every_broken),),
        head.detail,
    )


class _Picker:
    """Element-wise choice among same-shaped values by ``index``: Ranges end by end (an end the three
    share is chosen once), arrays and numbers element by element, dataclasses field by field; anything
    else (labels, sources, booleans) is the first item's."""

    def __init__(self, index: np.ndarray) -> None:
        self.index = index
        self.columns = np.arange(index.shape[0])

    def __call__(self, items: list[Any]) -> Any:
        first = items[0]
        if isinstance(first, Range):
            if all(r[0] is r[1] is r[2] for r in items):
                one = self._numbers([r[0] for r in items])
                return Range.elementwise(one, one, one)
            return Range.elementwise(*(self._numbers([r[i] for r in items]) for i in range(3)))
        if isinstance(first, np.ndarray | float | int) and not isinstance(first, bool):
            return self._numbers(items)
        if dataclasses.is_dataclass(first) and not isinstance(first, type):
            changes = {f.name: self([getattr(x, f.name) for x in items]) for f in dataclasses.fields(first)}
            return dataclasses.replace(first, **changes)
        return first

    def _numbers(self, values: list[Any]) -> np.ndarray:
        n = self.index.shape[0]
        stacked = np.stack([np.broadcast_to(np.asarray(v, dtype=float), (n,)) for v in values])
        chosen: np.ndarray = stacked[self.index, self.columns]
        return chosen
