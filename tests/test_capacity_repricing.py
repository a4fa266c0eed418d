"""A capacity plan's segments re-priced in one kernel call per option: ``select_each`` keeps the quote
it chose per element (``Quote.chosen``), so a batch of requests gives each request's figures, offer and
commitment as if it were priced alone (docs/performance.md "Capacity plans: the optimiser's time")."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from seed_snapshot import knowledge_from_seeds

from app.core.quotes import Quote, select_each
from app.core.ranges import Range
from app.core.types import Profile
from app.engine import capacity as cap
from app.engine.capacity.tables import NO_DEADLINE, Pricer, use_request
from app.engine.insights.common import Variant
from app.host.manager import create_option_host


def quote(effective: list[float], committed: bool, broken: list[bool] | None = None) -> Quote:
    """A quote whose cost per effective GPU-hour is ``effective`` per element (the rest alike)."""
    money = Range.elementwise(*(np.array(effective, dtype=float),) * 3)
    violations = () if broken is None else (("job", np.array(broken)),)
    zero = Range.point(0)
    return Quote(
        None, money, money, zero, money, money, money, 1.0, 1.0, committed, None, None, None, (), (), violations
    )


def test_select_each_keeps_the_quote_chosen_per_element() -> None:
    """The cheaper quote per element, but where it breaks a constraint; its commitment with it."""
    used, reserved = quote([1.0, 3.0, 2.0, 4.0], False), quote([2.0, 1.0, 3.0, 1.0], True, [False, False, False, True])
    chosen = select_each([used, reserved])
    assert [q is reserved for q in chosen.chosen(4)] == [False, True, False, False]
    assert [q.committed for q in chosen.chosen(4)] == [False, True, False, False]
    assert chosen.effective.expected.tolist() == [1.0, 1.0, 2.0, 4.0]


def test_one_quote_chosen_everywhere_is_chosen_for_each_element() -> None:
    cheap, dear = quote([1.0, 1.0], True), quote([2.0, 3.0], False)
    chosen = select_each([dear, cheap])
    assert chosen.each is None
    assert all(q is chosen and q.committed for q in chosen.chosen(2))


@pytest.mark.parametrize("option", ["ai_compute_platform", "rented_gpu_instances"])
def test_requests_priced_together_as_each_alone(option: str) -> None:
    """Phases of 1 to 1,024 H100 through one kernel call: each phase's figures, offer and commitment
    bit for bit those of the phase priced alone, where the kernel chooses several offers (pay as you go
    and a two-week reservation on the platform; two providers rented)."""
    host, kb = create_option_host(), knowledge_from_seeds()
    shape = [(8, 0.3), (16, 0.5), (64, 0.8), (256, 0.9), (512, 0.95), (24, 0.2), (2, 0.1), (1024, 0.9), (1, 0.5)]
    demand = cap.phases([(1, gpus, utilization, None) for gpus, utilization in shape])
    base = Profile(
        gpus=1024,
        utilization=0.8,
        horizon_years=1,
        as_of=dt.date(2026, 12, 1),
        currency="USD",
        gpu_model="h100_sxm",
        team_size=20,
        ops_team="professional",
    )
    requests = [use_request(p, p.gpus, NO_DEADLINE) for p in demand]
    together = Pricer(host, kb, base)
    found = together.each(Variant(option), requests)
    alone = [Pricer(host, kb, base).price(Variant(option), [r])[0] for r in requests]
    assert together.calls == 1
    assert found == alone
    assert len({(p.offer, p.committed) for p in found}) > 1
