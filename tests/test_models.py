"""The knowledge-base schema enforces what one row can know, on SQLite and on PostgreSQL alike.

Each case starts from a row the database accepts and breaks one thing; the database (not the
seed loader) must refuse it, naming the constraint that caught it.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from conftest import BACKENDS, Databases
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from app.kb import models as m
from app.settings import Settings


def price(**overrides: Any) -> m.PriceItem:
    values: dict[str, Any] = {
        "option": "rented_gpu_instances",
        "provider": "cloud",
        "item": "instance_hour",
        "subject": "*",
        "unit": "per_server_hour",
        "low": Decimal("90"),
        "expected": Decimal("100"),
        "high": Decimal("110"),
        "currency": "CNY",
        "region": "CN",
        "valid_from": dt.date(2025, 1, 1),
        "valid_to": None,
        "source": "test",
        "source_quality": "assumption",
    }
    values.update(overrides)
    return m.PriceItem(**values)


def assumption(**overrides: Any) -> m.Assumption:
    values: dict[str, Any] = {
        "option": "*",
        "key": "training_run_hours",
        "unit": "hours",
        "low": Decimal("24"),
        "expected": Decimal("72"),
        "high": Decimal("168"),
        "source": "test",
        "source_quality": "assumption",
        "rationale": "a test",
    }
    values.update(overrides)
    return m.Assumption(**values)


def rule(**overrides: Any) -> m.ScenarioRule:
    values: dict[str, Any] = {
        "key": "big_team",
        "option": "ai_compute_platform",
        "description": "a test rule",
        "match": "all",
        "conditions": [{"field": "profile.team_size", "op": "ge", "value": 5}],
        "effect": "bonus",
        "points": Decimal("5"),
        "reason": "because",
        "rationale": "a test",
        "source": "test",
        "source_quality": "assumption",
    }
    values.update(overrides)
    return m.ScenarioRule(**values)


async def _insert(url: str, *rows: m.Base) -> None:
    """Insert ``rows`` in one transaction (committed when the database accepts them)."""
    engine = create_async_engine(Settings(database_url=url).async_database_url)
    try:
        async with async_sessionmaker(engine)() as session, session.begin():
            session.add_all(rows)
    finally:
        await engine.dispose()


async def _count(url: str, model: type[m.Base]) -> int:
    engine = create_async_engine(Settings(database_url=url).async_database_url)
    try:
        async with async_sessionmaker(engine)() as session:
            return len((await session.scalars(select(model))).all())
    finally:
        await engine.dispose()


# PostgreSQL names the unique constraint; SQLite names its columns
UNIQUE_PRICE = ("uq_price_items_", "UNIQUE constraint failed: price_items.option, price_items.provider")
UNIQUE_ASSUMPTION = ("uq_assumptions_option_key", "UNIQUE constraint failed: assumptions.option, assumptions.key")

# (id, rows that are fine, the offending row, the constraint that must catch it)
REJECTED = [
    ("price-low-above-high", [], lambda: price(low=Decimal("120"), expected=None), "low_le_high"),
    ("price-expected-below-low", [], lambda: price(expected=Decimal("80")), "expected_in_range"),
    ("price-expected-above-high", [], lambda: price(expected=Decimal("111")), "expected_in_range"),
    ("price-unknown-unit", [], lambda: price(unit="per_fortnight"), "ck_price_items_unit"),
    ("price-unknown-currency", [], lambda: price(currency="GBP"), "ck_price_items_currency"),
    ("price-valid-to-equals-from", [], lambda: price(valid_to=dt.date(2025, 1, 1)), "validity_ordered"),
    ("price-valid-to-before-from", [], lambda: price(valid_to=dt.date(2024, 12, 31)), "validity_ordered"),
    (
        "price-negative-low",
        [],
        lambda: price(low=Decimal("-1"), expected=None, high=Decimal("5")),
        "low_non_negative",
    ),
    ("price-duplicate-natural-key", [price], lambda: price(low=Decimal("1"), expected=None), UNIQUE_PRICE),
    ("assumption-low-above-high", [], lambda: assumption(low=Decimal("200"), expected=None), "low_le_high"),
    ("assumption-expected-out-of-range", [], lambda: assumption(expected=Decimal("169")), "expected_in_range"),
    ("assumption-unknown-unit", [], lambda: assumption(unit="fortnights"), "ck_assumptions_unit"),
    ("assumption-duplicate-natural-key", [assumption], lambda: assumption(low=Decimal("1")), UNIQUE_ASSUMPTION),
    ("rule-bonus-without-points", [], lambda: rule(points=None), "points_fit_effect"),
    ("rule-infeasible-with-points", [], lambda: rule(effect="infeasible"), "points_fit_effect"),
    ("rule-unknown-effect", [], lambda: rule(effect="veto"), "ck_scenario_rules_effect"),
]


@pytest.fixture(scope="module", params=BACKENDS)
def shared_db(request: pytest.FixtureRequest, databases: Databases) -> str:
    """One migrated database per backend for the rejection cases: each runs in a transaction of its
    own that is rolled back, so they cannot see each other's rows."""
    return databases.migrated(request.param)


@pytest.mark.parametrize(("fine", "bad", "constraint"), [c[1:] for c in REJECTED], ids=[c[0] for c in REJECTED])
async def test_the_database_rejects(shared_db: str, fine, bad, constraint: str | tuple[str, ...]) -> None:
    engine = create_async_engine(Settings(database_url=shared_db).async_database_url)
    try:
        async with async_sessionmaker(engine)() as session:
            async with session.begin():
                # the rows it needs, and the valid row it is built from, are accepted (flushed: the
                # database checked them), so the rejection below is the broken field's doing
                session.add_all([make() for make in fine])
                session.add(type(bad())(**_accepted_twin(bad())))
                await session.flush()
                session.add(bad())
                with pytest.raises(IntegrityError) as caught:
                    await session.flush()
                await session.rollback()
            assert await session.scalar(select(func.count()).select_from(type(bad()))) == 0
    finally:
        await engine.dispose()

    message = str(caught.value.orig)
    assert any(c in message for c in ((constraint,) if isinstance(constraint, str) else constraint)), message


def _accepted_twin(row: m.Base) -> dict[str, Any]:
    """The default valid row of the same table, under a natural key of its own."""
    if isinstance(row, m.PriceItem):
        return {c: getattr(price(valid_from=dt.date(2030, 1, 1)), c) for c in _columns(row)}
    if isinstance(row, m.Assumption):
        return {c: getattr(assumption(key="twin"), c) for c in _columns(row)}
    return {c: getattr(rule(key="twin"), c) for c in _columns(row)}


def _columns(row: m.Base) -> list[str]:
    return [c.key for c in row.__table__.columns if c.key != "id"]


async def test_a_bonus_or_penalty_rule_with_points_and_an_infeasible_rule_without_are_accepted(empty_db: str) -> None:
    await _insert(
        empty_db,
        rule(key="bonus", effect="bonus", points=Decimal("10")),
        rule(key="penalty", effect="penalty", points=Decimal("2.5")),
        rule(key="infeasible", effect="infeasible", points=None),
    )
    assert await _count(empty_db, m.ScenarioRule) == 3


async def test_a_later_price_row_for_the_same_item_is_a_new_row(empty_db: str) -> None:
    """Natural key includes valid_from: a price change is a new, dated row."""
    await _insert(
        empty_db,
        price(valid_to=dt.date(2026, 1, 1)),
        price(valid_from=dt.date(2026, 1, 1), low=Decimal("80"), expected=None, high=Decimal("80")),
        price(currency="USD", low=Decimal("14"), expected=None, high=Decimal("14")),
    )
    assert await _count(empty_db, m.PriceItem) == 3


async def test_money_and_figures_come_back_as_exact_decimals(empty_db: str) -> None:
    await _insert(
        empty_db,
        price(
            low=Decimal("800000.1234"),
            expected=Decimal("1000000.5"),
            high=Decimal("1200000.0001"),
            unit="per_server",
        ),
        assumption(low=Decimal("0.720001"), expected=Decimal("0.77"), high=Decimal("0.833333"), unit="fraction"),
        rule(points=Decimal("12.25")),
    )
    engine = create_async_engine(Settings(database_url=empty_db).async_database_url)
    try:
        async with async_sessionmaker(engine)() as session:
            session: AsyncSession
            p = (await session.scalars(select(m.PriceItem))).one()
            a = (await session.scalars(select(m.Assumption))).one()
            r = (await session.scalars(select(m.ScenarioRule))).one()
    finally:
        await engine.dispose()

    for value in (p.low, p.expected, p.high, a.low, a.expected, a.high, r.points):
        assert isinstance(value, Decimal), type(value)
    assert (p.low, p.expected, p.high) == (Decimal("800000.1234"), Decimal("1000000.5"), Decimal("1200000.0001"))
    assert (a.low, a.expected, a.high) == (Decimal("0.720001"), Decimal("0.77"), Decimal("0.833333"))
    assert r.points == Decimal("12.25")
    assert p.valid_from == dt.date(2025, 1, 1)
    assert p.valid_to is None
    assert r.conditions == [{"field": "profile.team_size", "op": "ge", "value": 5}]
