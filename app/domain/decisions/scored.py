"""A ranking's scores without its sentences, as ``POST /v1/evaluations`` answers ``detail: "scores"``: a
vectorised batch's from its columns, a few profiles' from their rankings — the same fields and rounding."""

from __future__ import annotations

from itertools import repeat

from app.core.vocab import DIMENSIONS
from app.domain.decisions import schemas as s
from app.domain.shared.convert import range_read
from app.domain.shared.schemas import DimensionScores
from app.engine import batch, decision

#: ``ScoredEntry``'s fields in order: ``results`` passes them by position
SCORED_ENTRY_FIELDS = ("option", "rank", "score", "scores", "fit", "feasible", "annual_cost", "total_cost",
                       "cost_per_useful_gpu_hour", "error", "cost_per_effective_gpu_hour", "error_code")  # fmt: skip
assert s.ScoredEntry.__struct_fields__ == SCORED_ENTRY_FIELDS, "ScoredEntry's fields moved: update results"
assert DimensionScores.__struct_fields__ == DIMENSIONS, "a batch's columns hold the scores in DIMENSIONS order"


def results(found: batch.Rankings) -> list[s.ScoredResult]:
    """A vectorised batch's answers, made from its columns: one ``ScoredEntry`` (with its scores) per
    option and profile, made option by option and laid out per profile best first."""
    made = [
        list(
            map(
                s.ScoredEntry,
                repeat(c.option),
                c.rank,
                c.score,
                map(DimensionScores, *c.scores),
                c.fit,
                c.feasible,
                c.annual_cost,
                c.total_cost,
                c.cost_per_useful_gpu_hour,
                c.error,
                c.cost_per_effective_gpu_hour,
                c.error_code,
            )
        )
        for c in found.columns
    ]
    return list(map(s.ScoredResult, found.recommended, found.arranged(made)))


def entry(r: decision.Ranked) -> s.ScoredEntry:
    """An option's entry in a ranking without sentences: its figures at their expected end, rounded as the
    evaluation's ``cost`` shows them (``range_read``)."""
    a = r.outcome.assessment
    c = None if a is None else a.cost
    return s.ScoredEntry(
        option=r.option,
        rank=r.rank,
        score=r.score,
        scores=DimensionScores(**r.scores),
        fit=r.fit,
        feasible=r.feasible,
        annual_cost=None if c is None else range_read(c.annual).expected,
        total_cost=None if c is None else range_read(c.total).expected,
        cost_per_useful_gpu_hour=None if c is None else range_read(c.per_useful_gpu_hour, 4).expected,
        error=r.outcome.error,
        error_code=r.outcome.error_code,
        cost_per_effective_gpu_hour=None
        if c is None or c.per_effective_gpu_hour is None
        else range_read(c.per_effective_gpu_hour, 4).expected,
    )


def ranking(result: decision.Decision) -> s.ScoredResult:
    """A profile's ranking without sentences (``entry`` per option)."""
    return s.ScoredResult(recommended_option=result.recommended_option, ranking=[entry(r) for r in result.ranking])
