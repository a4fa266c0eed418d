"""A capacity plan for spreadsheets, in the layout price comparisons share (``app.domain.shared.sheets``):
CSV, one table with a row per portfolio (record ``total``), per segment and per segment and phase;
XLSX, sheets ``summary`` (a portfolio a row, with its costs, NPV and offers), ``breakdown`` (a
segment a row, with its costs), ``segments`` (a row per segment and phase), ``phases``, ``offers``,
``sources`` and ``request``. Field names and keys are English in every language; the portfolios'
and options' names are the answer's, in the request's language (as a price comparison's option names
are). A plan answered per GPU model (``gpu_models``) states its ``recommended_gpu_model`` after the
request's fields (the per-model figures are the JSON answer's: the shared layout has a row per
portfolio of the demand's own model)."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from app.domain.capacity.schemas import CapacityPlanCreate, CapacityPlanRead, PortfolioRead
from app.domain.shared.sheets import PHASE_COLUMNS, Decision, Entry, decision_csv, request_fields
from app.domain.shared.workbook import decision_workbook
from app.i18n import Lang
from app.web.spreadsheets import range_cells, range_columns

__all__ = ["PHASE_COLUMNS", "plan", "plan_csv", "plan_workbook"]


def plan_csv(doc: CapacityPlanRead, req: CapacityPlanCreate | None = None) -> bytes:
    """A row per portfolio (``total``), per segment (``segment``: its costs) and per segment and phase
    (``phase``: the GPUs the segment holds in the phase); the request's fields on every row."""
    return decision_csv(plan(doc, req))


def plan_workbook(doc: CapacityPlanRead, lang: Lang, req: CapacityPlanCreate | None = None) -> bytes:
    return decision_workbook(plan(doc, req), lang)


def plan(doc: CapacityPlanRead, req: CapacityPlanCreate | None = None) -> Decision:
    """A plan in the shared layout: a portfolio a row; the plan's optimality, time limit and saving
    against the best single option after the request's fields."""
    saving = doc.saving_vs_best_single
    stated: list[tuple[str, Any]] = [("optimal", doc.optimal), ("time_limit_seconds", doc.time_limit_seconds)]
    stated.append(("saving_against", None if saving is None else saving.against))
    stated += zip(
        range_columns("saving_npv_cost"), range_cells(None if saving is None else saving.npv_cost), strict=True
    )
    stated.append(("saving_share", None if saving is None else saving.share))
    if doc.recommended_gpu_model is not UNSET:
        stated.append(("recommended_gpu_model", doc.recommended_gpu_model))
    answered = [("horizon_years", doc.horizon_years), ("gpu_model", doc.gpu_model)]
    return Decision.stamped(
        doc,
        key="portfolio",
        entries=[_entry(doc, p) for p in doc.portfolios],
        phases=doc.phases,
        request=request_fields(req, answered),
        stated=stated,
    )


def _entry(doc: CapacityPlanRead, p: PortfolioRead) -> Entry:
    option = p.key.partition(":")[2] if p.kind == "single" else None
    return Entry(
        key=p.key,
        name=p.name,
        recommended=p.key == doc.recommended,
        feasible=p.feasible,
        figures={
            "total_cost": p.total_cost,
            "npv_cost": p.npv_cost,
            "upfront_cost": p.upfront_cost,
            "cost_per_useful_gpu_hour": p.cost_per_useful_gpu_hour,
            "cost_per_effective_gpu_hour": p.cost_per_effective_gpu_hour,
        },
        offers=[g.offer for g in p.segments if g.offer is not None],
        plans=[g.plan for g in p.segments],
        effective_npv_cost=p.effective_npv_cost,
        reasons=p.reasons,
        error=None if option is None else doc.errors.get(option),
        kind=p.kind,
        segments=p.segments,
    )
