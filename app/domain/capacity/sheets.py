"""A capacity plan for spreadsheets, through ``app.web.spreadsheets`` (BOM, CRLF, formula
neutralisation): CSV with a row per portfolio, segment and phase; XLSX with sheets ``portfolios``
(one row each, with the costs), ``segments`` (a row per segment and phase) and ``request``. Field
names and keys are English in every language; the portfolios' and options' names are the answer's,
in the request's language (as a price comparison's option names are)."""

from __future__ import annotations

from typing import Any

from app.domain.capacity.schemas import CapacityPlanRead
from app.i18n import Lang
from app.web.spreadsheets import Sheet, csv_bytes, range_cells, range_columns, workbook

COST_FIELDS = ("total_cost", "npv_cost", "cost_per_useful_gpu_hour", "cost_per_effective_gpu_hour")
PHASE_COLUMNS = (
    "portfolio",
    "kind",
    "recommended",
    "option",
    "plan",
    "acquired",
    "provider",
    "region",
    "phase",
    "start_month",
    "months",
    "demand_gpus",
    "gpus",
    "portfolio_name",
    "option_name",
)


def _phase_rows(doc: CapacityPlanRead) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for p in doc.portfolios:
        for g in p.segments:
            for k, phase in enumerate(doc.phases):
                rows.append(
                    [
                        p.key,
                        p.kind,
                        p.key == doc.recommended,
                        g.option,
                        g.plan,
                        g.acquired,
                        None if g.offer is None else g.offer.provider,
                        None if g.offer is None else g.offer.region,
                        k + 1,
                        phase.start_month,
                        phase.months,
                        phase.gpus,
                        g.gpus_by_phase[k],
                        p.name,
                        g.name,
                    ]
                )
    return rows


def plan_csv(doc: CapacityPlanRead) -> bytes:
    """A row per portfolio, segment and phase: the GPUs the segment holds in the phase."""
    head = ["knowledge_version", "currency", "as_of"]
    stamp = [doc.knowledge_version, doc.currency, doc.as_of.isoformat()]
    return csv_bytes([*head, *PHASE_COLUMNS], ([*stamp, *r] for r in _phase_rows(doc)))


def plan_workbook(doc: CapacityPlanRead, lang: Lang) -> bytes:
    columns = ["portfolio", "kind", "name", "recommended", "feasible", *range_columns(*COST_FIELDS), "reasons"]
    portfolios = [
        [
            p.key,
            p.kind,
            p.name,
            p.key == doc.recommended,
            p.feasible,
            *(c for f in COST_FIELDS for c in range_cells(getattr(p, f))),
            "; ".join(p.reasons),
        ]
        for p in doc.portfolios
    ]
    request = [
        [doc.knowledge_version, doc.methodology_version, doc.currency, doc.as_of, doc.horizon_years, doc.optimal]
    ]
    return workbook(
        [
            Sheet("portfolios", columns, portfolios),
            Sheet("segments", PHASE_COLUMNS, _phase_rows(doc)),
            Sheet(
                "request",
                ["knowledge_version", "methodology_version", "currency", "as_of", "horizon_years", "optimal"],
                request,
            ),
        ],
        lang,
    )
