"""Break-even, sensitivity and uncertainty for a profile: the core's insights, as answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from app.core.model import METHODOLOGY_VERSION
from app.domain.insights import charts
from app.domain.insights import schemas as si
from app.domain.shared import statements
from app.domain.shared.advisor import Advisor
from app.domain.shared.convert import confidence_read, profile_head, range_read
from app.domain.shared.schemas import ProfileCreate
from app.engine import decision
from app.engine import insights as ins
from app.engine.insights import Crossing
from app.i18n import DEFAULT_LANG, Lang, name_of, render


def _nullable(values: Mapping[str, float | int | None]) -> si.NullableRange:
    return si.NullableRange(low=values.get("low"), expected=values.get("expected"), high=values.get("high"))


def _crossing(c: Crossing, lang: Lang) -> dict[str, Any]:
    """Where two options' costs cross, as both answers show it: the pair, where (null: never), which one is
    cheaper above it, and in words."""
    return {
        "first": c.first,
        "second": c.second,
        "utilization": _nullable(c.utilization),
        "cheaper_above": dict(c.cheaper_above),
        "statement": render(statements.crossing_statement(c), lang),
    }


class InsightService:
    def __init__(self, advisor: Advisor) -> None:
        self.advisor = advisor

    def break_even(self, req: ProfileCreate, lang: Lang = DEFAULT_LANG) -> si.BreakEvenRead:
        kb = self.advisor.knowledge()
        profile = self.advisor.profile(req, kb)
        self.advisor.outcomes(profile, kb)  # 422 when no option can be assessed at all
        be = ins.break_even(
            self.advisor,
            profile,
            kb,
            pairs=self.advisor.pairs(),
            owner=self.advisor.owner(),
            gpus_per_server=kb.server_for(profile.gpu_model).gpus_per_server,
        )
        return si.BreakEvenRead(
            knowledge_version=kb.version,
            methodology_version=METHODOLOGY_VERSION,
            utilization=profile.utilization,
            gpus=profile.gpus,
            crossings=[si.CrossingRead(**_crossing(c, lang)) for c in be.crossings],
            own_cheapest_from_gpus=_nullable(be.own_cheapest_from_gpus),
            own_cheapest_statement=render(
                statements.cheapest_statement(be.own_cheapest_from_gpus, profile.utilization), lang
            ),
            paybacks=[
                si.PaybackRead(
                    alternative=p.alternative,
                    months=_nullable(p.months),
                    within_horizon=dict(p.within_horizon),
                    statement=render(statements.payback_statement(p, profile.horizon_years), lang),
                )
                for p in be.paybacks
            ],
            errors=dict(be.errors),
            error_codes=dict(be.error_codes),
        )

    def cost_curves(self, req: ProfileCreate, lang: Lang = DEFAULT_LANG) -> si.CostCurvesRead:
        kb = self.advisor.knowledge()
        profile = self.advisor.profile(req, kb)
        self.advisor.outcomes(profile, kb)
        cc = ins.cost_curves(self.advisor, profile, kb, self._curve_order())
        own_rent = self.advisor.own_versus_on_demand(profile, kb)
        sentence = None if own_rent is None else statements.break_even_sentence(own_rent, profile.gpus)
        return si.CostCurvesRead(
            **profile_head(kb, profile),
            series=[
                si.CostSeriesRead(
                    option=o,
                    name=name_of(f"option.{o}.name", lang, self.advisor.options[o].spec.name),
                    points=[
                        si.CurvePointRead(
                            utilization=round(p.utilization, 6),
                            cost_per_useful_gpu_hour=range_read(p.cost_per_useful_gpu_hour, 4),
                        )
                        for p in points
                    ],
                )
                for o, points in cc.series.items()
            ],
            break_even=[
                si.BreakEvenPointRead(
                    **_crossing(c, lang), cost_per_useful_gpu_hour=None if cost is None else round(cost, 4)
                )
                for c, cost in zip(cc.crossings, cc.crossing_costs, strict=True)
            ],
            errors=dict(cc.errors),
            error_codes=dict(cc.error_codes),
            break_even_sentence=None if sentence is None else render(sentence, lang),
        )

    def option_names(self) -> dict[str, str]:
        """Each loaded option's name, as its plugin gives it."""
        return {k: o.spec.name for k, o in self.advisor.options.items()}

    def _curve_order(self) -> list[str]:
        """The options in the order ``/v1/break-even`` pairs them (the owner of hardware first)."""
        return list(dict.fromkeys(v.option for v in self.advisor.variants()))

    def sensitivity(self, req: ProfileCreate, lang: Lang = DEFAULT_LANG) -> si.SensitivityRead:
        kb = self.advisor.knowledge()
        profile = self.advisor.profile(req, kb)
        self.advisor.outcomes(profile, kb)
        se = ins.sensitivity(self.advisor, profile, kb, list(self.advisor.options), self.advisor.weights(req, kb))
        names = self.option_names()
        wc, uc = se.weight_change, se.utilization_change
        return si.SensitivityRead(
            knowledge_version=kb.version,
            methodology_version=METHODOLOGY_VERSION,
            recommended_option=se.recommended_option,
            baseline={
                o: si.BaselineRead(cost_per_useful_gpu_hour=round(float(c), 4), score=round(float(v), 2))
                for o, (c, v) in se.baseline.items()
            },
            inputs=[
                si.InputSensitivityRead(
                    kind=i.kind,
                    ref=i.ref,
                    label=charts.input_label(i.kind, i.ref, i.label, lang, names),
                    unit=i.unit,
                    low=i.low,
                    high=i.high,
                    swing=i.swing,
                    effects={
                        o: si.EffectRead(
                            cost_per_useful_gpu_hour_low=e.cost_low,
                            cost_per_useful_gpu_hour_high=e.cost_high,
                            score_low=e.score_low,
                            score_high=e.score_high,
                        )
                        for o, e in i.effects.items()
                    },
                )
                for i in se.inputs
            ],
            weight_change=None
            if wc is None
            else si.WeightChangeRead(
                dimension=wc.dimension,
                shift=wc.shift,
                weights=dict(wc.weights),
                recommended_option=wc.recommended_option,
                statement=render(
                    statements.weight_change_statement(wc.shift, wc.dimension, wc.recommended_option), lang
                ),
            ),
            utilization_change=None
            if uc is None
            else si.UtilizationChangeRead(
                utilization=uc.utilization,
                recommended_option=uc.recommended_option,
                statement=render(
                    statements.utilization_change_statement(uc.utilization, profile.utilization, uc.recommended_option),
                    lang,
                ),
            ),
        )

    def uncertainty(self, req: si.UncertaintyCreate) -> si.UncertaintyRead:
        kb = self.advisor.knowledge()
        profile = self.advisor.profile(req, kb)
        weights = self.advisor.weights(req, kb)
        # the deterministic decision the draws read their fit and feasibility from: its assessments once
        # (422 when no option can be assessed at all), as a recommendation's confidence has them
        base = decision.decide(profile, self.advisor.outcomes(profile, kb), kb, weights)
        u = ins.uncertainty(
            self.advisor,
            profile,
            kb,
            list(self.advisor.options),
            weights,
            draws=req.draws,
            seed=req.seed,
            base=base,
        )
        c = confidence_read(u)
        # the confidence block a recommendation carries, under the versions it was computed with
        return si.UncertaintyRead(
            knowledge_version=kb.version, methodology_version=METHODOLOGY_VERSION, **msgspec.structs.asdict(c)
        )
