"""Reliability at scale: Young–Daly by hand, and the published large runs it must reproduce."""

from __future__ import annotations

import math

import pytest

from app.core import reliability as rel


def test_young_daly_by_hand():
    # 1,000 GPUs at 0.876 failures per GPU-year: one failure every 10 hours; checkpoints take 0.05 h
    m = rel.mtbf_hours(0.876, 1000)
    assert m == pytest.approx(10.0)
    t = rel.checkpoint_interval_hours(m, 0.05)
    assert t == pytest.approx(1.0)  # √(2 × 10 × 0.05)
    # 0.05 of every hour checkpointing; each failure costs 0.1 + 0.4 + 0.5 = 1 hour, one in 10 hours
    assert rel.wasted_share(m, 0.05, 0.1, 0.4) == pytest.approx(0.05 + 0.1)
    assert rel.goodput(m, 0.05, 0.1, 0.4) == pytest.approx(0.85)


def test_failures_faster_than_recovery_leave_no_goodput():
    assert rel.goodput(rel.mtbf_hours(0.25, 16_384), 0.05, 2.0, 12.0) == 0.0


def test_llama3_interruption_rate_is_the_one_the_knowledge_base_uses():
    """Llama 3 405B (arXiv 2407.21783, via datacenterdynamics.com): 419 unexpected interruptions in a
    54-day snapshot on 16,384 H100 — one every 3.1 hours."""
    rate = 419 / (16_384 * 54 / 365)  # per GPU-year
    assert rate == pytest.approx(0.173, abs=0.001)
    assert rel.mtbf_hours(rate, 16_384) == pytest.approx(54 * 24 / 419, rel=1e-9)
    assert math.isclose(54 * 24 / 419, 3.09, abs_tol=0.01)
