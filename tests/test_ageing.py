"""An owned asset as it ages (app/core/ageing.py): one profile's plan is computed on Python floats —
the figures NumPy gave it to the last bit, kept past its life or replaced — and a batch's on arrays
(NumPy's vectorised powers may differ from its scalar ones in the last place, which at a cost of
capital near 0 the closed forms' division by ln(1 + rate) magnifies)."""

from __future__ import annotations

import datetime as dt
import random

import numpy as np
import pytest
from seed_snapshot import knowledge_from_seeds

import app.core.ageing as ageing
from app.core.ageing import Keeping, on_market, plan
from app.core.capital import residual_curve
from app.core.columns import ALL
from app.core.ranges import Range
from app.core.types import Profile
from app.host.manager import create_option_host


def _cases(n: int) -> list[tuple[dict[str, float], Keeping, object]]:
    rng = random.Random(20261206)
    curves = [
        residual_curve(0.25),
        residual_curve(0.30, points=((1.0, 0.62), (2.0, 0.42), (3.0, 0.30))),
        on_market(residual_curve(0.2, points=((1.0, 0.7), (4.0, 0.2))), 0.15, 0.25),
    ]
    found = []
    for _ in range(n):
        keeping = Keeping(
            Range.point(rng.choice([1, 3, 5.0])),
            Range.point(rng.choice([0.0, 0.02, 0.035])),
            Range.point(rng.choice([0.0, 0.08, 0.12])),
            Range.point(rng.choice([0.0, 1.0, 2.0])),
            Range.point(rng.choice([0.0, 0.5])),
        )
        numbers = {
            "life": rng.choice([3.0, 4.0, 5.0, 6.5]),
            "start": rng.choice([0.0, 0.1, 0.25, rng.uniform(0, 1)]),
            "horizon": rng.choice([1.0, 2.0, 3.0, 5.0, 7.0, 10.0, rng.uniform(0.5, 12)]),
            "rate": rng.choice([0.0, 0.05, 0.08, rng.uniform(0, 0.2)]),
        }
        found.append((numbers, keeping, rng.choice(curves)))
    return found


def test_one_profiles_plan_is_the_array_paths_to_the_last_bit():
    extended = 0
    for numbers, keeping, curve in _cases(1000):
        for e in (0, 1, 2):
            one = plan(e, residual=curve, keeping=keeping, **numbers)
            # NumPy scalars take the array path (as the one path did before one profile had its own)
            scalar = plan(e, residual=curve, keeping=keeping, **{k: np.float64(v) for k, v in numbers.items()})
            batch = plan(e, residual=curve, keeping=keeping, **{k: np.array([v, v]) for k, v in numbers.items()})
            extended += one.extended
            # at a cost of capital near 0 the closed forms lose digits to 1 − v^t (MIN_RATE 1e-9)
            rel = 1e-5 if numbers["rate"] < 1e-3 else 1e-12
            for field in ("cash", "npv", "support_cash", "support_npv", "extended"):
                got = getattr(one, field)
                assert type(got) is (bool if field == "extended" else float)
                assert got == getattr(scalar, field), (field, numbers, e)
                assert got == pytest.approx(getattr(batch, field)[0], rel=rel, abs=1e-12), (field, numbers, e)
    assert extended > 100  # both branches are compared


def test_offers_of_one_server_in_several_machine_rooms_share_its_plans() -> None:
    """An own cluster's offers of one server (colocation, an own facility) keep their assets alike: one
    keeping object each, so a call prices each asset's plan once for the offers delivered on the same day
    (``ageing.priced`` keeps plans by identity), and figures equal to pricing each offer alone."""
    kb = knowledge_from_seeds()
    kernel = create_option_host().kernel("self_built_cluster", kb, "USD", dt.date(2026, 12, 1))
    offers = kernel.group("h100_sxm")
    keepings = {id(i.keeping) for c in offers for i in c.data.capital if i.keeping is not None}
    kinds = {i.keeping for c in offers for i in c.data.capital if i.keeping is not None}
    assert len(offers) >= 4 and len(keepings) == len(kinds) < len(offers)
    day = dt.date(2026, 12, 1)
    profile = Profile(gpus=256, utilization=0.6, horizon_years=5, as_of=day, currency="USD", gpu_model="h100_sxm")
    made = []
    plan_of = ageing.plan

    def counted(e: int, **given: object) -> ageing.Plan:
        made.append(e)
        return plan_of(e, **given)

    ageing.plan = counted  # type: ignore[assignment]
    try:
        together = kernel.quotes(kernel.columns(profile, ALL), offers)
        priced_together = len(made)
        alone = [kernel.quotes(kernel.columns(profile, ALL), [c])[0] for c in offers]
    finally:
        ageing.plan = plan_of  # type: ignore[assignment]
    assert priced_together < len(made) - priced_together  # shared in one call, made again for each alone
    assert [repr(q.total) for q in together] == [repr(q.total) for q in alone]
