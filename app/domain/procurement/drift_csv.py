"""A drift as CSV (``app.web.spreadsheets``: BOM, CRLF, cells guarded against formulas): one row per option."""

from __future__ import annotations

from typing import Any

from app.domain.procurement.drift_schemas import DriftRead
from app.domain.shared.schemas import RangeRead
from app.web.spreadsheets import RANGE_ENDS, csv_bytes

#: the columns before the money ones
HEAD = ("option", "stored_recommended", "now_recommended", "stored_rank", "now_rank")
#: the columns after them
TAIL = ("change", "offers_gone", "stored_knowledge_version", "now_knowledge_version")


def columns(currency: str) -> list[str]:
    """The header: a money column's name ends with the currency, as the other CSV answers' do."""
    cur = currency.lower()
    money = [f"{side}_total_cost_{end}_{cur}" for side in ("stored", "now") for end in RANGE_ENDS]
    return [*HEAD, *money, *TAIL]


def drift_csv(d: DriftRead) -> bytes:
    """A row per option (the stored answer's, then those ranked now only): whether each side recommends it,
    its rank on each side, its total cost's low/expected/high on each side, the change of the expected total
    (a fraction), the offers of it gone (their names, ``; ``-separated) and both knowledge versions."""
    rows: list[list[Any]] = []
    for option, cost in d.cost_changes.items():
        gone = "; ".join(g.name or g.subject for g in d.offers_gone if g.option == option)
        rows.append(
            [
                option,
                d.stored.recommended_option == option,
                d.now.recommended_option == option,
                d.stored.ranks.get(option),
                d.now.ranks.get(option),
                *_ends(d.stored.costs.get(option)),
                *_ends(d.now.costs.get(option)),
                cost.change,
                gone or None,
                d.stored.knowledge_version,
                d.now.knowledge_version,
            ]
        )
    return csv_bytes(columns(d.currency), rows)


def _ends(r: RangeRead | None) -> list[float | None]:
    return [None, None, None] if r is None else [r.low, r.expected, r.high]
