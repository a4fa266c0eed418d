"""An organisation's private price book over the list (app.kb.books): a private row prices the offer of its
identity in place of the list's row on the days it holds, never beside it; it adds an offer the list lacks; the
book as of any of its versions is rebuilt from rows never erased; answers on it say ``price_book: "org"`` and
name the book in their knowledge version, and answers of everyone else are unchanged."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from types import SimpleNamespace
from typing import Any

import msgspec
from seed_snapshot import knowledge_from_seeds

from app.core.knowledge import Price
from app.domain.decisions.service import DecisionService
from app.domain.shared.advisor import Advisor
from app.domain.shared.demand import ComparisonCreate
from app.host.manager import create_option_host
from app.kb.books import Book, Books, book_of, identity, overlay, rows_at

D = dt.date
AS_OF = D(2026, 12, 1)
#: the list's on-demand p5.48xlarge in us-east-1 (seeds/41-offers-hyperscalers.yaml): 55.04 USD per server-hour
P5 = {
    "option": "rented_gpu_instances",
    "provider": "aws",
    "item": "instance_hour",
    "subject": "p5.48xlarge",
    "gpu_model": "h100_sxm",
    "plan": "on_demand",
    "unit": "per_server_hour",
    "gpus_per_unit": 8,
    "currency": "USD",
    "region": "us-east-1",
}


def _row(id: int, *, low: float, valid_from: D, valid_to: D | None = None, added_in: int = 1, **more: Any) -> Any:
    """An ``org_prices`` row as the database hands it back (columns as attributes)."""
    values = {
        **P5,
        "low": low,
        "expected": None,
        "high": low,
        "regions": None,
        "capacity_gpus": None,
        "lead_time_days_low": None,
        "lead_time_days_high": None,
        "min_gpus": None,
        "residency": "public_multi_tenant",
        "interconnect": "efa",
        "billing": None,
        "min_kw": None,
        "max_term_days": None,
        "source": "Acme ML's negotiated AWS quote, 2026-11-20 (private)",
        "source_quality": "verified",
        "retrieved_on": D(2026, 11, 20),
        "notes": None,
        "closed_in": None,
        "closed_on": None,
    }
    values.update(more)
    return SimpleNamespace(id=id, valid_from=valid_from, valid_to=valid_to, added_in=added_in, **values)


def _p5_rows(kb: Any, day: D) -> list[Price]:
    return [p for p in kb.rows("rented_gpu_instances", "instance_hour", day) if identity(p)[2:7] == identity_p5()]


def identity_p5() -> tuple[str, ...]:
    return ("aws", "p5.48xlarge", "h100_sxm", "on_demand", "us-east-1")


def test_a_private_row_replaces_the_list_row_of_its_identity_only_on_the_days_it_holds() -> None:
    kb = knowledge_from_seeds()
    book = book_of("acme-ml", 1, [_row(7, low=40.0, valid_from=D(2026, 11, 1), valid_to=D(2027, 2, 1))])
    mine = overlay(kb, book)
    assert mine.version == "kv-seeds+org:acme-ml.1"
    (during,) = _p5_rows(mine, AS_OF)
    assert (during.book, during.id, during.value.low, during.ref.table, during.ref.ref) == (
        "org",
        -7,
        40.0,
        "org_prices",
        "7",
    )
    (before,) = _p5_rows(mine, D(2026, 10, 31))
    (after,) = _p5_rows(mine, D(2027, 2, 1))
    assert before.book == after.book == "list"
    assert before.value.low == after.value.low == 55.04
    # the list itself is untouched
    assert [p.book for p in _p5_rows(kb, AS_OF)] == ["list"]
    assert len(mine.prices) == len(kb.prices) + 2  # the private row, and the list row cut in two


def test_a_private_row_of_an_identity_the_list_lacks_adds_an_offer() -> None:
    kb = knowledge_from_seeds()
    book = book_of("acme-ml", 1, [_row(8, low=30.0, valid_from=D(2026, 11, 1), region="us-west-2")])
    mine = overlay(kb, book)
    assert len(mine.prices) == len(kb.prices) + 1
    added = [p for p in mine.prices if p.book == "org"]
    assert [(p.region, p.value.low) for p in added] == [("us-west-2", 30.0)]


def test_the_book_at_each_version_is_rebuilt_from_rows_never_erased() -> None:
    closed = _row(1, low=40.0, valid_from=D(2026, 11, 1), added_in=1, closed_in=3, closed_on=D(2026, 12, 15))
    later = _row(2, low=38.0, valid_from=D(2026, 12, 15), added_in=2)
    gone = _row(3, low=20.0, valid_from=D(2026, 12, 1), added_in=2, closed_in=4, closed_on=D(2026, 12, 1))
    rows = [closed, later, gone]
    assert [(r.id, to) for r, to in rows_at(rows, 1)] == [(1, None)]
    assert [(r.id, to) for r, to in rows_at(rows, 2)] == [(1, None), (2, None), (3, None)]
    assert [(r.id, to) for r, to in rows_at(rows, 3)] == [(1, D(2026, 12, 15)), (2, None), (3, None)]
    # closed on its first day: it never held, so it is gone from version 4 on
    assert [(r.id, to) for r, to in rows_at(rows, 4)] == [(1, D(2026, 12, 15)), (2, None)]


def _engine(kb: Any) -> Advisor:
    return Advisor(create_option_host(), lambda: kb, today=lambda: AS_OF, books=Books(lambda: None, 60))  # type: ignore[arg-type, return-value]


REQUEST = {
    "team_size": 20,
    "gpus": 64,
    "utilization": 0.5,
    "horizon_years": 1,
    "currency": "USD",
    "as_of": "2026-12-01",
}


def _rented_offer(doc: dict[str, Any]) -> dict[str, Any]:
    (item,) = [i for i in doc["items"] if i["option"] == "rented_gpu_instances"]
    return item["offer"]


def _compare(decisions: DecisionService, book: Book | None, body: dict[str, Any]) -> dict[str, Any]:
    with decisions.advisor.priced_with(book):
        doc = decisions.compare(ComparisonCreate.model_validate(body))
    return json.loads(msgspec.json.encode(doc))


def test_an_organisations_quote_prices_its_answers_and_no_one_elses() -> None:
    kb = knowledge_from_seeds()
    decisions = DecisionService(_engine(kb))
    body = {**REQUEST, "gpu_model": "h100_sxm", "providers": ["aws"], "regions": ["us-east-1"]}
    listed = _compare(decisions, None, body)
    assert _rented_offer(listed)["price_book"] == "list"
    offer = _rented_offer(listed)
    cheapest_listed = offer["price"]["expected"]  # per unit, in USD as quoted
    row = _row(
        9,
        low=round(cheapest_listed / 2, 6),  # the organisation's quote: half the list's
        valid_from=D(2026, 11, 1),
        subject=offer["subject"],
        plan=offer["plan"],
        unit=offer["unit"],
        gpus_per_unit=offer["gpus_per_unit"],
        region=offer["region"],
        residency=offer["residency"],
    )
    book = book_of("acme-ml", 1, [row])
    mine = _compare(decisions, book, body)
    assert mine["knowledge_version"] == "kv-seeds+org:acme-ml.1"
    assert _rented_offer(mine)["price_book"] == "org"
    assert _rented_offer(mine)["price"]["expected"] == round(cheapest_listed / 2, 4)
    # everyone else: the list's answer, byte for byte (the memo keeps the two apart)
    assert _compare(decisions, None, body) == listed
    # the same book again: the same answer (replayable from the version it names)
    assert _compare(decisions, book_of("acme-ml", 1, [row]), body) == mine


def test_an_overlay_is_made_once_per_knowledge_and_book_version() -> None:
    kb = knowledge_from_seeds()
    books = Books(lambda: None, 60)  # type: ignore[arg-type, return-value]
    book = book_of("acme-ml", 1, [_row(7, low=40.0, valid_from=D(2026, 11, 1))])
    first = books.knowledge(kb, book)
    assert books.knowledge(kb, book_of("acme-ml", 1, [_row(7, low=40.0, valid_from=D(2026, 11, 1))])) is first
    assert books.knowledge(kb, None) is kb
    assert books.knowledge(kb, dataclasses.replace(book, version=2)) is not first


def test_an_organisations_quote_is_an_input_of_its_sensitivity() -> None:
    """Sensitivity moves every ranged row an answer cites: a private quote too, named as answers cite it."""
    from app.domain.insights.service import InsightService
    from app.domain.shared.schemas import ProfileCreate

    kb = knowledge_from_seeds()
    insights = InsightService(_engine(kb))
    body = ProfileCreate.model_validate(
        {**REQUEST, "gpu_model": "h100_sxm", "providers": ["aws"], "regions": ["us-east-1"]}
    )
    listed = _compare(
        DecisionService(insights.advisor),
        None,
        {**REQUEST, "gpu_model": "h100_sxm", "providers": ["aws"], "regions": ["us-east-1"]},
    )
    offer = _rented_offer(listed)
    quoted = offer["price"]["expected"] / 2
    row = _row(
        9,
        low=round(quoted * 0.9, 6),
        high=round(quoted * 1.1, 6),
        valid_from=D(2026, 11, 1),
        subject=offer["subject"],
        plan=offer["plan"],
        unit=offer["unit"],
        gpus_per_unit=offer["gpus_per_unit"],
        region=offer["region"],
        residency=offer["residency"],
    )
    with insights.advisor.priced_with(book_of("acme-ml", 1, [row])):
        mine = insights.sensitivity(body)
    with insights.advisor.priced_with(None):
        theirs = insights.sensitivity(body)
    quote = [i for i in mine.inputs if i.ref == "org_prices:9"]
    assert [(i.kind, i.low, i.high) for i in quote] == [("price", row.low, row.high)]
    assert not [i for i in theirs.inputs if i.ref.startswith("org_prices:")]
