"""Price comparisons as CSV, for spreadsheets: one row per option and one per breakdown line."""

from __future__ import annotations

import io

from app.domain.decisions.schemas import ComparisonRead
from app.lib.negotiation import SafeCsvWriter

RANGE_FIELDS = ("annual_cost", "total_cost", "upfront_cost", "cost_per_useful_gpu_hour")
ENDS = ("low", "expected", "high")


def comparison_csv(doc: ComparisonRead) -> str:
    """One row per option (record ``total``) and one per breakdown line (record ``line_item``); every cell
    through ``csv_cell`` (no formula from a price book's label or source reaches a spreadsheet)."""
    out = io.StringIO()
    w = SafeCsvWriter(out)
    w.writerow(
        [
            "knowledge_version",
            "currency",
            "as_of",
            "option",
            "record",
            "label",
            *(f"{f}_{end}" for f in RANGE_FIELDS for end in ENDS),
            "sources",
            "error",
        ]
    )
    for item in doc.items:
        head = [doc.knowledge_version, doc.currency, doc.as_of.isoformat(), item.option]
        figures = [
            getattr(getattr(item, f), end) if getattr(item, f) is not None else "" for f in RANGE_FIELDS for end in ENDS
        ]
        w.writerow([*head, "total", item.name, *figures, "", item.error or ""])
        for li in item.breakdown:
            annual = [li.annual.low, li.annual.expected, li.annual.high]
            upfront = [li.upfront.low, li.upfront.expected, li.upfront.high]
            sources = " | ".join(f"{x.table}:{x.ref}" for x in li.sources)
            w.writerow([*head, "line_item", li.label, *annual, "", "", "", *upfront, "", "", "", sources, ""])
    return out.getvalue()
