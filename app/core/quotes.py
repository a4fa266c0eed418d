"""What a kernel prices and answers with (docs/plugins.md "Kernels"): a compiled ``Candidate`` offer,
the ``Quote`` of one candidate for a profile — numbers and broken constraints, no words — and the
element-wise choice among quotes over a batch or Monte Carlo draws (``select_each``), which keeps the
quote it chose per element (``Quote.chosen``: the offer each element is priced on).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.core.offers import MIN_NODE_GPUS, PER_UNIT, TRAINING_FABRICS, Offer, level
from app.core.ranges import Range, holds_anywhere
from app.core.types import Cost, OfferInfo, metrics_of

#: a line of a quote: (key, annual, upfront, total)
Line = tuple[str, Range, Range, Range]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One offer an option may buy, compiled: priced in the kernel's currency, with its constants."""

    offer: Offer
    #: the price per GPU (per GPU-hour for hourly units), in the kernel's currency
    per_gpu: Range
    #: its name in sentences (``Offer.label``: a message in the request's language)
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
    #: the offer's lead time in days (its own, else the option's ``lead_time_days``), set when compiled
    lead: Range | None = None
    #: what its hard constraints test (``app.core.constraints.Checks``), set when compiled
    checks: Any = None
    #: the order of candidates: the expected price per GPU, then the offer's keys (``Offer.ident``), made
    #: once with the candidate (shortlists and bridges sort on it for every profile)
    sort_key: tuple[float, str] = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sort_key", (level(self.per_gpu.expected), self.offer.ident))

    @property
    def plan(self) -> str:
        return self.offer.plan

    @property
    def multi_node(self) -> bool:
        """Whether a job may span several of the offer's nodes: nodes of ``MIN_NODE_GPUS`` or more joined
        by a training fabric (``TRAINING_FABRICS``)."""
        return self.node_gpus >= MIN_NODE_GPUS and self.interconnect in TRAINING_FABRICS


class Quote:
    """One candidate's figures for a profile: ranges of numbers (floats, or arrays over a batch, a sweep
    or Monte Carlo draws; NaN at an end the caller did not ask for) and the constraints the offer
    breaks, as ``(code, where)`` pairs. ``lines`` and ``extras`` are ``(key, annual, upfront, total)``
    per line; ``detail`` is what the option's ``materialise`` needs to write its sentences. ``cost``
    is the ``Cost`` of these figures, made when it is first read (a kernel quotes many candidates and
    answers few). ``each``, set by ``select_each`` where its choice differs between elements: the
    quote chosen per element, as (an index per element, the quotes it points into)."""

    __slots__ = (
        "_cost",
        "annual",
        "candidate",
        "committed",
        "detail",
        "each",
        "effective",
        "efficiency",
        "equivalent_annual",
        "extras",
        "lines",
        "npv",
        "paid",
        "per_useful",
        "stability",
        "total",
        "upfront",
        "usability",
        "useful",
        "useful_total",
        "violations",
    )

    def __init__(
        self,
        candidate: Candidate | None,
        annual: Range,
        total: Range,
        upfront: Range,
        paid: Range,
        per_useful: Range,
        effective: Range,
        useful: Any,
        useful_total: Any,
        committed: bool,
        efficiency: Any,
        stability: Any,
        usability: Any,
        lines: tuple[Line, ...],
        extras: tuple[Line, ...] = (),
        violations: tuple[tuple[str, Any], ...] = (),
        npv: Range | None = None,
        equivalent_annual: Range | None = None,
        detail: Any = None,
    ) -> None:
        self.candidate = candidate
        self.annual = annual
        self.total = total
        self.upfront = upfront
        self.paid = paid
        self.per_useful = per_useful
        #: cost per effective GPU-hour: the one money scale the choice and the cost score compare
        self.effective = effective
        self.useful = useful
        self.useful_total = useful_total
        self.committed = committed
        self.npv = npv
        self.equivalent_annual = equivalent_annual
        self.efficiency = efficiency
        self.stability = stability
        self.usability = usability
        self.lines = lines
        self.extras = extras
        self.violations = violations
        self.detail = detail
        self.each: tuple[np.ndarray, tuple[Quote, ...]] | None = None
        self._cost: Cost | None = None

    @classmethod
    def of_cost(
        cls,
        candidate: Candidate | None,
        cost: Cost,
        efficiency: Any,
        stability: Any,
        usability: Any,
        lines: tuple[Line, ...],
        extras: tuple[Line, ...] = (),
        violations: tuple[tuple[str, Any], ...] = (),
        detail: Any = None,
    ) -> Quote:
        """The quote of a ``Cost`` already made (an SDK v2 plugin's assessment)."""
        q = cls(
            candidate,
            annual=cost.annual,
            total=cost.total,
            upfront=cost.upfront,
            paid=cost.paid_gpu_hours,
            per_useful=cost.per_useful_gpu_hour,
            effective=cost.per_effective_gpu_hour or cost.per_useful_gpu_hour,
            useful=cost.useful_gpu_hours,
            useful_total=cost.useful_gpu_hours_total,
            committed=cost.committed,
            efficiency=efficiency,
            stability=stability,
            usability=usability,
            lines=lines,
            extras=extras,
            violations=violations,
            npv=cost.npv,
            equivalent_annual=cost.equivalent_annual,
            detail=detail,
        )
        q._cost = cost
        return q

    @property
    def cost(self) -> Cost:
        """The quote's figures as a ``Cost`` without breakdown labels."""
        found = self._cost
        if found is None:
            found = self._cost = Cost(
                annual=self.annual,
                total=self.total,
                upfront=self.upfront,
                per_useful_gpu_hour=self.per_useful,
                useful_gpu_hours=self.useful,
                paid_gpu_hours=self.paid,
                committed=self.committed,
                breakdown=(),
                npv=self.npv,
                equivalent_annual=self.equivalent_annual,
                useful_gpu_hours_total=self.useful_total,
                per_effective_gpu_hour=self.effective,
            )
        return found

    def chosen(self, n: int) -> list[Quote]:
        """Per element of its ``n`` (a batch's profiles, draws): the quote chosen there, whose candidate
        and ``committed`` it is priced on — this quote everywhere where one was chosen for all."""
        if self.each is None:
            return [self] * n
        index, quotes = self.each
        return [quotes[i] for i in index.tolist()]

    def broken(self) -> Any:
        """Where the offer breaks a constraint: a bool, or an array over a batch."""
        found: Any = False
        for _, where in self.violations:
            found = found | where if isinstance(where, np.ndarray) or isinstance(found, np.ndarray) else found or where
        return found

    def metrics(self) -> dict[str, Range]:
        """``Assessment.metrics``: the figures scenario rules may test."""
        return metrics_of(self)


#: the figures of a quote that are ranges, chosen end by end among quotes (``select_each``)
RANGED = ("annual", "total", "upfront", "paid", "per_useful", "effective", "npv", "equivalent_annual")


def select_each(quotes: Sequence[Quote]) -> Quote:
    """Per element of a batch or of Monte Carlo draws: the cheapest feasible quote, figure by figure
    (when every quote breaks a constraint there, the cheapest, marked by the one violation
    ``every``). Where one quote is chosen everywhere, it is that quote's figures as they are; else the
    first quote's candidate, lines and detail, with which quote was chosen per element (``Quote.each``)."""
    n = max(np.size(q.effective.expected) for q in quotes)
    keys = np.stack([np.broadcast_to(q.effective.expected, (n,)) for q in quotes])
    broken = [q.broken() for q in quotes]
    if not any(holds_anywhere(b) for b in broken):  # every quote feasible everywhere
        every_broken: Any = np.zeros(n, dtype=bool)
        index = keys.argmin(axis=0)
    else:
        stacked = np.stack([np.broadcast_to(np.asarray(b, dtype=bool), (n,)) for b in broken])
        every_broken = stacked.all(axis=0)
        index = np.where(stacked, np.inf, keys).argmin(axis=0)
        if every_broken.any():
            index = np.where(every_broken, keys.argmin(axis=0), index)
    every = (("every", every_broken),)
    counts = np.bincount(index, minlength=len(quotes))
    used = np.flatnonzero(counts)
    if len(used) == 1:
        first = int(used[0])
        return _with(quotes[first], quotes[first], every)
    # only the quotes chosen somewhere are picked from, by their place among them
    chosen_quotes = [quotes[i] for i in used.tolist()]
    place = np.zeros(len(quotes), dtype=np.intp)
    place[used] = np.arange(len(used))
    pick = _Picker(place[index])
    head = quotes[0]
    chosen = _with(head, head, every)
    chosen.each = (pick.index, tuple(chosen_quotes))
    for name in RANGED:
        values = [getattr(q, name) for q in chosen_quotes]
        setattr(chosen, name, None if values[0] is None else pick(values))
    chosen.useful = pick([q.useful for q in chosen_quotes])
    chosen.useful_total = pick([q.useful_total for q in chosen_quotes])
    chosen.efficiency = pick([q.efficiency for q in chosen_quotes])
    chosen.stability = pick([q.stability for q in chosen_quotes])
    chosen.usability = pick([q.usability for q in chosen_quotes])
    return chosen


def _with(q: Quote, head: Quote, violations: tuple[tuple[str, Any], ...]) -> Quote:
    return Quote(
        head.candidate,
        annual=q.annual,
        total=q.total,
        upfront=q.upfront,
        paid=q.paid,
        per_useful=q.per_useful,
        effective=q.effective,
        useful=q.useful,
        useful_total=q.useful_total,
        committed=q.committed,
        efficiency=q.efficiency,
        stability=q.stability,
        usability=q.usability,
        lines=head.lines,
        extras=head.extras,
        violations=violations,
        npv=q.npv,
        equivalent_annual=q.equivalent_annual,
        detail=head.detail,
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
        if all(x is first for x in items):  # one value whichever is chosen (a shared record, a NaN end)
            return first
        if isinstance(first, np.ndarray | float | int) and not isinstance(first, bool):
            return self._numbers(items)
        if dataclasses.is_dataclass(first) and not isinstance(first, type):
            changes = {f.name: self([getattr(x, f.name) for x in items]) for f in dataclasses.fields(first)}
            return dataclasses.replace(first, **changes)
        return first

    def _numbers(self, values: list[Any]) -> Any:
        first = values[0]
        if all(v is first for v in values):  # the same number or array whichever is chosen
            return first
        n = self.index.shape[0]
        stacked = np.stack([np.broadcast_to(np.asarray(v, dtype=float), (n,)) for v in values])
        chosen: np.ndarray = stacked[self.index, self.columns]
        return chosen


def offer_label(info: OfferInfo) -> str:
    """``Assessment.offer_label`` of an offer."""
    return f"{info.provider} {info.subject} {info.region} {info.plan} {info.variant or ''}"


def candidate(
    offer: Offer, per_machine: int = 1, data: Any = None, *, node_gpus: int | None = None, interconnect: Any = ...
) -> Candidate:
    """A compiled candidate of ``offer`` (its price per GPU, label and answerable info made once). Its
    node is its instance or server where the row says how many GPUs it has, else the machine size
    (a GPU-billed platform schedules jobs on its servers); its interconnect the row's unless given."""
    info = offer.info()
    row = offer.row
    node = (
        node_gpus
        if node_gpus is not None
        else (offer.gpus_per_unit if row.gpus_per_unit is not None or row.unit in PER_UNIT else per_machine)
    )
    fabric = row.interconnect if interconnect is ... else interconnect
    return Candidate(
        offer=offer,
        per_gpu=offer.per_gpu,
        label=offer.label,
        info=info,
        offer_label=offer_label(info),
        per_machine=per_machine,
        node_gpus=node,
        interconnect=fabric,
        data=data,
    )
