"""The decision service: profile in, knowledge snapshot and option plugins, explained answer out."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from typing import Any

from app.api import schemas as s
from app.core import decision
from app.core.knowledge import Knowledge, MissingKnowledge
from app.core.model import METHODOLOGY_VERSION
from app.core.ranges import Range
from app.core.types import Assessment, Profile
from app.plugin_manager import OptionHost


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


def rng(r: Range) -> s.RangeRead:
    return s.RangeRead(round(r.low, 2), round(r.expected, 2), round(r.high, 2))


def rng4(r: Range) -> s.RangeRead:
    return s.RangeRead(round(r.low, 4), round(r.expected, 4), round(r.high, 4))


class Advisor:
    def __init__(
        self,
        host: OptionHost,
        knowledge: Callable[[], Knowledge | None],
        today: Callable[[], dt.date] = lambda: dt.datetime.now(dt.UTC).date(),
    ) -> None:
        self.host = host
        self._knowledge = knowledge
        self._today = today

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
            "as_of": req.as_of or self._today(),
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

    def evaluate(self, req: s.ProfileCreate, kb: Knowledge | None = None) -> s.Evaluation:
        kb = kb or self.knowledge()
        profile = self.to_profile(req, kb)
        weights = req.weights.model_dump() if req.weights else decision.default_weights(kb)
        result = decision.decide(profile, self._assess(profile, kb), kb, weights)
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
        )

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
