"""The capacity plan's mixed-integer programme (``app.engine.capacity.solver``) on hand-made cost
tables whose optimum is worked out by hand, and the 36 monthly phases of ``make capacity-bench``
proved optimal on the seeds (docs/methodology.md "Capacity plans")."""

from __future__ import annotations

import datetime as dt

import pytest
from seed_snapshot import knowledge_from_seeds

from app.core.ranges import Range
from app.core.types import Profile
from app.engine import capacity as cap
from app.engine.capacity.solver import held_whole, solve
from app.engine.capacity.tables import COMMIT, USE, Item, Priced
from app.engine.insights.common import Variant
from app.host.manager import create_option_host

RENTED = Variant("rented_gpu_instances", "reserved_1y")
USED = Variant("rented_gpu_instances")
#: the groups a job may run on: the reservations together, or the GPUs used
RESERVED_GROUP = ("rented_gpu_instances", "reserved_1y", COMMIT)
USED_GROUP = ("rented_gpu_instances", None, USE)


def priced(cost: float) -> Priced:
    money = Range.point(cost)
    return Priced(money, money, Range.point(0), money, 0.0, 0.0, True, True, cost)


def step(first: int, last: int, level: int, level_gpus: int, gpus: int, cost: float) -> Item:
    """A step of a reservation's staircase: ``gpus`` more, to ``level_gpus``, for ``cost`` more."""
    return Item(RENTED, COMMIT, first, last, gpus, priced(cost), level=level, level_gpus=level_gpus)


def used(phase: int, gpus: int, cost: float) -> Item:
    return Item(USED, USE, phase, phase, gpus, priced(cost))


def every(phases: int) -> dict[tuple[tuple[str, str | None, str], int], bool]:
    return {(g, p): True for g in (RESERVED_GROUP, USED_GROUP) for p in range(phases)}


def test_a_reservation_is_not_topped_up_by_gpus_used_for_one_job() -> None:
    """Two phases of 64 and 72 GPUs, each one job. A reservation over both costs 64 for 64 GPUs and
    64 more for 128; GPUs used cost 2 each. By hand: 128 reserved cost 128; 64 reserved and the second
    phase's 72 used 64 + 144 = 208; everything used 128 + 144 = 272. Reserving 64 and using 8 more
    (80) would split the second phase's job over two groups: not a plan. The optimum is 128."""
    demand = cap.phases([(6, 64, 0.9, None), (6, 72, 0.9, None)])
    items = [
        step(0, 1, 0, 64, 64, 64.0),
        step(0, 1, 1, 128, 64, 64.0),
        *(used(p, n, 2.0 * n) for p, d in enumerate((64, 72)) for n in (8, d)),
    ]
    found = solve(demand, items, every(2))
    assert found is not None and found.optimal
    assert found.objective == pytest.approx(128.0)
    assert sorted(i.level_gpus for i, amount in found.taken if amount > 0.5) == [64, 128]


def test_a_last_step_rounded_by_branching() -> None:
    """Two phases of 64 and 80 GPUs, each one job, and no GPUs used that hold a job. A reservation over
    both: 64 GPUs for 64, 88 for 30 more; one over the second phase alone: 16 GPUs for 22. By hand: 88
    reserved cost 94; 64 over both and 16 over the second 64 + 22 = 86. The relaxation takes two thirds
    of the step to 88 (64 + 20 = 84, fractional); the plan is the integral 86, proved."""
    demand = cap.phases([(6, 64, 0.9, None), (6, 80, 0.9, None)])
    items = [
        step(0, 1, 0, 64, 64, 64.0),
        step(0, 1, 1, 88, 24, 30.0),
        step(1, 1, 0, 16, 16, 22.0),
    ]
    job_ok = {(RESERVED_GROUP, p): True for p in range(2)}
    found = solve(demand, items, job_ok)
    assert found is not None and found.optimal
    assert found.objective == pytest.approx(86.0)
    assert sorted((i.first, i.level_gpus) for i, amount in found.taken if amount > 0.5) == [(0, 64), (1, 16)]


def test_gpus_used_hold_a_whole_job_at_their_cheapest_mix() -> None:
    """Samples of 8 GPUs for 8 and of 64 for 128; a 32-GPU job: 32/64 of the larger costs 64, the mix
    of both on the line between them 8 + 24 × 120/56 = 59.43 — the cheaper."""
    samples = [used(0, 8, 8.0), used(0, 64, 128.0)]
    holding = held_whole(samples, 32)
    assert holding is not None
    assert holding.cost == pytest.approx(8 + 24 * 120 / 56)
    assert sum(i.gpus * w for i, w in holding.mix) == pytest.approx(32)
    assert held_whole(samples, 65) is None


def test_no_plan_when_a_phase_has_no_option_for_its_job() -> None:
    demand = cap.phases([(12, 64, 0.9, None)])
    assert solve(demand, [step(0, 0, 0, 64, 64, 64.0)], {}) is None


@pytest.mark.parametrize("gpu_model", [None, "h100_sxm"], ids=["reference", "h100"])
def test_thirty_six_monthly_phases_are_proved_optimal(gpu_model: str | None) -> None:
    """``make capacity-bench``'s first demand (64 GPUs, 8 more each month, at 80 %): the mix and every
    single option proved optimal within the time limits (before, the mix was not within 2 s), in fewer
    kernel calls than phases (a segment's phases are re-priced in one call; 74 and 98 calls before)."""
    host, kb = create_option_host(), knowledge_from_seeds()
    variants = [
        Variant(k, p) for k in sorted(host.options, reverse=True) for p in (host.options[k].spec.plans or (None,))
    ]
    demand = cap.phases([(1, 64 + 8 * m, 0.8, None) for m in range(36)])
    base = Profile(
        gpus=344,
        utilization=0.8,
        horizon_years=3,
        as_of=dt.date(2026, 12, 1),
        currency="USD" if gpu_model else "CNY",
        gpu_model=gpu_model,
        team_size=20,
        ops_team="professional",
        start_within_days=120,
    )
    unit = kb.server_for(gpu_model).gpus_per_server
    found = cap.plan(
        host, kb, base, demand, options=list(host.options), variants=variants, owner=host.owner(), unit=unit
    )
    assert found.optimal
    assert found.kernel_calls < len(demand)
    for p in found.portfolios:
        assert p.feasible, p.key
        assert not any(r.code == "capacity.not_optimal" for r in p.reasons), p.key
