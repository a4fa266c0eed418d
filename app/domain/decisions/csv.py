"""Price comparisons and evaluations for spreadsheets: CSV (one row per option and one per breakdown
line) and XLSX workbooks (a sheet per section), through ``app.web.spreadsheets``."""

from __future__ import annotations

from typing import Any

from app.domain.decisions.schemas import ComparisonRead, EvaluationsRead
from app.i18n import Lang
from app.web.spreadsheets import Sheet, csv_bytes, range_cells, range_columns, workbook

RANGE_FIELDS = ("annual_cost", "total_cost", "upfront_cost", "cost_per_useful_gpu_hour")
ENDS = ("low", "expected", "high")
CSV_COLUMNS = (
    "knowledge_version",
    "currency",
    "as_of",
    "option",
    "record",
    "label",
    *range_columns(*RANGE_FIELDS),
    "sources",
    "error",
)


def comparison_csv(doc: ComparisonRead) -> bytes:
    """One row per option (record ``total``) and one per breakdown line (record ``line_item``)."""
    rows: list[list[Any]] = []
    for item in doc.items:
        head = [doc.knowledge_version, doc.currency, doc.as_of.isoformat(), item.option]
        figures = [c for f in RANGE_FIELDS for c in range_cells(getattr(item, f))]
        rows.append([*head, "total", item.name, *figures, "", item.error or ""])
        for li in item.breakdown:
            sources = " | ".join(f"{x.table}:{x.ref}" for x in li.sources)
            rows.append(
                [
                    *head,
                    "line_item",
                    li.label,
                    *range_cells(li.annual),
                    "",
                    "",
                    "",
                    *range_cells(li.upfront),
                    "",
                    "",
                    "",
                    sources,
                    "",
                ]
            )
    return csv_bytes(CSV_COLUMNS, rows)


def comparison_workbook(doc: ComparisonRead, lang: Lang) -> bytes:
    """Sheets ``summary`` (an option a row), ``breakdown`` (a line item a row), ``offers`` (the offer
    chosen and the alternatives), ``sources`` (every knowledge row cited) and ``request``."""
    summary_columns = [
        "option",
        "name",
        "feasible",
        *range_columns(*RANGE_FIELDS, "cost_per_effective_gpu_hour"),
        "useful_gpu_hours_per_year",
        "committed",
        "infeasible_reasons",
        "error",
    ]
    summary = [
        [
            i.option,
            i.name,
            i.feasible,
            *(c for f in (*RANGE_FIELDS, "cost_per_effective_gpu_hour") for c in range_cells(getattr(i, f))),
            i.useful_gpu_hours_per_year,
            i.committed,
            "; ".join(i.infeasible_reasons),
            i.error,
        ]
        for i in doc.items
    ]
    breakdown_columns = ["option", "key", "label", *range_columns("annual", "upfront", "total"), "basis"]
    breakdown = [
        [
            i.option,
            li.key,
            li.label,
            *range_cells(li.annual),
            *range_cells(li.upfront),
            *range_cells(li.total),
            li.basis,
        ]
        for i in doc.items
        for li in [*i.breakdown, *i.effective_extras]
    ]
    offer_columns = [
        "option",
        "chosen",
        "provider",
        "region",
        "gpu_model",
        "plan",
        "unit",
        *range_columns("price"),
        "currency",
        *range_columns("quoted_price"),
        "quoted_currency",
        "exchange_rate",
        *range_columns("annual_cost", "cost_per_useful_gpu_hour"),
        "feasible",
        "source",
    ]
    offers: list[list[Any]] = []
    for i in doc.items:
        chosen = [] if i.offer is None else [(True, i.offer, i.annual_cost, i.cost_per_useful_gpu_hour, i.feasible)]
        others = [(False, a.offer, a.annual_cost, a.cost_per_useful_gpu_hour, a.feasible) for a in i.alternatives]
        for is_chosen, o, annual, per_hour, feasible in [*chosen, *others]:
            offers.append(
                [
                    i.option,
                    is_chosen,
                    o.provider,
                    o.region,
                    o.gpu_model,
                    o.plan,
                    o.unit,
                    *range_cells(o.price),
                    o.currency,
                    *range_cells(o.quoted_price),
                    o.quoted_currency,
                    o.exchange_rate,
                    *range_cells(annual),
                    *range_cells(per_hour),
                    feasible,
                    o.source,
                ]
            )
    seen: dict[tuple[str, str], list[Any]] = {}
    for i in doc.items:
        for li in [*i.breakdown, *i.effective_extras]:
            for x in li.sources:
                seen.setdefault((x.table, x.ref), [x.table, x.ref, x.source, x.quality, i.option])
    request_columns = ["knowledge_version", "methodology_version", "currency", "as_of", "gpus", "utilization"]
    request_columns += ["horizon_years", "rental_plan"]
    request = [
        [
            doc.knowledge_version,
            doc.methodology_version,
            doc.currency,
            doc.as_of,
            doc.gpus,
            doc.utilization,
            doc.horizon_years,
            doc.rental_plan,
        ]
    ]
    return workbook(
        [
            Sheet("summary", summary_columns, summary),
            Sheet("breakdown", breakdown_columns, breakdown),
            Sheet("offers", offer_columns, offers),
            Sheet("sources", ["table", "ref", "source", "quality", "option"], list(seen.values())),
            Sheet("request", request_columns, request),
        ],
        lang,
    )


def evaluations_workbook(doc: EvaluationsRead, lang: Lang) -> bytes:
    """Sheets ``summary`` (a profile a row: the recommendation), ``ranking`` (a profile and option a
    row: scores and costs), ``reasons`` (with ``detail: full``: a reason a row) and ``request``."""
    summary = [[n, r.recommended_option] for n, r in enumerate(doc.results, start=1)]
    ranking_columns = ["profile", "option", "rank", "score", "cost", "efficiency", "stability", "usability", "fit"]
    ranking_columns += ["feasible", "annual_cost", "total_cost", "cost_per_useful_gpu_hour"]
    ranking_columns += ["cost_per_effective_gpu_hour", "error"]
    ranking = [
        [
            n,
            e.option,
            e.rank,
            e.score,
            e.scores.cost,
            e.scores.efficiency,
            e.scores.stability,
            e.scores.usability,
            e.fit,
            e.feasible,
            e.annual_cost,
            e.total_cost,
            e.cost_per_useful_gpu_hour,
            e.cost_per_effective_gpu_hour,
            e.error,
        ]
        for n, r in enumerate(doc.results, start=1)
        for e in r.ranking
    ]
    sheets = [
        Sheet("summary", ["profile", "recommended_option"], summary),
        Sheet("ranking", ranking_columns, ranking),
    ]
    if doc.evaluations is not None:
        reasons = [
            [n, e.option, k, c.code, text]
            for n, ev in enumerate(doc.evaluations, start=1)
            for e in ev.ranking
            for k, (text, c) in enumerate(zip(e.reasons, e.reason_codes, strict=False), start=1)
        ]
        sheets.append(Sheet("reasons", ["profile", "option", "position", "code", "reason"], reasons))
    request = [[doc.knowledge_version, doc.methodology_version, doc.detail, len(doc.results)]]
    sheets.append(Sheet("request", ["knowledge_version", "methodology_version", "detail", "profiles"], request))
    return workbook(sheets, lang)
