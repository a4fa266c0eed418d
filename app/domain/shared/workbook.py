"""The shared spreadsheet layout (``app.domain.shared.sheets``) as an XLSX workbook: its sheets in order
(summary, breakdown, segments and phases where the answer has them, offers, sources, request), headings
in the request's language, money headings naming the currency, cells with number formats
(``app.web.spreadsheets``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from app.domain.shared.demand import PhaseRead
from app.domain.shared.sheets import (
    BREAKDOWN_COLUMNS,
    OFFER_COLUMNS,
    OFFER_FIGURES,
    PHASE_COLUMNS,
    PHASE_SHEET_COLUMNS,
    STAMP,
    SUMMARY_COLUMNS,
    Decision,
    Entry,
    segment_facts,
    summary_cells,
)
from app.i18n import Lang
from app.web.spreadsheets import Sheet, range_cells, word, workbook


def decision_workbook(d: Decision, lang: Lang) -> bytes:
    """The answer as an XLSX workbook (module docstring's sheets), headings in ``lang``, money headings
    naming the currency."""
    cur = d.currency
    sheets = [
        Sheet("summary", [d.key, *SUMMARY_COLUMNS], [[e.key, *summary_cells(e)] for e in d.entries], cur),
        Sheet("breakdown", [d.key, *BREAKDOWN_COLUMNS], list(_breakdown_rows(d)), cur),
    ]
    segments = [row for e in d.entries for row in _phase_rows(e, d.phases)]
    if segments:
        sheets.append(Sheet("segments", PHASE_COLUMNS, segments))
    if d.phases:
        phases = [[k, p.start_month, p.months, p.gpus, p.utilization, p.largest_job_gpus] for k, p in _numbered(d)]
        sheets.append(Sheet("phases", PHASE_SHEET_COLUMNS, phases))
    quoted = word("column.quoted_currency_of_row", lang, "the quoted currency")
    sheets += [
        Sheet("offers", [d.key, *OFFER_COLUMNS], list(_offer_rows(d)), cur, {"quoted_price": quoted}),
        Sheet("sources", ["table", "ref", "source", "quality", d.key], _source_rows(d)),
        Sheet(
            "request",
            [*STAMP, *(f for f, _ in d.request), *(c for c, _ in d.stated)],
            [[*d.stamp, *(v for _, v in d.request), *(v for _, v in d.stated)]],
            cur,
        ),
    ]
    return workbook(sheets, lang)


def _numbered(d: Decision) -> Iterator[tuple[int, PhaseRead]]:
    return enumerate(d.phases, start=1)


def _breakdown_rows(d: Decision) -> Iterator[list[Any]]:
    for e in d.entries:
        for extra, li in [*((False, li) for li in e.lines), *((True, li) for li in e.extras)]:
            money = [*range_cells(li.annual), *range_cells(li.upfront), *range_cells(li.total), *range_cells(None)]
            yield [e.key, li.key, li.label, extra, None, None, *money, li.basis]
        for g in e.segments:
            money = [*range_cells(None), *range_cells(g.upfront_cost), *range_cells(g.total_cost)]
            yield [e.key, g.option, g.name, None, g.acquired, g.start_month, *money, *range_cells(g.npv_cost), None]


def _phase_rows(e: Entry, phases: Sequence[PhaseRead]) -> Iterator[list[Any]]:
    for g in e.segments:
        provider, region, _, _ = segment_facts(g)
        for k, phase in enumerate(phases):
            yield [
                e.key,
                e.kind,
                e.recommended,
                g.option,
                g.plan,
                g.acquired,
                provider,
                region,
                k + 1,
                phase.start_month,
                phase.months,
                phase.gpus,
                g.gpus_by_phase[k],
                e.name,
                g.name,
            ]


def _offer_rows(d: Decision) -> Iterator[list[Any]]:
    for e in d.entries:
        chosen = [(True, o, e.offer_figures, e.feasible, ()) for o in e.offers]
        others = [(False, a.offer, a.figures, a.feasible, a.reasons) for a in e.alternatives]
        for is_chosen, o, figures, feasible, reasons in [*chosen, *others]:
            yield [
                e.key,
                is_chosen,
                o.provider,
                o.region,
                o.gpu_model,
                o.subject,
                o.variant,
                o.plan,
                o.unit,
                o.gpus_per_unit,
                *range_cells(o.price),
                o.currency,
                *range_cells(o.quoted_price),
                o.quoted_currency,
                o.exchange_rate,
                o.valid_from,
                o.residency,
                *(c for f in OFFER_FIGURES for c in range_cells(figures.get(f))),
                feasible,
                "; ".join(reasons) or None,
                o.source,
                o.source_quality,
                o.price_book,
            ]


def _source_rows(d: Decision) -> list[list[Any]]:
    """Every knowledge row the breakdown cites (table and reference), else the offers' sources."""
    seen: dict[tuple[str | None, str | None, str], list[Any]] = {}
    for e in d.entries:
        for li in [*e.lines, *e.extras]:
            for x in li.sources:
                seen.setdefault((x.table, x.ref, ""), [x.table, x.ref, x.source, x.quality, e.key])
        if not e.lines:
            for o in e.offers:
                seen.setdefault((None, None, o.source), [None, None, o.source, o.source_quality, e.key])
    return list(seen.values())
