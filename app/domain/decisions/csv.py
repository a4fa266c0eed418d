"""Price comparisons and evaluations for spreadsheets, through ``app.web.spreadsheets``: a comparison
in the layout capacity plans share (``app.domain.shared.sheets``: CSV, one table with a row per
option and per breakdown line; XLSX, a sheet per section), evaluations as an XLSX workbook."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from msgspec import UNSET

from app.domain.decisions.schemas import ComparisonItem, ComparisonRead, Evaluation, EvaluationsRead, RankingEntry
from app.domain.shared.schemas import ProfileFields
from app.domain.shared.sheets import (
    FIGURES,
    OFFER_FIGURES,
    Alternative,
    Decision,
    Entry,
    decision_csv,
    request_fields,
)
from app.domain.shared.workbook import decision_workbook
from app.i18n import Lang
from app.web.spreadsheets import Sheet, word, workbook

#: the ranking's money figures: each option's expected ones
RANKED = (
    "annual_cost",
    "total_cost",
    "npv_cost",
    "cost_per_useful_gpu_hour",
    "cost_per_effective_gpu_hour",
    "cost_per_useful_pflop_hour",
)
#: the ranking sheet's columns: a profile and option a row
RANKING_COLUMNS = [
    *("profile", "option", "rank", "score", "cost", "efficiency", "stability", "usability", "fit", "feasible"),
    *(f"{f}_expected" for f in RANKED),
    *("provider", "region", "plan", "gpu_model", "currency", "error"),
]


def comparison_csv(doc: ComparisonRead, req: ProfileFields | None = None) -> bytes:
    """One table: a row per option (record ``total``), per breakdown line (``line_item``), per
    effective extra (``effective_extra``) and, on a demand over time, per segment and phase; the
    request's fields on every row."""
    return decision_csv(comparison(doc, req))


def comparison_workbook(doc: ComparisonRead, lang: Lang, req: ProfileFields | None = None) -> bytes:
    """Sheets ``summary``, ``breakdown``, (on a demand over time ``segments`` and ``phases``),
    ``offers`` (the offer chosen and the alternatives), ``sources`` and ``request``."""
    return decision_workbook(comparison(doc, req), lang)


def comparison(doc: ComparisonRead, req: ProfileFields | None = None) -> Decision:
    """A comparison in the shared layout: an option a row; without its request, the request fields the
    answer repeats."""
    answered = [(f, getattr(doc, f)) for f in ("gpus", "utilization", "horizon_years", "rental_plan")]
    return Decision.stamped(
        doc,
        key="option",
        entries=[_entry(i) for i in doc.items],
        phases=[] if doc.demand is UNSET else doc.demand,
        request=request_fields(req, answered),
    )


def _entry(i: ComparisonItem) -> Entry:
    segments = [] if i.segments is UNSET else i.segments
    # on a demand over time the option's offers are its segments'
    offers = [i.offer] if i.offer is not None else [g.offer for g in segments if g.offer is not None]
    return Entry(
        key=i.option,
        name=i.name,
        recommended=None,
        feasible=i.feasible,
        figures={f: getattr(i, f) for f in FIGURES},
        offers=offers,
        useful_gpu_hours_per_year=i.useful_gpu_hours_per_year,
        committed=i.committed,
        reasons=i.infeasible_reasons,
        error=i.error,
        lines=i.breakdown,
        extras=i.effective_extras,
        segments=segments,
        alternatives=[
            Alternative(a.offer, {f: getattr(a, f) for f in OFFER_FIGURES}, a.feasible, a.reasons)
            for a in i.alternatives
        ],
        offer_figures={f: getattr(i, f) for f in OFFER_FIGURES},
    )


def evaluations_workbook(doc: EvaluationsRead, lang: Lang, profiles: Sequence[ProfileFields] | None = None) -> bytes:
    """Sheets ``summary`` (a profile a row: the recommendation), ``ranking`` (a profile and option a
    row: scores, expected costs; with ``detail: full`` also the NPV, the cost per useful PFLOP-hour and the
    chosen offer), ``reasons``
    (with ``detail: full``: a reason a row) and ``request`` (a profile a row, every field). Money
    headings name the profiles' currency, or say it is the row's where profiles differ."""
    currencies = _currencies(doc, profiles)
    shared = currencies[0] if currencies and len(set(currencies)) == 1 else None
    cur = shared or word("column.row_currency", lang, "the row's currency")
    summary = [[n, r.recommended_option, _nth(currencies, n)] for n, r in enumerate(doc.results, start=1)]
    sheets = [
        Sheet("summary", ["profile", "recommended_option", "currency"], summary),
        Sheet("ranking", RANKING_COLUMNS, _ranking(doc, currencies), cur),
    ]
    if doc.evaluations is not None:
        sheets.append(Sheet("reasons", ["profile", "option", "position", "code", "reason"], _reasons(doc.evaluations)))
    sheets.append(_request_sheet(doc, profiles, cur))
    return workbook(sheets, lang)


def _currencies(doc: EvaluationsRead, profiles: Sequence[ProfileFields] | None) -> list[str]:
    """Each profile's currency: the request's, else (``detail: full``) the answer's profiles'."""
    currencies = [p.currency for p in profiles] if profiles is not None else []
    if not currencies and doc.evaluations is not None:
        currencies = [str(ev.profile.get("currency", "")) for ev in doc.evaluations]
    return currencies


def _nth(currencies: Sequence[str], n: int) -> str | None:
    """The ``n``-th profile's currency (from 1), if known."""
    return currencies[n - 1] if n <= len(currencies) else None


def _ranking(doc: EvaluationsRead, currencies: Sequence[str]) -> list[list[Any]]:
    """A row per profile and option ranked (``RANKING_COLUMNS``): with ``detail: full`` the NPV, the cost per
    useful PFLOP-hour and the offer come from the full evaluation."""
    ranking: list[list[Any]] = []
    for n, r in enumerate(doc.results, start=1):
        full = {} if doc.evaluations is None else {e.option: e for e in doc.evaluations[n - 1].ranking}
        for e in r.ranking:
            entry = full.get(e.option)
            ranking.append(
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
                    _npv(entry),
                    e.cost_per_useful_gpu_hour,
                    e.cost_per_effective_gpu_hour,
                    _per_pflop_hour(entry),
                    *_offer_facts(entry),
                    _nth(currencies, n),
                    e.error,
                ]
            )
    return ranking


def _reasons(evaluations: Sequence[Evaluation]) -> list[list[Any]]:
    """A row per reason of each profile's options, in order, with its code."""
    return [
        [n, e.option, k, c.code, text]
        for n, ev in enumerate(evaluations, start=1)
        for e in ev.ranking
        for k, (text, c) in enumerate(zip(e.reasons, e.reason_codes, strict=False), start=1)
    ]


def _request_sheet(doc: EvaluationsRead, profiles: Sequence[ProfileFields] | None, cur: str) -> Sheet:
    """A row per profile: the answer's versions and detail, and every field of the profile (one row of the
    versions alone without the profiles)."""
    stamp = [doc.knowledge_version, doc.methodology_version, doc.detail]
    fields = [request_fields(p, skip=frozenset()) for p in profiles or []]
    names = [f for f, _ in fields[0]] if fields else []
    request = [[n, *stamp, *(v for _, v in f)] for n, f in enumerate(fields, start=1)] or [[None, *stamp]]
    columns = ["profile", "knowledge_version", "methodology_version", "detail", *names]
    return Sheet("request", columns, request, cur)


def _npv(entry: RankingEntry | None) -> float | None:
    if entry is None or entry.cost is None or entry.cost.npv_cost is None:
        return None
    return entry.cost.npv_cost.expected


def _per_pflop_hour(entry: RankingEntry | None) -> float | None:
    if entry is None or entry.cost_per_useful_pflop_hour is None:
        return None
    return entry.cost_per_useful_pflop_hour.expected


def _offer_facts(entry: RankingEntry | None) -> list[str | None]:
    o = None if entry is None else entry.offer
    if o is None:
        return [None, None, None, None]
    return [o.provider, o.region, o.plan, o.gpu_model]
