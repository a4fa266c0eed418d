"""Capital over a horizon (docs/methodology.md "Capital"): hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.core.capital import annuity, asset_flows, discount_factor, residual_curve


def test_annuity_and_discount_are_the_continuous_stream_and_the_end_value():
    r = 0.08
    delta = math.log(1.08)
    assert annuity(3, r) == pytest.approx((1 - 1.08**-3) / delta)
    assert annuity(3, 0.0) == pytest.approx(3)  # no cost of capital: plain years
    assert discount_factor(2, r) == pytest.approx(1 / 1.08**2)


def test_an_asset_that_outlives_the_horizon_is_sold_at_the_end():
    # 100 bought at 0 (delivered at once), 5-year life, residual falls 30 % a year; a 3-year horizon
    cash, npv, bought = asset_flows(100.0, life=5.0, residual=residual_curve(0.30), start=0.0, horizon=3.0, rate=0.0)
    assert bought == 1
    assert cash == pytest.approx(100 - 100 * 0.7**3)  # 65.7: what owning it for 3 years cost
    assert npv == pytest.approx(cash)  # no discounting at rate 0


def test_a_horizon_longer_than_the_life_replaces_the_asset_and_sells_each_one():
    # 3-year life over 5 years: bought at 0 and 3, the first sold at 3 (age 3), the second at 5 (age 2)
    curve = residual_curve(0.25)
    cash, npv, bought = asset_flows(100.0, life=3.0, residual=curve, start=0.0, horizon=5.0, rate=0.10)
    assert bought == 2
    assert cash == pytest.approx(200 - 100 * 0.75**3 - 100 * 0.75**2)
    v = 1 / 1.10
    assert npv == pytest.approx(100 + 100 * v**3 - 100 * 0.75**3 * v**3 - 100 * 0.75**2 * v**5)


def test_a_late_delivery_shortens_the_life_used_within_the_horizon():
    # delivered after half a year: at the horizon (2 years) the asset is 1.5 years old
    cash, _, _ = asset_flows(100.0, life=5.0, residual=residual_curve(0.20), start=0.5, horizon=2.0, rate=0.0)
    assert cash == pytest.approx(100 - 100 * 0.8**1.5)


def test_market_resale_points_make_the_curve_and_it_declines_beyond_them():
    curve = residual_curve(0.30, points=((1.0, 0.62), (2.0, 0.42), (3.0, 0.30)))
    assert curve(0.0) == pytest.approx(1.0)
    assert curve(1.5) == pytest.approx((0.62 + 0.42) / 2)
    assert curve(3.0) == pytest.approx(0.30)
    assert curve(4.0) == pytest.approx(0.30 * 0.30 / 0.42)  # the last year's rate of decline goes on


def test_everything_works_element_wise_for_batches():
    horizons = np.array([1.0, 3.0, 6.0])
    cash, npv, bought = asset_flows(
        100.0, life=5.0, residual=residual_curve(0.3), start=0.0, horizon=horizons, rate=0.05
    )
    assert list(bought) == [1, 1, 2]
    single = [
        asset_flows(100.0, life=5.0, residual=residual_curve(0.3), start=0.0, horizon=h, rate=0.05)
        for h in (1.0, 3.0, 6.0)
    ]
    assert np.allclose(cash, [c for c, _, _ in single]) and np.allclose(npv, [n for _, n, _ in single])
