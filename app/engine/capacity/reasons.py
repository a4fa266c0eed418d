"""The sentences of a capacity plan, as message codes (``capacity.*`` in app/i18n/locales): why a base
is the size it is, why a portfolio cannot serve the demand, what the solver could not prove."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from app.core.errors import ISOLATED
from app.core.knowledge import Knowledge
from app.core.text import Msg, msg, num, option_ref, pct
from app.core.types import Profile
from app.engine.capacity.demand import Phase
from app.engine.capacity.tables import BRIDGE, BUY, COMMIT, OWNED, USE, Item, Priced, Pricer
from app.engine.insights.common import Model, Variant

if TYPE_CHECKING:
    from app.engine.capacity.portfolio import Portfolio, Segment


def _ref(option: str) -> Msg:
    """An option, or an option on a plan (``rented_gpu_instances:on_demand``), by its name."""
    return option_ref(option)


def not_assessed(code: str, error: str) -> Msg:
    return msg("reason.not_assessed", f"Could not be assessed: {error}", error=error)


def no_portfolio() -> Msg:
    return msg("capacity.no_portfolio", "No mix of the options serves the demand in every phase.")


def no_better_mix(single: str) -> Msg:
    option = _ref(single.split(":", 1)[1])
    return msg(
        "capacity.no_better_mix",
        f"No mix of options costs less than {option} alone: the recommended plan is {option} alone.",
        option=option,
    )


def not_optimal(seconds: float) -> Msg:
    shown = f"{seconds:g}"
    return msg(
        "capacity.not_optimal",
        f"The optimiser stopped at its {shown}-second limit: this is the best mix it found, not proved optimal.",
        seconds=shown,
    )


def cannot_serve(
    model: Model, knowledge: Knowledge, base: Profile, option: str, demand: Sequence[Phase]
) -> tuple[Msg, ...]:
    """Why ``option`` alone cannot serve the demand: the hard constraints its offers break at the
    demand's peak, else the plan's own constraints (capex budget, largest job)."""
    peak = max(demand, key=lambda p: p.gpus)
    profile = dataclasses.replace(base, gpus=peak.gpus, utilization=peak.utilization)
    found: list[Msg] = []
    try:
        a = model.assess(option, profile, knowledge)
        found = [msg("reason.not_feasible", f"Not feasible: {v.reason}", reason=v.reason) for v in a.violations]
    except ISOLATED:
        pass
    if found:
        return tuple(found)
    if base.capex_budget is not None:
        return (
            msg(
                "capacity.capex_budget",
                "Not feasible: no plan of this option serves the demand within the capex budget.",
            ),
        )
    return (
        msg(
            "capacity.cannot_serve",
            "Not feasible: no plan of this option serves every phase's demand and its largest job.",
        ),
    )


def base_sizes(pricer: Pricer, items: Sequence[Item], p: Portfolio, demand: Sequence[Phase], unit: int) -> list[Msg]:
    """For each owned or reserved tranche: the utilization below which one more GPU of it stops
    paying against the cheapest option billed as used over the same phases, and the utilization the
    demand above the base would give that GPU."""
    bases = [s for s in p.segments if s.acquired in (BUY, COMMIT) and s.request is not None]
    if not bases or not any(s.request is None and s.acquired != OWNED for s in p.segments):
        return []
    held = [s for s in p.segments if s.acquired not in (USE, BRIDGE)]  # a bridge holds GPUs only until installed
    capacity = [sum(s.gpus_by_phase[k] for s in held) for k in range(len(demand))]
    per_gpu: dict[int, tuple[float, str]] = {}
    for i in items:
        if i.acquired == USE and i.gpus == demand[i.first].gpus and i.price.feasible:
            found = per_gpu.get(i.first)
            cost = i.price.objective / i.gpus
            if found is None or cost < found[0]:
                per_gpu[i.first] = (cost, i.variant.label)
    spans = {id(s): _span(s) for s in bases}
    bases = [s for s in bases if all(k in per_gpu for k in spans[id(s)])]
    quotes = _with_one_more(pricer, bases, unit)
    out: list[Msg] = []
    for s in bases:
        span, request = spans[id(s)], s.request
        if id(s) not in quotes or request is None:
            continue
        now, bigger = quotes[id(s)]
        if not bigger.feasible:
            continue
        marginal = (bigger.objective - now.objective) / unit
        rented = sum(per_gpu[k][0] for k in span)
        years = sum(demand[k].years for k in span)
        average = sum(demand[k].utilization * demand[k].years for k in span) / years
        threshold = average * marginal / rented if rented > 0 else 0.0
        above = sum(demand[k].utilization * demand[k].years for k in span if demand[k].gpus > capacity[k]) / years
        burst = max((per_gpu[k][1] for k in span), key=lambda o: sum(1 for k in span if per_gpu[k][1] == o))
        how = msg("capacity.how.buy", "owned") if s.acquired == BUY else msg("capacity.how.commit", "reserved")
        gpus, month = num(request.gpus), str(s.start_month)
        pays, rises = _pays(threshold, _ref(burst)), _used_above(above)
        out.append(
            msg(
                "capacity.base_size",
                f"{gpus} GPUs {how} from month {month}: {pays}; {rises}.",
                gpus=gpus,
                how=how,
                month=month,
                pays=pays,
                used=rises,
            )
        )
    return out


def _span(s: Segment) -> range:
    used = [k for k, g in enumerate(s.gpus_by_phase) if g]
    return range(used[0], used[-1] + 1)


def _with_one_more(pricer: Pricer, bases: Sequence[Segment], unit: int) -> dict[int, tuple[Priced, Priced]]:
    """Each base's tranche priced as it is and with one server more, in one kernel call per option
    (and plan); an option that cannot be priced leaves its bases out."""
    by_variant: dict[Variant, list[Segment]] = {}
    for s in bases:
        by_variant.setdefault(Variant(s.option, None if s.acquired == BUY else s.plan), []).append(s)
    found: dict[int, tuple[Priced, Priced]] = {}
    for v, segments in by_variant.items():
        requests = [s.request for s in segments if s.request is not None]
        try:
            priced = pricer.price(v, [*requests, *(dataclasses.replace(r, gpus=r.gpus + unit) for r in requests)])
        except ISOLATED:
            continue
        for k, s in enumerate(segments):
            found[id(s)] = (priced[k], priced[len(requests) + k])
    return found


def _pays(threshold: float, burst: Msg) -> Msg:
    """From which utilization one more GPU of a base pays against ``burst``, said as it can happen: a
    threshold of 100 % or more is none, one of 0 % any."""
    if round(threshold * 100) >= 100:
        return msg("capacity.pays_never", f"one more would cost more than {burst} at any utilization", burst=burst)
    if round(threshold * 100) <= 0:
        return msg("capacity.pays_always", f"one more pays against {burst} at any utilization", burst=burst)
    shown = pct(threshold)
    return msg(
        "capacity.pays_from",
        f"one more pays only at {shown} utilization or more against {burst}",
        threshold=shown,
        burst=burst,
    )


def _used_above(above: float) -> Msg:
    """The utilization the demand above a base would give one more GPU of it (none: it never exceeds it)."""
    if round(above * 100) <= 0:
        return msg("capacity.never_above", "the demand never rises above this base")
    shown = pct(above)
    return msg("capacity.used_above", f"the demand above this base would keep it at {shown}", above=shown)
