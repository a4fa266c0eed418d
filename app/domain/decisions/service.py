"""Price comparisons, evaluations and recommendations: from a request to its answer.

Answers are pure functions of the request, the knowledge version and the day, so each worker
remembers its last few hundred (an LRU keyed by all three); batch evaluations bypass it. The memo
is shared between API keys: every caller has passed its scope check before asking, and nothing
in an answer depends on who asks.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
from collections.abc import Hashable, Mapping
from typing import Any, NamedTuple

from cachetools import LRUCache
from msgspec import UNSET

from app.core.errors import TooMuchWork
from app.core.knowledge import Knowledge
from app.core.model import METHODOLOGY_VERSION
from app.core.types import Alternative, Profile
from app.domain.decisions import schemas as s
from app.domain.decisions import scored
from app.domain.shared import demand
from app.domain.shared.advisor import Advisor
from app.domain.shared.convert import (
    confidence_read,
    cost_read,
    line_read,
    offer_read,
    option_pflop_hour_read,
    optional_range,
    pflop_hour_read,
    profile_head,
    range_read,
)
from app.domain.shared.demand import ComparisonCreate
from app.domain.shared.schemas import DimensionScores, ProfileCreate
from app.domain.shared.statements import break_even_sentence
from app.engine import batch, decision
from app.engine import insights as ins
from app.i18n import DEFAULT_LANG, Lang, code_of, name_of, render
from app.web import metrics

MEMO_SIZE = 256
#: batches up to this size are evaluated one profile at a time (memoised), larger ones vectorised
SMALL_BATCH = 8
#: a recommendation's confidence block: Monte Carlo draws and seed (samples drawn once per knowledge version)
CONFIDENCE_DRAWS = 1_000
CONFIDENCE_SEED = 0
NO_COST: dict[str, Any] = dict.fromkeys(
    (
        "annual_cost",
        "total_cost",
        "upfront_cost",
        "cost_per_useful_gpu_hour",
        "useful_gpu_hours_per_year",
        "paid_gpu_hours_per_year",
        "committed",
    )
)


class Decided(NamedTuple):
    """One profile decided: its assessments, the weights it was ranked with, and its ranking."""

    found: demand.Assessed
    weights: Mapping[str, float]
    result: decision.Decision


class DecisionService:
    def __init__(self, advisor: Advisor, *, daily_quota: int | None = None) -> None:
        self.advisor = advisor
        #: stored recommendations per API key and UTC day (``RECOMMENDATION_DAILY_QUOTA``)
        self.daily_quota = daily_quota
        self._memo: LRUCache[Hashable, Any] = LRUCache(MEMO_SIZE)
        #: the memo is read and written from the event loop and from the worker pool's threads
        self._memo_lock = threading.Lock()

    def _remembered(self, key: tuple[Hashable, ...], compute: Any) -> Any:
        """The memo's answer for ``key`` (``(kind, knowledge version, …)``), else ``compute()``'s, remembered."""
        kind = str(key[0])
        with self._memo_lock:
            found = self._memo.get(key)
        if found is None:
            with self.advisor.tracer.start_as_current_span(
                f"decision.{kind}", attributes={"knowledge.version": str(key[1])}
            ):
                found = compute()
            with self._memo_lock:
                self._memo[key] = found
            metrics.evaluation_computed(kind)
        else:
            metrics.memo_hit(kind)
        return found

    # ---- price comparisons -----------------------------------------------------------------

    def comparison_identity(self, req: ComparisonCreate) -> str:
        """The request with its defaults spelled out (``as_of`` today): what a comparison depends on."""
        dated = req.model_copy(update={"as_of": req.as_of or self.advisor.today()})
        return dated.model_dump_json(exclude={"demand"} if req.demand is None else None)

    def compare(
        self, req: ComparisonCreate, lang: Lang = DEFAULT_LANG, identity: str | None = None
    ) -> s.ComparisonRead:
        """The comparison ``req`` asks for, remembered under its ``identity`` (``comparison_identity``: made here
        unless the caller made it already, for the answer's ETag)."""
        kb = self.advisor.knowledge()
        if identity is None:
            identity = self.comparison_identity(req)
        result: s.ComparisonRead = self._remembered(
            ("comparison", kb.version, self.advisor.today(), lang, identity),
            lambda: self._compare(req, kb, lang),
        )
        return result

    def option_name(self, option: str, lang: Lang) -> str:
        """The option's name in ``lang`` (the plugin's own name where the catalogs lack it)."""
        return name_of(f"option.{option}.name", lang, self.advisor.options[option].spec.name)

    def _segments(self, found: demand.Assessed, option: str, currency: str, lang: Lang) -> Any:
        """The option's single portfolio's segments, with a demand of several phases (else absent)."""
        if found.portfolios is None:
            return UNSET
        return demand.segment_reads(found.portfolios[option], currency, lambda o: self.option_name(o, lang))

    def _compare(self, req: ComparisonCreate, kb: Knowledge, lang: Lang) -> s.ComparisonRead:
        found = demand.assessed(self.advisor, req, kb)
        profile = found.profile
        on_demand = found.portfolios is not None
        items = []
        for o in found.outcomes:
            opt = self.advisor.options[o.option]
            a = o.assessment
            head: dict[str, Any] = {
                "option": o.option,
                "name": self.option_name(o.option, lang),
                "plugin": opt.plugin_name,
            }
            if a is None:
                items.append(s.ComparisonItem(**head, **NO_COST, breakdown=[], error=o.error, error_code=o.error_code))
                continue
            c = a.cost
            cur, years = profile.currency, profile.horizon_years
            reasons = [render(r, lang) for r in decision.broken(a)]
            items.append(
                s.ComparisonItem(
                    **head,
                    annual_cost=range_read(c.annual),
                    total_cost=range_read(c.total),
                    upfront_cost=range_read(c.upfront),
                    cost_per_useful_gpu_hour=range_read(c.per_useful_gpu_hour, 4),
                    useful_gpu_hours_per_year=round(float(c.useful_gpu_hours), 2),
                    paid_gpu_hours_per_year=None if on_demand else range_read(c.paid_gpu_hours),
                    committed=c.committed,
                    breakdown=[line_read(li, years, lang) for li in c.breakdown],
                    npv_cost=optional_range(c.npv),
                    equivalent_annual_cost=optional_range(c.equivalent_annual),
                    cost_per_effective_gpu_hour=optional_range(c.per_effective_gpu_hour, 4),
                    cost_per_useful_pflop_hour=option_pflop_hour_read(kb, a, profile),
                    effective_extras=[line_read(li, years, lang) for li in c.extras],
                    offer=None if a.offer is None else offer_read(a.offer, cur, lang),
                    alternatives=[_alternative(alt, cur, lang, kb, profile.precision) for alt in a.alternatives],
                    feasible=not reasons,
                    infeasible_reasons=reasons,
                    segments=self._segments(found, o.option, cur, lang),
                )
            )
        return s.ComparisonRead(
            **profile_head(kb, profile),
            items=items,
            demand=UNSET if found.phases is None else demand.phase_reads(found.phases),
        )

    # ---- evaluations -------------------------------------------------------------------------

    def evaluate(
        self, req: ProfileCreate, kb: Knowledge | None = None, *, insights: bool = False, lang: Lang = DEFAULT_LANG
    ) -> s.Evaluation:
        """Rank the options for one profile; ``insights`` adds the confidence block and the
        own-versus-rent break-even sentence (recommendations carry them, batch evaluations do not);
        sentences in ``lang``."""
        kb = kb or self.advisor.knowledge()
        result: s.Evaluation = self._remembered(
            ("evaluation", kb.version, self.advisor.today(), insights, lang, req.model_dump_json()),
            lambda: self._evaluate(req, kb, insights, lang),
        )
        return result

    def _decided(self, req: ProfileCreate, kb: Knowledge) -> Decided:
        """The profile's assessments, its weights and its ranking: what its evaluation and its scores read."""
        found = demand.assessed(self.advisor, req, kb)
        weights = self.advisor.weights(req, kb)
        return Decided(found, weights, decision.decide(found.profile, found.outcomes, kb, weights))

    def _evaluate(self, req: ProfileCreate, kb: Knowledge, insights: bool, lang: Lang) -> s.Evaluation:
        return self._evaluation(self._decided(req, kb), kb, insights, lang)

    def _evaluation(self, decided: Decided, kb: Knowledge, insights: bool, lang: Lang) -> s.Evaluation:
        found, weights, result = decided
        profile = found.profile
        confidence = sentence = None
        # Monte Carlo and the break-even answer one profile: not a demand that changes over the horizon
        if insights and found.portfolios is None:
            u = ins.uncertainty(
                self.advisor,
                profile,
                kb,
                list(self.advisor.options),
                weights,
                draws=CONFIDENCE_DRAWS,
                seed=CONFIDENCE_SEED,
                base=result,
            )
            confidence = confidence_read(u)
            result = ins.explained(result, u)  # one story: why the first is not the most often best, if so
            said = self._break_even_sentence(profile, kb)
            sentence = None if said is None else render(said, lang)
        return s.Evaluation(
            recommended_option=result.recommended_option,
            knowledge_version=kb.version,
            methodology_version=METHODOLOGY_VERSION,
            profile=_profile_echo(profile),
            weights=DimensionScores(**{k: round(v, 4) for k, v in result.weights.items()}),
            ranking=[self._entry(r, profile, kb, lang, found) for r in result.ranking],
            confidence=confidence,
            break_even=sentence,
            language=lang,
            demand=UNSET if found.phases is None else demand.phase_reads(found.phases),
        )

    def _break_even_sentence(self, profile: Profile, kb: Knowledge) -> str | None:
        found = self.advisor.own_versus_on_demand(profile, kb)
        return None if found is None else break_even_sentence(found, profile.gpus)

    @staticmethod
    def is_heavy(req: s.EvaluationCreate) -> bool:
        """Whether a batch is computed in the worker pool: more than a few profiles, or full detail."""
        return len(req.profiles) > SMALL_BATCH or req.detail == "full"

    def evaluate_many(self, req: s.EvaluationCreate, lang: Lang = DEFAULT_LANG) -> s.EvaluationsRead:
        """Rank the options for every profile; not stored. Large batches are vectorised
        (``app.engine.batch``); a few profiles go one at a time through the memoised path, where
        NumPy's per-call overhead would cost more than it saves. Both give the same rankings."""
        if req.detail == "full" and len(req.profiles) > s.MAX_FULL_PROFILES:
            raise TooMuchWork(
                f'detail "full" answers at most {s.MAX_FULL_PROFILES} profiles, not {len(req.profiles)}: '
                'split the batch, or ask for detail "scores" (up to '
                f"{s.MAX_BATCH_PROFILES})",
                field="profiles",
            )
        kb = self.advisor.knowledge()
        full: list[s.Evaluation] | None = None
        if len(req.profiles) <= SMALL_BATCH and req.detail == "full":  # each profile decided once, for both
            with self.advisor.tracer.start_as_current_span(
                "decision.full", attributes={"knowledge.version": kb.version}
            ):
                decided = [self._decided(p, kb) for p in req.profiles]
                results = [scored.ranking(d.result) for d in decided]
                full = [self._evaluation(d, kb, False, lang) for d in decided]
            metrics.evaluation_computed("evaluation", len(full))
        elif len(req.profiles) <= SMALL_BATCH:
            results = [self.scores(p, kb) for p in req.profiles]
        else:
            with self.advisor.tracer.start_as_current_span(
                "decision.batch", attributes={"knowledge.version": kb.version, "batch.profiles": len(req.profiles)}
            ):
                profiles = self.advisor.profiles(req.profiles, kb)
                weights = [self.advisor.weights(p, kb) for p in req.profiles]
                results = scored.results(
                    batch.evaluate(profiles, weights, kb, list(self.advisor.options), self.advisor.choose)
                )
            metrics.evaluation_computed("batch", len(profiles))
            if req.detail == "full":
                with self.advisor.tracer.start_as_current_span(
                    "decision.full", attributes={"knowledge.version": kb.version}
                ):
                    full = [self._evaluate(p, kb, False, lang) for p in req.profiles]
                metrics.evaluation_computed("evaluation", len(full))
        return s.EvaluationsRead(
            knowledge_version=kb.version,
            methodology_version=METHODOLOGY_VERSION,
            detail=req.detail,
            results=results,
            evaluations=full,
        )

    def scores(self, req: ProfileCreate, kb: Knowledge) -> s.ScoredResult:
        """One profile's ranking as a batch's ``results`` answer it: the evaluation's ranking, scores and
        figures (``decision.decide``), without its sentences — they are composed only where answered."""
        result: s.ScoredResult = self._remembered(
            ("evaluation", kb.version, self.advisor.today(), "scores", req.model_dump_json()),
            lambda: self._scores(req, kb),
        )
        return result

    def _scores(self, req: ProfileCreate, kb: Knowledge) -> s.ScoredResult:
        return scored.ranking(self._decided(req, kb).result)

    def _entry(
        self, r: decision.Ranked, profile: Profile, kb: Knowledge, lang: Lang, found: demand.Assessed
    ) -> s.RankingEntry:
        a, currency = r.outcome.assessment, profile.currency
        head: dict[str, Any] = {
            "option": r.option,
            "name": self.option_name(r.option, lang),
            "rank": r.rank,
            "score": r.score,
            "scores": DimensionScores(**r.scores),
            "fit": r.fit,
            "feasible": r.feasible,
            "reasons": [render(x, lang) for x in r.reasons],
            "reason_codes": [s.ReasonCode(**code_of(x, lang)) for x in r.reasons],
            "rules_applied": [
                s.AppliedRuleRead(key=x.key, effect=x.effect, points=x.points, reason=render(x.reason, lang))
                for x in r.rules
            ],
            "error": r.outcome.error,
            "error_code": r.outcome.error_code,
        }
        if a is None:
            return s.RankingEntry(**head, cost=None, efficiency=None, stability=None, usability=None)
        e, st, u = a.efficiency, a.stability, a.usability
        return s.RankingEntry(
            **head,
            segments=self._segments(found, r.option, currency, lang),
            cost=cost_read(a.cost),
            offer=None if a.offer is None else offer_read(a.offer, currency, lang),
            cost_per_useful_pflop_hour=option_pflop_hour_read(kb, a, profile),
            efficiency=s.EfficiencyRead(
                lead_time_days=range_read(e.lead_time_days, 4),
                setup_minutes_per_run=range_read(e.setup_minutes_per_run),
                execution_efficiency=range_read(e.execution_efficiency, 4),
                productive_share=range_read(e.productive_share, 4),
            ),
            stability=s.StabilityRead(
                interruptions_per_year=range_read(st.interruptions_per_year),
                hours_lost_per_interruption=range_read(st.hours_lost_per_interruption),
                lost_gpu_hours_per_year=range_read(st.lost_gpu_hours_per_year),
                goodput=range_read(st.goodput, 4),
                checkpoint_interval_hours=optional_range(st.checkpoint_interval_hours, 3),
            ),
            usability=s.UsabilityRead(
                infra_fte_needed=range_read(u.infra_fte_needed),
                infra_fte_unmet=range_read(u.infra_fte_unmet),
                setup_steps=render(u.setup_steps, lang),
                model_focus_share=range_read(u.model_focus_share, 4),
            ),
        )


def _alternative(alt: Alternative, currency: str, lang: Lang, kb: Knowledge, precision: str) -> s.AlternativeRead:
    c = alt.cost
    return s.AlternativeRead(
        offer=offer_read(alt.offer, currency, lang),
        annual_cost=range_read(c.annual),
        total_cost=range_read(c.total),
        upfront_cost=range_read(c.upfront),
        cost_per_useful_gpu_hour=range_read(c.per_useful_gpu_hour, 4),
        cost_per_effective_gpu_hour=optional_range(c.per_effective_gpu_hour, 4),
        feasible=alt.feasible,
        reasons=[render(r, lang) for r in alt.reasons],
        cost_per_useful_pflop_hour=pflop_hour_read(kb, c.per_useful_gpu_hour, alt.offer.gpu_model, precision),
    )


#: the profile's fields an evaluation echoes, in order (``option_fields`` as an object of its own)
_ECHOED = tuple(f.name for f in dataclasses.fields(Profile) if f.name != "option_fields")


def _profile_echo(profile: Profile) -> dict[str, Any]:
    """The profile an evaluation was computed for: its fields, and the options' own fields as an object
    where it has any (``option_fields``)."""
    echo = {}
    for k in _ECHOED:  # its fields are numbers, words and tuples of words: read as they are, not deep-copied
        v = getattr(profile, k)
        echo[k] = v.isoformat() if isinstance(v, dt.date) else v
    if profile.option_fields:
        echo["option_fields"] = dict(profile.option_fields)
    return echo
