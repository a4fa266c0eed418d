"""Managed AI compute platform (智算平台, e.g. 天翼云息壤智算): pooled GPUs, scheduling, preset images,
automatic fault detection, job migration and checkpoint management.

Pay as you go, the platform bills the useful hours over its pooled utilization, never more than
every hour of the GPUs (``held_hours`` over the pool); a subscription holds a pool all the time for
whole terms (``whole_terms``). A management fee the same provider charges per GPU is added. See
docs/methodology.md, "Platform".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.sdk import (
    HOURS_PER_YEAR,
    ZERO,
    Assessment,
    Candidate,
    Columns,
    Efficiency,
    LineItem,
    OfferKernel,
    OptionPlugin,
    OptionSpec,
    Price,
    Profile,
    Quote,
    Range,
    SourceRef,
    Stability,
    annuity,
    billed_at,
    money_range,
    msg,
    num,
    pct,
)

KEY = "ai_compute_platform"
VERSION = "3.0.0"
#: how long each plan commits, in years; None: billed for the GPU-hours used
PLAN_TERM_YEARS: dict[str, float | None] = {
    "pay_as_you_go": None,
    "flex_start": None,
    "reserved_2w": 14 / 365,
    "subscription_monthly": 1 / 12,
    "subscription_1y": 1.0,
    "savings_plan_3y": 3.0,
}
#: hours in a day, for fees quoted per GPU-day; minutes in an hour, for start-ups in minutes
HOURS_PER_DAY, MINUTES_PER_HOUR = 24, 60
#: how a row bills (``Price.billing``): a pool's GPU-hours (the default), job seconds, or a cluster held
#: for the allocation
POOLED = "pooled"
JOB_SECONDS = "job_seconds"
HELD_CLUSTER = "held_cluster"


@dataclass(frozen=True, slots=True)
class Fee:
    """The provider's management fee for an offer's region: its tiers (by ``min_gpus``) in the
    kernel's currency, per GPU-hour, and the rates that converted them."""

    rows: tuple[Price, ...]
    per_hour: tuple[Range, ...]
    tiered: bool
    conversion_refs: tuple[SourceRef, ...]

    def pick(self, gpus: Any) -> tuple[Range, Price]:
        if not self.tiered:
            return self.per_hour[0], self.rows[0]
        if isinstance(gpus, np.ndarray):  # each profile of a batch in its own tier
            conditions = [gpus >= (r.min_gpus or 0) for r in reversed(self.rows)]
            ends = (np.select(conditions, [v[i] for v in reversed(self.per_hour)]) for i in range(3))
            return Range.elementwise(*ends), self.rows[0]
        index = max((i for i, r in enumerate(self.rows) if (r.min_gpus or 0) <= gpus), default=0)
        return self.per_hour[index], self.rows[index]


def _charge(billed: Any, price: Any, years: Any) -> tuple[Any, Any]:
    """A year of the GPU-hours ``billed`` at ``price`` per GPU-hour (the GPU's or the fee's), and of the
    ``years`` paid: numbers for one offer's quote, arrays over offers in the choice's one pass
    (``PlatformKernel.expected_choice``)."""
    annual = billed * price
    return annual, annual * years


class PlatformKernel(OfferKernel):
    setup_steps = msg("setup.ai_compute_platform", "preset images and a graphical job console")
    requires = (
        "discount_rate",
        "pooled_utilization",
        "held_cluster_utilization",
        "job_startup_minutes",
        "detection_hours",
        "restart_hours",
        "storage_tb_per_gpu",
        "egress_share",
    )

    def compile_group(self, gpu_model: str | None) -> list[Candidate]:
        found = self.offers("gpu_hour", gpu_model)
        found += self.derived_offers(found, base_plan="pay_as_you_go")
        return [self.candidate(o, data=self._fee(o.row)) for o in found if o.plan in PLAN_TERM_YEARS]

    def _fee(self, row: Price) -> Fee | None:
        """The same provider's ``platform_fee`` for the offer's region (``Inputs.money``: the nearest
        region's rows, every volume tier, converted)."""
        rows = [
            r
            for r in self.knowledge.component(
                KEY, "platform_fee", as_of=self.as_of, provider=row.provider, region=row.region
            )
            if r.unit in ("per_gpu_day", "per_gpu_hour")
        ]
        if not rows:
            return None
        tiered = any(r.min_gpus for r in rows)
        ordered = sorted(rows, key=lambda r: r.min_gpus or 0) if tiered else rows[:1]
        per_hour: list[Range] = []
        conversion_refs: list[SourceRef] = []
        for r in ordered:
            conversion = self.knowledge.conversion(r.currency, self.currency, self.as_of)
            conversion_refs.extend(conversion.refs)
            price = r.value * conversion.factor
            per_hour.append(price * (1 / HOURS_PER_DAY) if r.unit == "per_gpu_day" else price)
        return Fee(tuple(ordered), tuple(per_hour), tiered, tuple(dict.fromkeys(conversion_refs)))

    def quotes(self, at: Columns, candidates: Sequence[Candidate]) -> list[Quote]:
        useful = at.useful
        rate = self.value("discount_rate").expected
        horizon_annuity = annuity(at.horizon, rate)
        ends = at.ends
        found = []
        for c in candidates:
            term = PLAN_TERM_YEARS[c.plan]
            billing = c.offer.row.billing or POOLED
            # a pool sells GPUs; a platform cluster or job runs on whole nodes
            held = at.gpus if billing == POOLED else at.ceil(at.gpus / c.node_gpus) * c.node_gpus
            every_hour = held * HOURS_PER_YEAR
            every_hour = every_hour if isinstance(every_hour, np.ndarray) else float(every_hour)
            if term is not None:  # a commitment: the GPUs held every hour of whole terms
                years_paid, factor = self.terms(at, term, rate)
            else:
                years_paid, factor = at.horizon, horizon_annuity
            fee: Fee | None = c.data
            fee_price = None if fee is None else fee.pick(at.gpus)[0]
            per_gpu = c.per_gpu
            store = self.storage(c.offer.row)
            kept = []
            rows = []
            for e in ends:
                share = at.profile.held_share
                billed = every_hour if term is not None else self.billed_at(e, billing, useful, every_hour, share)
                first, first_total = _charge(billed, per_gpu[e], years_paid)
                annual: Any = 0.0 + first
                total: Any = 0.0 + first_total
                fee_annual: Any = math.nan
                fee_total: Any = math.nan
                if fee_price is not None:
                    fee_annual, fee_total = _charge(billed, fee_price[e], years_paid)
                    annual, total = annual + fee_annual, total + fee_total
                npv = annual * factor
                if store is not None:  # the data's storage (and egress) for the horizon, whatever the terms
                    data = self.stored(at, store, e, rate)
                    kept.append(data)
                    annual, total, npv = annual + data.annual, total + data.total, npv + data.npv
                rows.append(
                    (billed, first, first_total, fee_annual, fee_total, annual, total, npv, npv / horizon_annuity)
                )
            billed_r, first_r, first_total_r, fee_r, fee_total_r, annual_r, total_r, npv_r, equivalent_r = at.ranges(
                rows
            )
            lines: tuple[tuple[str, Any, Any, Any], ...] = (("gpu_hours", first_r, ZERO, first_total_r),)
            if fee_price is not None:
                lines += (("platform_fee", fee_r, ZERO, fee_total_r),)
            if store is not None:
                lines += self.storage_lines(at, kept, store.egress_per_tb is not None)
            _, efficiency, stability, infra_fte, lead, violations = self.parts(at, c)
            found.append(
                self.finish(
                    at,
                    c,
                    annual=annual_r,
                    total=total_r,
                    paid=billed_r,
                    committed=term is not None,
                    npv=npv_r,
                    equivalent_annual=equivalent_r,
                    efficiency=efficiency,
                    stability=stability,
                    infra_fte=infra_fte,
                    lines=lines,
                    violations=violations,
                    waiting_days=lead,
                    detail=billed_r,
                )
            )
        return found

    def parts(
        self, at: Columns, c: Candidate
    ) -> tuple[Candidate, Efficiency, Stability, Range, Range, list[tuple[str, Any]]]:
        """What the offer's quote shares with other offers (``OfferKernel.expected_keys``): its efficiency
        for its lead time, the platform's stability, the team's work on its machines, its lead time and the
        hard constraints it breaks."""
        lead = self.lead(c)
        return (
            c,
            self.efficiency(at, lead),
            self.stability(at),
            self.machine_work(c, at, at.utilization),
            lead,
            self.constraints(c, at),
        )

    def expected_choice(self, at: Columns, candidates: Sequence[Candidate]) -> tuple[list[float], list[bool]]:
        """The offers' costs per effective GPU-hour at the expected end, in one pass over their columns:
        the GPU-hours each bills (every hour of whole terms on a commitment, else ``billed_at`` its billing
        rule, one number per offer), a year of them at its price and its fee's tier, over the years paid,
        plus the data's storage and egress — ``quotes``' figures, bit for bit, with
        ``OfferKernel.expected_keys`` adding the shared parts."""
        useful = at.useful
        rate = self.value("discount_rate").expected
        share = at.profile.held_share
        n = len(candidates)
        billed, price, fee, years, data = np.empty(n), np.empty(n), np.zeros(n), np.empty(n), np.zeros(n)
        parts = []
        for i, c in enumerate(candidates):
            term = PLAN_TERM_YEARS[c.plan]
            billing = c.offer.row.billing or POOLED
            held = at.gpus if billing == POOLED else at.ceil(at.gpus / c.node_gpus) * c.node_gpus
            every_hour = float(held * HOURS_PER_YEAR)
            billed[i] = every_hour if term is not None else self.billed_at(1, billing, useful, every_hour, share)
            years[i] = at.horizon if term is None else self.terms(at, term, rate)[0]
            price[i] = c.per_gpu[1]
            if c.data is not None:  # a fee: its tier's price (none: nothing added)
                fee[i] = c.data.pick(at.gpus)[0][1]
            store = self.storage(c.offer.row)
            if store is not None:
                data[i] = self.stored(at, store, 1, rate).total
            parts.append(self.parts(at, c))
        first_total = _charge(billed, price, years)[1]
        totals = 0.0 + first_total + _charge(billed, fee, years)[1] + data
        return self.expected_keys(at, totals, parts)

    def billed_at(self, e: int, billing: str, useful: Any, ceiling: Any, held: Any = None) -> Any:
        """GPU-hours a year the platform bills for ``useful`` ones at end ``e`` (``pricing.billed_at``): a
        pool over its pooled utilization, a cluster held for the allocation over the utilization a team
        achieves on held capacity (the profile's ``held``, else the knowledge base's), job seconds with one
        start-up per training run."""
        if billing == JOB_SECONDS:
            return billed_at(e, billing, useful, ceiling, utilization=ZERO, startup_share=self.startup_share())
        if billing == HELD_CLUSTER:  # the team's share of held hours: the profile's where it gives one
            utilization = self.held_share(held, "held_cluster_utilization")
        else:
            utilization = self.value("pooled_utilization")
        return billed_at(e, billing, useful, ceiling, utilization=utilization)

    def startup_share(self) -> Range:
        """Job-second billing's start-up per training run, as a share of the run: ``job_startup_minutes ÷
        60 ÷ training_run_hours``."""
        found: Range | None = self.compiled.get("startup_share")
        if found is None:
            found = self.value("job_startup_minutes") * (1 / MINUTES_PER_HOUR) / self.value("training_run_hours")
            self.compiled["startup_share"] = found
        return found

    def materialise(self, profile: Profile, quote: Quote) -> Assessment:
        c = quote.candidate
        assert c is not None
        billed = quote.detail
        useful = profile.useful_gpu_hours_per_year
        billing = c.offer.row.billing or POOLED
        committed = PLAN_TERM_YEARS[c.plan] is not None
        if billing == POOLED:  # the article's platform reads its pooled utilization whatever its plan
            read: tuple[SourceRef, ...] = (self.ref("pooled_utilization"),)
            basis = COMMITTED_BASIS if committed else POOLED_BASIS
        elif committed:
            basis, read = COMMITTED_BASIS, ()
        elif billing == JOB_SECONDS:
            basis = JOB_SECONDS_BASIS
            read = (self.ref("job_startup_minutes"), self.ref("training_run_hours"))
        else:
            basis = HELD_CLUSTER_BASIS
            read = (self.ref("held_cluster_utilization"),)
        key, annual, upfront, total = quote.lines[0]
        breakdown = [
            LineItem(
                key=key,
                label=msg("line.gpu_hours", f"Platform GPU-hours ({c.label})", offer=c.label),
                annual=annual,
                upfront=upfront,
                basis=basis,
                sources=(*c.offer.refs, *read),
                total=total,
            )
        ]
        if len(quote.lines) > 1 and quote.lines[1][0] == "platform_fee":
            fee: Fee = c.data
            key, annual, upfront, total = quote.lines[1]
            breakdown.append(
                LineItem(
                    key=key,
                    label=msg("line.platform_fee", "Platform management fee"),
                    annual=annual,
                    upfront=upfront,
                    basis=msg("basis.platform_fee", "billed GPU-hours × fee per GPU-hour"),
                    sources=(fee.pick(profile.gpus)[1].ref, *fee.conversion_refs),
                    total=total,
                )
            )
        breakdown.extend(self.storage_items(c.offer.row, quote.lines))
        return self.assessment_of(
            profile,
            quote,
            breakdown=breakdown,
            notes=lambda: (self._billing_note(profile, c, quote, billing, committed, billed, useful),),
            efficiency_refs=self.efficiency_refs((self.ref("discount_rate"),), self.lead_refs(c)),
            stability_refs=self.stability_refs("detection_hours", "restart_hours"),
            usability_refs=self.usability_refs(profile),
        )

    def _billing_note(
        self, profile: Profile, c: Candidate, quote: Quote, billing: str, committed: bool, billed: Range, useful: Any
    ) -> str:
        """Where the platform's advantage comes from, in one sentence: fewer billed hours (a pool, job
        seconds) or a held cluster's automatic recovery."""
        shown = money_range(quote.cost.annual, profile.currency)
        hours = f"{num(billed.expected)} GPU-hours for {num(useful)} useful ones"
        figures = {"offer": c.label, "annual": shown, "billed": num(billed.expected), "useful": num(useful)}
        if billing == POOLED:
            pooled = self.value("pooled_utilization")
            return msg(
                "note.platform",
                f"Platform ({c.label}): {shown} a year; pooling bills {hours} "
                f"({pct(pooled.low)}–{pct(pooled.high)} pooled utilization).",
                **figures,
                pooled_low=pct(pooled.low),
                pooled_high=pct(pooled.high),
            )
        code = "note.platform_committed" if committed else f"note.platform_{billing}"
        text = {
            "note.platform_committed": "a commitment bills every hour of the GPUs held",
            "note.platform_job_seconds": "job-second billing bills only the jobs' time and their start-up",
            "note.platform_held_cluster": "the allocated cluster is billed for every hour it is held",
        }[code]
        return msg(
            code,
            f"Platform ({c.label}): {shown} a year; {text}: {hours}, with automatic node replacement and job resume.",
            **figures,
        )


#: how each billing prices the GPU-hours (``basis.platform_*``)
COMMITTED_BASIS = msg(
    "basis.platform_committed", "GPUs × 8,760 hours × price per GPU-hour × the whole terms that cover the horizon"
)
POOLED_BASIS = msg(
    "basis.platform_pooled",
    "min(GPUs × 8,760 hours, useful GPU-hours ÷ pooled utilization) × price per GPU-hour × the horizon's years",
)
JOB_SECONDS_BASIS = msg(
    "basis.platform_job_seconds",
    "min(GPUs × 8,760 hours, useful GPU-hours × (1 + a job's start-up minutes ÷ 60 ÷ a training run's hours)) × "
    "price per GPU-hour × the horizon's years",
)
HELD_CLUSTER_BASIS = msg(
    "basis.platform_held_cluster",
    "min(GPUs held × 8,760 hours, useful GPU-hours ÷ utilization of a held cluster) × price per GPU-hour × "
    "the horizon's years",
)


class AiComputePlatform(OptionPlugin):
    sdk = ">=4,<5"
    spec = OptionSpec(
        key=KEY,
        name="AI compute platform",
        description="A managed platform with pooled GPUs and smart scheduling, preset images, automatic "
        "fault detection, job migration and checkpoint management: compute in minutes, billed for "
        "the GPU-hours jobs use.",
        version=VERSION,
        price_plans=tuple(PLAN_TERM_YEARS),
        billings=(POOLED, JOB_SECONDS, HELD_CLUSTER),
    )
    kernel = PlatformKernel
    messages = OptionPlugin.catalogs("plugins", "locales/ai_compute_platform.{lang}.toml")


plugin = AiComputePlatform()
