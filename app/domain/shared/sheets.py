"""The spreadsheet layout price comparisons and capacity plans share (docs/languages-and-spreadsheets.md),
written through ``app.web.spreadsheets`` (BOM, CRLF, formula neutralisation, number formats): the
columns, the records a decision is read into (``Decision``, ``Entry``) and the CSV; the XLSX workbook
is ``app.domain.shared.workbook``.

XLSX sheets, in this order: ``summary`` (an option or a portfolio a row: recommended, feasible, the
money figures low/expected/high, NPV, the effective cost per GPU-hour, the cost per useful PFLOP-hour (a
comparison's), the chosen offer's provider, region, plan and GPU model), ``breakdown`` (what each row's
cost is made of: a comparison's line items and effective extras, a portfolio's segments), ``segments``
(a row per segment and phase: the GPUs it holds; only where the answer has segments), ``phases`` (the
demand; only where the answer has phases), ``offers`` (the offers chosen, and a comparison's
alternatives), ``sources`` and ``request`` (every field of the request, after the knowledge and
methodology versions, the currency and ``as_of`` the answer was priced with). CSV: one table of the same
columns, a row per record (``total``: a summary row; ``line_item``, ``effective_extra``, ``segment``,
``phase``: the breakdown's, the segments' and the phases' rows), the request's fields on every row
(``request_<field>``).

Only what the answer (and its request) says: a comparison recommends nothing (``recommended`` empty);
a portfolio has no annual cost, no equivalent annual cost and no cost per useful PFLOP-hour (empty); a
plain comparison no segments.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from app.domain.shared.demand import PhaseRead, SegmentRead
from app.domain.shared.schemas import LineItemRead, OfferRead, RangeRead
from app.web.spreadsheets import csv_bytes, csv_header, range_cells, range_columns

#: a summary row's money figures, each a range (low, expected, high), in the answer's currency
FIGURES = (
    "annual_cost",
    "total_cost",
    "npv_cost",
    "equivalent_annual_cost",
    "upfront_cost",
    "cost_per_useful_gpu_hour",
    "cost_per_effective_gpu_hour",
    "cost_per_useful_pflop_hour",
)
#: the chosen offer's facts (a portfolio's: its segments' distinct ones, joined by " + ")
OFFER_FACTS = ("provider", "region", "plan", "gpu_model")
#: the summary's columns after the row's key (``option`` or ``portfolio``)
SUMMARY_COLUMNS = (
    "name",
    "recommended",
    "feasible",
    *range_columns(*FIGURES),
    "effective_npv_cost",
    *OFFER_FACTS,
    "useful_gpu_hours_per_year",
    "committed",
    "reasons",
    "error",
)
#: what the answer was priced with: the first columns of the CSV and of the request sheet
STAMP = ("knowledge_version", "methodology_version", "currency", "as_of")
#: the CSV's columns for the breakdown's, the segments' and the phases' rows
DETAIL_COLUMNS = (
    "part",
    "label",
    "acquired",
    "basis",
    "sources",
    "phase",
    "start_month",
    "months",
    "demand_gpus",
    "gpus",
)
#: the segments sheet: a row per segment and phase
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
BREAKDOWN_COLUMNS = (
    "part",
    "label",
    "effective_extra",
    "acquired",
    "start_month",
    *range_columns("annual", "upfront", "total", "npv_cost"),
    "basis",
)
OFFER_FIGURES = (
    "annual_cost",
    "total_cost",
    "upfront_cost",
    "cost_per_useful_gpu_hour",
    "cost_per_effective_gpu_hour",
    "cost_per_useful_pflop_hour",
)
OFFER_COLUMNS = (
    "chosen",
    "provider",
    "region",
    "gpu_model",
    "subject",
    "variant",
    "plan",
    "unit",
    "gpus_per_unit",
    *range_columns("price"),
    "currency",
    *range_columns("quoted_price"),
    "quoted_currency",
    "exchange_rate",
    "valid_from",
    "residency",
    *range_columns(*OFFER_FIGURES),
    "feasible",
    "reasons",
    "source",
    "source_quality",
    "price_book",
)
PHASE_SHEET_COLUMNS = ("phase", "start_month", "months", "gpus", "utilization", "largest_job_gpus")
#: the workbook's sheets in order, every one where the answer has segments and phases (a plan's, a
#: comparison's on a demand over time); without them, all but ``segments`` and ``phases``
SHEETS = ("summary", "breakdown", "segments", "phases", "offers", "sources", "request")
#: a request's fields the stamp already gives (as the answer priced them: ``as_of`` filled in)
STAMPED = frozenset({"currency", "as_of"})


@dataclass(frozen=True, slots=True)
class Alternative:
    """An offer a comparison's option could buy instead, with its figures."""

    offer: OfferRead
    figures: dict[str, RangeRead | None]
    feasible: bool | None
    reasons: Sequence[str]


@dataclass(frozen=True, slots=True)
class Entry:
    """A summary row, an option of a comparison or a portfolio of a plan, and what it is made of."""

    key: str
    name: str
    recommended: bool | None
    feasible: bool | None
    figures: dict[str, RangeRead | None]
    #: the offers chosen: an option's one, a portfolio's segments'
    offers: Sequence[OfferRead] = ()
    #: the plans bought on (a portfolio's segments'; an option's is its offer's)
    plans: Sequence[str | None] = ()
    effective_npv_cost: float | None = None
    useful_gpu_hours_per_year: float | None = None
    committed: bool | None = None
    reasons: Sequence[str] = ()
    error: str | None = None
    #: a portfolio's kind (``single``, ``hybrid``)
    kind: str | None = None
    lines: Sequence[LineItemRead] = ()
    extras: Sequence[LineItemRead] = ()
    segments: Sequence[SegmentRead] = ()
    alternatives: Sequence[Alternative] = ()
    #: the figures of the chosen offer's row on the offers sheet (a comparison's: the option's)
    offer_figures: dict[str, RangeRead | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Decision:
    """A price comparison or a capacity plan as the spreadsheets state it."""

    #: the name of the rows' key: ``option`` or ``portfolio``
    key: str
    knowledge_version: str
    methodology_version: str
    currency: str
    as_of: dt.date
    entries: Sequence[Entry]
    phases: Sequence[PhaseRead]
    #: the request's fields but the stamped ones, in the request's order: (field, cell)
    request: Sequence[tuple[str, Any]]
    #: what the answer states beyond its rows (a plan's optimality and saving): (column, cell)
    stated: Sequence[tuple[str, Any]] = ()

    @classmethod
    def stamped(
        cls,
        doc: Stamped,
        *,
        key: str,
        entries: Sequence[Entry],
        phases: Sequence[PhaseRead],
        request: Sequence[tuple[str, Any]],
        stated: Sequence[tuple[str, Any]] = (),
    ) -> Decision:
        """The rows of the answer ``doc``, stamped as it is."""
        return cls(
            key=key,
            knowledge_version=doc.knowledge_version,
            methodology_version=doc.methodology_version,
            currency=doc.currency,
            as_of=doc.as_of,
            entries=entries,
            phases=phases,
            request=request,
            stated=stated,
        )

    @property
    def stamp(self) -> list[Any]:
        return stamp_of(self)


class Stamped(Protocol):
    """What an answer is stamped with: the knowledge and methodology versions, its currency and its date."""

    @property
    def knowledge_version(self) -> str: ...
    @property
    def methodology_version(self) -> str: ...
    @property
    def currency(self) -> str: ...
    @property
    def as_of(self) -> dt.date: ...


def stamp_of(doc: Stamped) -> list[Any]:
    """An answer's stamp as cells: knowledge version, methodology version, currency, date."""
    return [doc.knowledge_version, doc.methodology_version, doc.currency, doc.as_of]


def request_fields(
    req: BaseModel | None, fallback: Sequence[tuple[str, Any]] = (), *, skip: frozenset[str] = STAMPED
) -> list[tuple[str, Any]]:
    """Every field of ``req`` as a cell, in the request's order (defaults filled in), but those in
    ``skip`` (by default the stamped ones); without a request, ``fallback`` (what the answer repeats of it)."""
    if req is None:
        return list(fallback)
    return [(name, request_cell(getattr(req, name))) for name in type(req).model_fields if name not in skip]


def request_cell(value: Any) -> Any:
    """A request value as a cell: a scalar as itself, a list of scalars joined by ", ", anything nested
    (weights, a demand's phases, owned GPUs, option fields) as its compact JSON."""
    if value is None or isinstance(value, bool | int | float | str | dt.date):
        return value
    if isinstance(value, list) and all(isinstance(v, int | float | str) for v in value):
        return ", ".join(str(v) for v in value)
    found = value.model_dump(mode="json", exclude_none=True) if isinstance(value, BaseModel) else value
    return json.dumps(to_jsonable_python(found, exclude_none=True), ensure_ascii=False, separators=(",", ":"))


def _joined(values: Sequence[str | None]) -> str | None:
    """Distinct values in order, joined by " + " (a portfolio's several offers); none: ``None``."""
    found = list(dict.fromkeys(v for v in values if v))
    return " + ".join(found) if found else None


def offer_facts(e: Entry) -> list[Any]:
    """The chosen offer's provider, region, plan and GPU model."""
    plans = e.plans or [o.plan for o in e.offers]
    return [
        _joined([o.provider for o in e.offers]),
        _joined([o.region for o in e.offers]),
        _joined(list(plans)),
        _joined([o.gpu_model for o in e.offers]),
    ]


def summary_cells(e: Entry) -> list[Any]:
    """A summary row's cells, after its key."""
    return [
        e.name,
        e.recommended,
        e.feasible,
        *(c for f in FIGURES for c in range_cells(e.figures.get(f))),
        e.effective_npv_cost,
        *offer_facts(e),
        e.useful_gpu_hours_per_year,
        e.committed,
        "; ".join(e.reasons) or None,
        e.error,
    ]


def _sources(li: LineItemRead) -> str:
    return " | ".join(f"{x.table}:{x.ref}" for x in li.sources)


def segment_facts(g: SegmentRead) -> list[Any]:
    """A segment's provider, region, plan and GPU model."""
    o = g.offer
    if o is None:
        return [None, None, g.plan, None]
    return [o.provider, o.region, g.plan, o.gpu_model]


# ---- CSV ---------------------------------------------------------------------------------------------


def decision_csv(d: Decision) -> bytes:
    """The answer as one CSV table (module docstring): a ``total`` row per option or portfolio, then its
    ``line_item``, ``effective_extra``, ``segment`` and ``phase`` rows."""
    cur = d.currency
    columns = [*STAMP, "record", d.key, *SUMMARY_COLUMNS, *DETAIL_COLUMNS]
    names = [csv_header(c, cur) for c in columns]
    names += [f"request_{csv_header(f, cur)}" for f, _ in d.request]
    names += [csv_header(c, cur) for c, _ in d.stated]
    tail = [v for _, v in d.request] + [v for _, v in d.stated]
    return csv_bytes(names, ([*d.stamp, *row, *tail] for row in _csv_rows(d)))


def _csv_rows(d: Decision) -> Iterator[list[Any]]:
    blank_detail = [None] * len(DETAIL_COLUMNS)
    for e in d.entries:
        yield ["total", e.key, *summary_cells(e), *blank_detail]
        for record, li in [*(("line_item", li) for li in e.lines), *(("effective_extra", li) for li in e.extras)]:
            figures = {"annual_cost": li.annual, "upfront_cost": li.upfront, "total_cost": li.total}
            row = _detail_summary(e, figures, [None] * 4)
            yield [record, e.key, *row, li.key, li.label, None, li.basis, _sources(li), *[None] * 5]
        for g in e.segments:
            figures = {"total_cost": g.total_cost, "npv_cost": g.npv_cost, "upfront_cost": g.upfront_cost}
            row = _detail_summary(e, figures, segment_facts(g))
            yield ["segment", e.key, *row, g.option, g.name, g.acquired, None, None, None, g.start_month, *[None] * 3]
        for g in e.segments:
            for k, phase in enumerate(d.phases):
                row = _detail_summary(e, {}, segment_facts(g))
                detail = [g.option, g.name, g.acquired, None, None, k + 1, phase.start_month, phase.months]
                yield ["phase", e.key, *row, *detail, phase.gpus, g.gpus_by_phase[k]]


def _detail_summary(e: Entry, figures: Mapping[str, RangeRead | None], facts: list[Any]) -> list[Any]:
    """The summary columns of a breakdown, segment or phase row: the name of the option or portfolio it
    belongs to and whether that is recommended, its own figures and offer facts; the rest empty (they
    are the total row's)."""
    cells: list[Any] = [e.name, e.recommended, None, *(c for f in FIGURES for c in range_cells(figures.get(f))), None]
    return [*cells, *facts, None, None, None, None]
