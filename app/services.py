"""The decision service: profile in, knowledge snapshot and option plugins, explained answer out."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

from app.api import insight_schemas as si
from app.api import schemas as s
from app.core import batch, decision
from app.core import insights as ins
from app.core.knowledge import Knowledge, MissingKnowledge
from app.core.model import METHODOLOGY_VERSION
from app.core.ranges import Range
from app.core.types import Assessment, Profile
from app.plugin_manager import OptionHost

T = TypeVar("T")


class DomainError(Exception):
    """An error the client can act on; mapped to problem details in app.api.errors."""

    status = 422
    slug = "unprocessable"
    title = "The request cannot be processed"

    def __init__(self, detail: str, *, field: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field


class UnknownReference(DomainError):
    slug = "unknown-reference"
    title = "The request refers to something the knowledge base does not have"


class NothingAssessable(DomainError):
    slug = "no-option-assessable"
    title = "No option could be assessed for this request"


class KnowledgeUnavailable(DomainError):
    status = 503
    slug = "knowledge-unavailable"
    title = "The knowledge base is not loaded"


CONFIDENCE_DRAWS = 1_000
CONFIDENCE_SEED = 0
DISTRIBUTION = "triangular(low, mode=expected, high) per knowledge-base range, independent draws"


def _nullable(values: Mapping[str, float | int | None]) -> si.NullableRange:
    return si.NullableRange(values.get("low"), values.get("expected"), values.get("high"))


def _crossing_statement(c: ins.Crossing) -> str:
    u, above = c.utilization["expected"], c.cheaper_above["expected"]
    if u is not None and above is not None:
        below = c.second if above == c.first else c.first
        return f"{above} is cheaper per useful GPU-hour above {u * 100:.0f}% utilization, {below} below it."
    if u is not None:
        return f"From {u * 100:.0f}% utilization on, both cost the same per useful GPU-hour (every hour is paid)."
    if above is not None:
        return f"{above} is cheaper per useful GPU-hour at every utilization."
    return "Both cost the same per useful GPU-hour at every utilization."


def _cheapest_statement(gpus: Mapping[str, int | None], utilization: float) -> str:
    expected = gpus["expected"]
    if expected is None:
        return f"At {utilization * 100:.0f}% utilization owning is not the cheapest option up to 32,768 GPUs."
    return f"At {utilization * 100:.0f}% utilization owning is the cheapest option from {expected:,} GPUs."


def _payback_statement(p: ins.Payback, horizon_years: float) -> str:
    m = p.months["expected"]
    if m is None:
        return f"Against {p.alternative}, an owned cluster never pays for itself."
    if not p.within_horizon["expected"]:
        return (
            f"Against {p.alternative}, an owned cluster pays for itself after {m:,.0f} months: never within "
            f"the {horizon_years:g}-year horizon."
        )
    return f"Against {p.alternative}, an owned cluster pays for itself after {m:,.0f} months."


def rng(r: Range) -> s.RangeRead:
    return s.RangeRead(round(r.low, 2), round(r.expected, 2), round(r.high, 2))


def rng4(r: Range) -> s.RangeRead:
    return s.RangeRead(round(r.low, 4), round(r.expected, 4), round(r.high, 4))


MEMO_SIZE = 256
#: batches up to this size are evaluated one profile at a time (memoised), larger ones vectorised
SMALL_BATCH = 8


def _scored(e: s.Evaluation) -> s.ScoredResult:
    return s.ScoredResult(
        e.recommended_option,
        [
            s.ScoredEntry(
                r.option,
                r.rank,
                r.score,
                r.scores,
                r.fit,
                r.feasible,
                None if r.cost is None else r.cost.annual_cost.expected,
                None if r.cost is None else r.cost.total_cost.expected,
                None if r.cost is None else r.cost.cost_per_useful_gpu_hour.expected,
                r.error,
            )
            for r in e.ranking
        ],
    )


class Memo:
    """A small LRU of computed answers, keyed by everything they depend on.

    Safe to share between API keys: an answer depends on the request, the knowledge version and
    the day only, and every caller has passed its scope check before asking."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, object] = OrderedDict()

    def get(self, key: Hashable) -> Any:
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
        return found

    def put(self, key: Hashable, value: T) -> T:
        self._items[key] = value
        if len(self._items) > self.size:
            self._items.popitem(last=False)
        return value


class Advisor:
    def __init__(
        self,
        host: OptionHost,
        knowledge: Callable[[], Knowledge | None],
        today: Callable[[], dt.date] = lambda: dt.datetime.now(dt.UTC).date(),
    ) -> None:
        self.host = host
        self._memo = Memo(MEMO_SIZE)
        self._knowledge = knowledge
        self._today = today

    def today(self) -> dt.date:
        """The default ``as_of``: today in UTC (injectable for tests)."""
        return self._today()

    def loaded(self) -> Knowledge | None:
        """The snapshot in memory, if any."""
        return self._knowledge()

    def knowledge(self) -> Knowledge:
        kb = self._knowledge()
        if kb is None:
            raise KnowledgeUnavailable("no knowledge version is loaded yet: run `compute-advisor seeds load`")
        return kb

    def options(self) -> list[s.OptionRead]:
        return [
            s.OptionRead(o.spec.key, o.spec.name, o.spec.description, o.plugin_name, o.plugin_version)
            for o in self.host.options.values()
        ]

    def to_profile(self, req: s.ComparisonCreate, kb: Knowledge) -> Profile:
        if req.currency not in kb.currencies:
            raise UnknownReference(
                f"no prices in {req.currency}; the knowledge base has {', '.join(sorted(kb.currencies))}",
                field="currency",
            )
        if req.gpu_model is not None and req.gpu_model not in kb.gpus:
            raise UnknownReference(f"unknown gpu_model '{req.gpu_model}' (see /v1/gpus)", field="gpu_model")
        values: dict[str, Any] = {
            "gpus": req.gpus,
            "utilization": req.utilization,
            "horizon_years": req.horizon_years,
            "as_of": req.as_of or self.today(),
            "rental_plan": req.rental_plan,
            "currency": req.currency,
            "gpu_model": req.gpu_model,
        }
        if isinstance(req, s.ProfileCreate):
            values.update(
                team_size=req.team_size,
                ops_team=req.ops_team,
                data_security=req.data_security,
                start_within_days=req.start_within_days,
                capex_budget=req.capex_budget,
            )
        return Profile(**values)

    def _assess(self, profile: Profile, kb: Knowledge) -> list[decision.Outcome]:
        outcomes = decision.assess_all(self.host.options, lambda o: self.host.assess(o, profile, kb))
        if all(o.assessment is None for o in outcomes):
            raise NothingAssessable(
                "; ".join(f"{o.option}: {o.error}" for o in outcomes),
                field="gpu_model" if profile.gpu_model else None,
            )
        return outcomes

    def compare(self, req: s.ComparisonCreate) -> s.ComparisonRead:
        kb = self.knowledge()
        key = ("compare", kb.version, self.today(), req)
        cached = self._memo.get(key)
        if cached is None:
            cached = self._memo.put(key, self._compare(req, kb))
        return cached  # type: ignore[no-any-return]

    def _compare(self, req: s.ComparisonCreate, kb: Knowledge) -> s.ComparisonRead:
        profile = self.to_profile(req, kb)
        items = []
        for o in self._assess(profile, kb):
            opt = self.host.options[o.option]
            a = o.assessment
            if a is None:
                items.append(
                    s.ComparisonItem(
                        o.option,
                        opt.spec.name,
                        opt.plugin_name,
                        None,
                        None,
                        None,
                        None,
                        None,
                        None,
                        None,
                        [],
                        o.error,
                    )
                )
                continue
            c = a.cost
            items.append(
                s.ComparisonItem(
                    option=o.option,
                    name=opt.spec.name,
                    plugin=opt.plugin_name,
                    annual_cost=rng(c.annual),
                    total_cost=rng(c.total),
                    upfront_cost=rng(c.upfront),
                    cost_per_useful_gpu_hour=rng4(c.per_useful_gpu_hour),
                    useful_gpu_hours_per_year=round(c.useful_gpu_hours, 2),
                    paid_gpu_hours_per_year=rng(c.paid_gpu_hours),
                    committed=c.committed,
                    breakdown=[
                        s.LineItemRead(
                            li.key,
                            li.label,
                            rng(li.annual),
                            rng(li.upfront),
                            li.basis,
                            [s.SourceRead(r.table, r.ref, r.source, r.quality) for r in li.sources],
                        )
                        for li in c.breakdown
                    ],
                )
            )
        return s.ComparisonRead(
            kb.version,
            METHODOLOGY_VERSION,
            profile.currency,
            profile.as_of,
            profile.gpus,
            profile.utilization,
            profile.horizon_years,
            profile.rental_plan,
            items,
        )

    def evaluate(self, req: s.ProfileCreate, kb: Knowledge | None = None, *, insights: bool = False) -> s.Evaluation:
        """Rank the options for one profile; ``insights`` adds the confidence block and the
        own-versus-rent break-even sentence (recommendations carry them, batch evaluations do not).

        Answers are pure functions of the request, the knowledge version and the day, so the last
        few hundred are remembered (``Memo``); batch evaluations bypass the memo."""
        kb = kb or self.knowledge()
        key = ("evaluate", kb.version, self.today(), insights, req)
        cached = self._memo.get(key)
        if cached is None:
            cached = self._memo.put(key, self._evaluate(req, kb, insights))
        return cached  # type: ignore[no-any-return]

    def _evaluate(self, req: s.ProfileCreate, kb: Knowledge, insights: bool) -> s.Evaluation:
        profile = self.to_profile(req, kb)
        weights = self._weights(req, kb)
        result = decision.decide(profile, self._assess(profile, kb), kb, weights)
        confidence = break_even = None
        if insights:
            confidence = self._confidence(profile, kb, weights, CONFIDENCE_DRAWS, CONFIDENCE_SEED, base=result)
            break_even = ins.own_vs_rent_sentence(self.host.assess, profile, kb)
        profile_out = {
            k: (v.isoformat() if isinstance(v, dt.date) else v) for k, v in dataclasses.asdict(profile).items()
        }
        return s.Evaluation(
            recommended_option=result.recommended_option,
            knowledge_version=kb.version,
            methodology_version=METHODOLOGY_VERSION,
            profile=profile_out,
            weights=s.DimensionScores(**{k: round(v, 4) for k, v in result.weights.items()}),
            ranking=[self._entry(r) for r in result.ranking],
            confidence=confidence,
            break_even=break_even,
        )

    def evaluate_many(self, req: s.EvaluationCreate) -> s.EvaluationsRead:
        """Rank the options for every profile; not stored. Large batches are vectorised
        (``app.core.batch``); a few profiles go one at a time through the memoised path, where
        NumPy's per-call overhead would cost more than it saves. Both give the same rankings."""
        kb = self.knowledge()
        if len(req.profiles) <= SMALL_BATCH:
            results = [_scored(self.evaluate(p, kb)) for p in req.profiles]
        else:
            profiles = [self.to_profile(p, kb) for p in req.profiles]
            weights = [self._weights(p, kb) for p in req.profiles]
            results = [
                s.ScoredResult(
                    r.recommended_option,
                    [
                        s.ScoredEntry(
                            e.option,
                            e.rank,
                            e.score,
                            s.DimensionScores(**e.scores),
                            e.fit,
                            e.feasible,
                            e.annual_cost,
                            e.total_cost,
                            e.cost_per_useful_gpu_hour,
                            e.error,
                        )
                        for e in r.ranking
                    ],
                )
                for r in batch.evaluate(profiles, weights, kb, list(self.host.options), self.host.assess)
            ]
        full = [self._evaluate(p, kb, False) for p in req.profiles] if req.detail == "full" else None
        return s.EvaluationsRead(kb.version, METHODOLOGY_VERSION, req.detail, results, full)

    @staticmethod
    def _weights(req: s.ProfileCreate, kb: Knowledge) -> dict[str, float]:
        return req.weights.model_dump() if req.weights else decision.default_weights(kb)

    def _confidence(
        self,
        profile: Profile,
        kb: Knowledge,
        weights: dict[str, float],
        draws: int,
        seed: int,
        base: decision.Decision | None = None,
    ) -> s.ConfidenceRead:
        u = ins.uncertainty(
            self.host.assess, profile, kb, list(self.host.options), weights, draws=draws, seed=seed, base=base
        )

        def pct(q: dict[str, float]) -> s.Percentiles:
            return s.Percentiles(q["p10"], q["p50"], q["p90"])

        return s.ConfidenceRead(
            draws=u.draws,
            seed=u.seed,
            distribution=DISTRIBUTION,
            options={
                o: s.OptionUncertaintyRead(pct(dict(x.annual_cost)), pct(dict(x.total_cost)), x.probability_first)
                for o, x in u.options.items()
            },
            errors=dict(u.errors),
        )

    # ---- insights -------------------------------------------------------------------------

    def break_even(self, req: s.ProfileCreate) -> si.BreakEvenRead:
        kb = self.knowledge()
        profile = self.to_profile(req, kb)
        self._assess(profile, kb)  # 422 when no option can be assessed at all
        be = ins.break_even(self.host.assess, profile, kb, list(self.host.options))
        return si.BreakEvenRead(
            knowledge_version=kb.version,
            methodology_version=METHODOLOGY_VERSION,
            utilization=profile.utilization,
            gpus=profile.gpus,
            crossings=[
                si.CrossingRead(
                    c.first, c.second, _nullable(c.utilization), dict(c.cheaper_above), _crossing_statement(c)
                )
                for c in be.crossings
            ],
            own_cheapest_from_gpus=_nullable(be.own_cheapest_from_gpus),
            own_cheapest_statement=_cheapest_statement(be.own_cheapest_from_gpus, profile.utilization),
            paybacks=[
                si.PaybackRead(
                    p.alternative,
                    _nullable(p.months),
                    dict(p.within_horizon),
                    _payback_statement(p, profile.horizon_years),
                )
                for p in be.paybacks
            ],
            errors=dict(be.errors),
        )

    def sensitivity(self, req: s.ProfileCreate) -> si.SensitivityRead:
        kb = self.knowledge()
        profile = self.to_profile(req, kb)
        self._assess(profile, kb)
        se = ins.sensitivity(self.host.assess, profile, kb, list(self.host.options), self._weights(req, kb))
        wc, uc = se.weight_change, se.utilization_change
        return si.SensitivityRead(
            knowledge_version=kb.version,
            methodology_version=METHODOLOGY_VERSION,
            recommended_option=se.recommended_option,
            baseline={o: si.BaselineRead(round(c, 4), round(v, 2)) for o, (c, v) in se.baseline.items()},
            inputs=[
                si.InputSensitivityRead(
                    i.kind,
                    i.ref,
                    i.label,
                    i.unit,
                    i.low,
                    i.high,
                    i.swing,
                    {
                        o: si.EffectRead(e.cost_low, e.cost_high, e.score_low, e.score_high)
                        for o, e in i.effects.items()
                    },
                )
                for i in se.inputs
            ],
            weight_change=None
            if wc is None
            else si.WeightChangeRead(
                wc.dimension,
                wc.shift,
                dict(wc.weights),
                wc.recommended_option,
                f"Moving {wc.shift * 100:.1f}% of the weight onto {wc.dimension} makes {wc.recommended_option} "
                "the recommendation.",
            ),
            utilization_change=None
            if uc is None
            else si.UtilizationChangeRead(
                uc.utilization,
                uc.recommended_option,
                f"At {uc.utilization * 100:.0f}% utilization (now {profile.utilization * 100:.0f}%), "
                f"{uc.recommended_option} becomes the recommendation.",
            ),
        )

    def uncertainty(self, req: s.ProfileCreate, *, draws: int, seed: int) -> si.UncertaintyRead:
        kb = self.knowledge()
        profile = self.to_profile(req, kb)
        self._assess(profile, kb)
        c = self._confidence(profile, kb, self._weights(req, kb), draws, seed)
        return si.UncertaintyRead(kb.version, METHODOLOGY_VERSION, c.draws, c.seed, c.distribution, c.options, c.errors)

    def _entry(self, r: decision.Ranked) -> s.RankingEntry:
        a: Assessment | None = r.outcome.assessment
        return s.RankingEntry(
            option=r.option,
            name=self.host.options[r.option].spec.name,
            rank=r.rank,
            score=r.score,
            scores=s.DimensionScores(**r.scores),
            fit=r.fit,
            feasible=r.feasible,
            reasons=list(r.reasons),
            rules_applied=[s.AppliedRuleRead(x.key, x.effect, x.points, x.reason) for x in r.rules],
            cost=None
            if a is None
            else s.CostRead(
                rng(a.cost.annual), rng(a.cost.total), rng(a.cost.upfront), rng4(a.cost.per_useful_gpu_hour)
            ),
            efficiency=None
            if a is None
            else s.EfficiencyRead(
                rng4(a.efficiency.lead_time_days),
                rng(a.efficiency.setup_minutes_per_run),
                rng4(a.efficiency.execution_efficiency),
                rng4(a.efficiency.productive_share),
            ),
            stability=None
            if a is None
            else s.StabilityRead(
                rng(a.stability.interruptions_per_year),
                rng(a.stability.hours_lost_per_interruption),
                rng(a.stability.lost_gpu_hours_per_year),
                rng4(a.stability.goodput),
            ),
            usability=None
            if a is None
            else s.UsabilityRead(
                rng(a.usability.infra_fte_needed),
                rng(a.usability.infra_fte_unmet),
                a.usability.setup_steps,
                rng4(a.usability.model_focus_share),
            ),
            error=r.outcome.error,
        )


__all__ = [
    "Advisor",
    "DomainError",
    "KnowledgeUnavailable",
    "MissingKnowledge",
    "NothingAssessable",
    "UnknownReference",
]
