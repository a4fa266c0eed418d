"""A training plan for spreadsheets, written through ``app.web.spreadsheets`` (BOM, CRLF, formula
neutralisation, number formats) with the stamp price comparisons and capacity plans have
(``app.domain.shared.sheets``): the knowledge and methodology versions, the currency and ``as_of`` first,
the request's fields on every CSV row as ``request_<field>``, then what the answer states beyond its rows.

Across GPU models (``TrainingCandidatesRead``): CSV, a row per candidate (GPU model × option) in the
answer's order, feasible first and then cheapest per token; XLSX, sheets ``candidates`` (the same rows),
``work`` (per GPU model: dense peak, MFU, sustained TFLOPS, the run's GPU-hours, tokens a second and the
sources) and ``request``. On one GPU model (``TrainingPlanRead``): CSV, a row per option (``items``);
XLSX, sheets ``options`` (the same rows) and ``request``. Field names and keys are English in every
language; names and sentences are the answer's, in the request's language.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.domain.planning.schemas import (
    CandidateRead,
    TrainingCandidatesRead,
    TrainingPlanCreate,
    TrainingPlanItem,
    TrainingPlanRead,
    WorkRead,
)
from app.domain.shared.sheets import STAMP, request_fields, stamp_of
from app.i18n import Lang
from app.web.spreadsheets import Sheet, csv_bytes, csv_header, range_cells, range_columns, workbook

__all__ = ["CANDIDATE_COLUMNS", "ITEM_COLUMNS", "WORK_COLUMNS", "Answer", "plan_csv", "plan_workbook"]

Answer = TrainingCandidatesRead | TrainingPlanRead

#: a candidate's figures, each a range (low, expected, high); money in the answer's currency
CANDIDATE_FIGURES = (
    "gpu_hours",
    "calendar_days",
    "total_cost",
    "cost_per_million_tokens",
    "training_days",
    "lead_time_days",
    "gpu_hours_billed",
    "upfront_cost",
    "cost_per_useful_gpu_hour",
)
#: a row per candidate: where it ranks, the offer it is planned on, its figures and why it is not feasible
CANDIDATE_COLUMNS = (
    "rank",
    "recommended",
    "gpu_model",
    "option",
    "name",
    "feasible",
    "offer_name",
    "provider",
    "region",
    "plan",
    "gpus",
    *range_columns(*CANDIDATE_FIGURES),
    "committed",
    "reasons",
    "error",
)
#: what one GPU of a model sustains on the run
WORK_COLUMNS = (
    "gpu_model",
    "name",
    "precision",
    "peak_tflops",
    *range_columns("mfu", "sustained_tflops", "gpu_hours", "tokens_per_second"),
    "sources",
)
ITEM_FIGURES = (
    "calendar_days",
    "training_days",
    "total_cost",
    "gpu_hours_billed",
    "lead_time_days",
    "interruptions",
    "hours_lost",
    "cost_per_useful_gpu_hour",
    "upfront_cost",
)
#: a row per option of a single GPU model's plan
ITEM_COLUMNS = ("option", "name", "feasible", *range_columns(*ITEM_FIGURES), "committed", "reasons", "error")


def plan_csv(doc: Answer, req: TrainingPlanCreate | None = None) -> bytes:
    """The answer as one CSV table: a row per candidate (across GPU models) or per option (one GPU model),
    the stamp first, the request's fields (``request_<field>``) and what the answer states beyond its rows
    on every row."""
    columns, rows = _rows(doc)
    request, stated = _request(doc, req), _stated(doc)
    cur = doc.currency
    names = [csv_header(c, cur) for c in (*STAMP, *columns)]
    names += [f"request_{csv_header(f, cur)}" for f, _ in request]
    names += [csv_header(c, cur) for c, _ in stated]
    tail = [v for _, v in request] + [v for _, v in stated]
    return csv_bytes(names, ([*stamp_of(doc), *row, *tail] for row in rows))


def plan_workbook(doc: Answer, lang: Lang, req: TrainingPlanCreate | None = None) -> bytes:
    """The answer as an XLSX workbook (module docstring's sheets), headings in ``lang``, money headings
    naming the currency."""
    columns, rows = _rows(doc)
    cur = doc.currency
    if isinstance(doc, TrainingCandidatesRead):
        sheets = [Sheet("candidates", columns, rows, cur), Sheet("work", WORK_COLUMNS, [_work(w) for w in doc.work])]
    else:
        sheets = [Sheet("options", columns, rows, cur)]
    request, stated = _request(doc, req), _stated(doc)
    sheets.append(
        Sheet(
            "request",
            [*STAMP, *(f for f, _ in request), *(c for c, _ in stated)],
            [[*stamp_of(doc), *(v for _, v in request), *(v for _, v in stated)]],
            cur,
        )
    )
    return workbook(sheets, lang)


def _rows(doc: Answer) -> tuple[Sequence[str], list[list[Any]]]:
    if isinstance(doc, TrainingCandidatesRead):
        best = (doc.recommended.gpu_model, doc.recommended.option) if doc.recommended else None
        rows = [_candidate(n, c, (c.gpu_model, c.option) == best) for n, c in enumerate(doc.candidates, start=1)]
        return CANDIDATE_COLUMNS, rows
    return ITEM_COLUMNS, [_item(i) for i in doc.items]


def _candidate(rank: int, c: CandidateRead, recommended: bool) -> list[Any]:
    o = c.offer
    offer = [None] * 4 if o is None else [o.name, o.provider, o.region, o.plan]
    return [
        rank,
        recommended,
        c.gpu_model,
        c.option,
        c.name,
        c.feasible,
        *offer,
        c.gpus,
        *_outcome(c, CANDIDATE_FIGURES),
    ]


def _item(i: TrainingPlanItem) -> list[Any]:
    return [i.option, i.name, i.feasible, *_outcome(i, ITEM_FIGURES)]


def _outcome(row: CandidateRead | TrainingPlanItem, figures: Sequence[str]) -> list[Any]:
    """A plan's cells after its names: each figure's low, expected and high, whether it commits, why it is
    not feasible, and its error."""
    return [
        *(cell for f in figures for cell in range_cells(getattr(row, f))),
        row.committed,
        "; ".join(row.reasons) or None,
        row.error,
    ]


def _work(w: WorkRead) -> list[Any]:
    ranges = (w.mfu, w.sustained_tflops, w.gpu_hours, w.tokens_per_second)
    return [
        w.gpu_model,
        w.name,
        w.precision,
        w.peak_tflops,
        *(cell for r in ranges for cell in range_cells(r)),
        " | ".join(w.sources) or None,
    ]


def _request(doc: Answer, req: TrainingPlanCreate | None) -> list[tuple[str, Any]]:
    """The request's fields but the stamped ones; without the request, what the answer repeats of it."""
    if isinstance(doc, TrainingCandidatesRead):
        answered: list[tuple[str, Any]] = [
            ("parameters", doc.parameters),
            ("gpus", doc.gpus),
            ("precision", doc.precision),
            ("finish_within_days", doc.finish_within_days),
            ("rental_plan", doc.rental_plan),
            ("ops_team", doc.ops_team),
            ("buyer_country", doc.buyer_country),
        ]
    else:
        answered = [("gpu_model", doc.gpu_model), ("gpus", doc.gpus), ("rental_plan", doc.rental_plan),
                    ("ops_team", doc.ops_team)]  # fmt: skip
    return request_fields(req, answered)


def _stated(doc: Answer) -> list[tuple[str, Any]]:
    """What the answer states beyond its rows: the run's FLOPs and tokens (``run_``: as computed, whichever
    of the two the request gave), the recommendation and the notes (across GPU models); the run's FLOPs,
    GPU-hours, MFU, pricing basis and notes (one GPU model)."""
    notes = " ".join(doc.notes) or None
    if isinstance(doc, TrainingCandidatesRead):
        stated = [("run_flops", doc.flops), ("run_tokens", doc.tokens), ("recommendation", doc.recommendation)]
        return [*stated, ("notes", notes)]
    return [
        ("run_flops", doc.flops),
        *zip(range_columns("gpu_hours"), range_cells(doc.gpu_hours), strict=True),
        *zip(range_columns("mfu"), range_cells(doc.mfu), strict=True),
        ("pricing_basis", doc.pricing_basis),
        ("notes", notes),
    ]
