"""Properties of capacity plans on the reference data and on H100 (hypothesis): the recommended
portfolio never costs more than any single option; the mix covers every phase's demand."""

from __future__ import annotations

import datetime as dt

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seed_snapshot import knowledge_from_seeds

from app.core.types import Profile
from app.engine import capacity as cap
from app.engine.insights.common import Variant
from app.host.manager import create_option_host

HOST = create_option_host()
KB = knowledge_from_seeds()
VARIANTS = [Variant(k, p) for k in sorted(HOST.options, reverse=True) for p in (HOST.options[k].spec.plans or (None,))]
AS_OF = dt.date(2026, 12, 1)

phases = st.lists(
    st.tuples(st.sampled_from([3, 6, 12]), st.integers(1, 64).map(lambda n: n * 8), st.sampled_from([0.3, 0.6, 0.9])),
    min_size=1,
    max_size=6,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=phases, hardware=st.sampled_from([(None, "CNY"), ("h100_sxm", "USD")]), split=st.booleans())
def test_the_recommended_portfolio_never_costs_more_than_a_single_option(
    items: list[tuple[int, int, float]], hardware: tuple[str | None, str], split: bool
) -> None:
    demand = cap.phases([(m, g, u, max(8, g // 2) if split else None) for m, g, u in items])
    months = sum(m for m, _, _ in items)
    gpu_model, currency = hardware
    base = Profile(
        gpus=max(g for _, g, _ in items),
        utilization=0.5,
        horizon_years=months / 12,
        as_of=AS_OF,
        currency=currency,
        gpu_model=gpu_model,
        team_size=20,
        ops_team="professional",
        start_within_days=120,
    )
    found = cap.plan(
        HOST,
        KB,
        base,
        demand,
        options=list(HOST.options),
        variants=VARIANTS,
        owner=HOST.owner(),
        unit=KB.server_for(gpu_model).gpus_per_server,
    )
    feasible = [p for p in found.portfolios if p.feasible]
    assert feasible and found.recommended is not None
    best = next(p for p in found.portfolios if p.key == found.recommended)
    hybrid = next(p for p in found.portfolios if p.key == cap.HYBRID)
    for p in feasible:
        assert best.objective <= p.objective + 1e-6 * abs(p.objective)
        if p.kind == cap.SINGLE:
            assert hybrid.objective <= p.objective + 1e-6 * abs(p.objective)
    for k, phase in enumerate(demand):
        assert sum(s.gpus_by_phase[k] for s in best.segments) >= phase.gpus
