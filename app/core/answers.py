"""The words of an offer kernel's answer (docs/plugins.md "Kernels"): a chosen quote materialised into
an ``Assessment`` — the option's own breakdown lines and notes, the shared parts' sources, the extras'
lines, the sentences of the constraints it breaks and an export licence it needs. Only what is
answered is worded; every label and basis is a message the catalogs word in the request's language.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Protocol

from app.core import availability as rules
from app.core import residency as data_residency
from app.core.kernel import Candidate, Quote, refs
from app.core.knowledge import AvailabilityRule, Knowledge, Price, SourceRef
from app.core.ranges import Range
from app.core.text import Composed, msg
from app.core.types import Assessment, Cost, LineItem, Profile, Violation

#: the words of the extras' lines: one message each, rendered once per catalog (``app.i18n.render``)
WORK_LABEL = msg("line.infrastructure_work", "Infrastructure work left to the team, at an engineer's cost")
WORK_BASIS = msg(
    "basis.infrastructure_work",
    "infrastructure work the team cannot cover (FTE) × an engineer's cost per FTE-year × the horizon's years",
)
WAITING_LABEL = msg("line.waiting", "Waiting for the compute, at the cost of a day's delay")
WAITING_BASIS = msg("basis.waiting", "days until the compute is available × the cost of a day's delay")


def work_line(annual: Range, upfront: Range, total: Range, sources: tuple[SourceRef, ...]) -> LineItem:
    """The line of the infrastructure work left to the team, priced at an engineer's cost."""
    return LineItem(
        key="infrastructure_work",
        label=WORK_LABEL,
        annual=annual,
        upfront=upfront,
        basis=WORK_BASIS,
        sources=sources,
        total=total,
    )


def waiting_line(annual: Range, upfront: Range, total: Range) -> LineItem:
    """The line of waiting for the compute, priced at the profile's ``delay_cost_per_day``."""
    return LineItem(
        key="waiting", label=WAITING_LABEL, annual=annual, upfront=upfront, basis=WAITING_BASIS, sources=(), total=total
    )


class Answering(Protocol):
    """What the words read of an offer kernel (``app.core.offer_kernel.OfferKernel``)."""

    option: str
    as_of: dt.date
    knowledge: Knowledge

    def ref(self, key: str) -> SourceRef: ...

    def engineer(self, region: str) -> tuple[Range, Price, tuple[SourceRef, ...]] | None: ...

    def violation_reason(self, profile: Profile, quote: Quote, code: str) -> str: ...

    def availability(self, c: Candidate, profile: Profile) -> list[AvailabilityRule]: ...

    def jurisdiction(self, c: Candidate, profile: Profile) -> str: ...


def assessment(
    kernel: Answering,
    profile: Profile,
    quote: Quote,
    *,
    breakdown: Sequence[LineItem],
    notes: tuple[str, ...] | Callable[[], tuple[str, ...]],
    efficiency_refs: tuple[SourceRef, ...],
    stability_refs: tuple[SourceRef, ...],
    usability_refs: tuple[SourceRef, ...],
) -> Assessment:
    """The materialised assessment of ``quote``: the option's own breakdown lines and notes, and the
    shared parts' sources, extras lines and violation sentences. ``notes``: the sentences, or a function
    that composes them — called only where an answer reads the notes (an evaluation's reasons do, a
    price comparison does not), with the notes of data residency and availability rules after them."""
    c = quote.candidate
    assert c is not None
    extras = []
    for key, annual, upfront, total in quote.extras:
        if key == "infrastructure_work":
            engineer = kernel.engineer(c.offer.row.region)
            assert engineer is not None
            coverage_ref = kernel.ref(f"ops_coverage_{profile.ops_team}")
            sources = (engineer[1].ref, *refs((coverage_ref,), engineer[2]))
            extras.append(work_line(annual, upfront, total, sources))
        else:
            extras.append(waiting_line(annual, upfront, total))
    violations = tuple(
        Violation(kernel.violation_reason(profile, quote, code), where) for code, where in quote.violations
    )

    def composed() -> tuple[str, ...]:
        return (
            *(notes() if callable(notes) else notes),
            *data_residency.notes(kernel.knowledge, profile),  # no buyer: no place refused, said
            # rules that bind without refusing (a licence, a discouraged purchase), none for an unknown buyer
            *rules.notes(kernel.knowledge, kernel.as_of, c, profile, kernel.availability(c, profile)),
        )

    return Assessment(
        option=kernel.option,
        cost=Cost(
            annual=quote.annual,
            total=quote.total,
            upfront=quote.upfront,
            per_useful_gpu_hour=quote.per_useful,
            useful_gpu_hours=quote.useful,
            paid_gpu_hours=quote.paid,
            committed=quote.committed,
            breakdown=tuple(breakdown),
            npv=quote.npv,
            equivalent_annual=quote.equivalent_annual,
            useful_gpu_hours_total=quote.useful_total,
            per_effective_gpu_hour=quote.effective,
            extras=tuple(extras),
        ),
        efficiency=quote.efficiency.sourced(efficiency_refs),
        stability=quote.stability.sourced(stability_refs),
        usability=quote.usability.sourced(usability_refs),
        notes=Composed(composed),  # composed where an answer reads them
        offer=c.info,
        violations=violations,
    )
