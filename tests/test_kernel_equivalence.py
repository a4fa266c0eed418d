"""The option kernels compute, figure for figure, what they computed when the fixture was recorded.

``tests/data/kernel-equivalence.jsonl`` holds, for 300 random profiles (every GPU model, currency,
plan, ops team, date; providers and regions sometimes narrowed), each option's figures: the offer it
chose, its cost figures, efficiency, stability and usability measures and feasibility. It was first
recorded from the per-request implementation the kernels replaced, and the kernels reproduced all of
it within 1e-9 relative (commit "Option kernels …", methodology 2.0); methodology 3.0 re-recorded it
for the changes docs/methodology.md lists under "What changed in 3.0". A change of figures must be a
change of methodology or of the price books: re-record with ``KERNEL_EQUIVALENCE_RECORD=1 python
tests/test_kernel_equivalence.py`` and list it there.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import random
from pathlib import Path
from typing import Any

import pytest
from seed_snapshot import knowledge_from_seeds

from app.core.types import Assessment, Profile
from app.core.vocab import CURRENCIES, DATA_SECURITY_LEVELS, OPS_TEAMS
from app.engine import decision
from app.host.manager import create_option_host

FIXTURE = Path(__file__).parent / "data" / "kernel-equivalence.jsonl"
CASES = 300
#: the rental plans the recorded profiles were drawn from (the fixture's draws depend on this list)
RENTAL_PLANS = ("on_demand", "spot", "reserved_1y", "reserved_3y", "monthly", "capacity_block")
TOLERANCE = 1e-9
AS_OF = [dt.date(2026, 12, 1), dt.date(2026, 6, 15), dt.date(2026, 2, 1), dt.date(2025, 12, 31)]


def profiles() -> list[Profile]:
    kb = knowledge_from_seeds()
    rng = random.Random(20261203)
    priced = sorted({p.gpu_model for p in kb.prices if p.gpu_model != "*"})
    gpu_models = [None, None, None, *priced, *priced]
    providers = sorted(kb.providers)
    regions = sorted(kb.regions)
    found = []
    for _ in range(CASES):
        narrowed_providers = tuple(sorted(rng.sample(providers, 3))) if rng.random() < 0.08 else None
        narrowed_regions = tuple(sorted(rng.sample(regions, 3))) if rng.random() < 0.08 else None
        found.append(
            Profile(
                gpus=rng.choice([1, 2, 8, 16, 24, 64, 100, 256, 1000, 4096, rng.randint(1, 3000)]),
                utilization=rng.choice([0.001, 0.05, 0.3, 0.6, 0.85, 1.0, round(rng.uniform(0.01, 1), 3)]),
                horizon_years=rng.choice([0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, round(rng.uniform(0.1, 10), 2)]),
                as_of=rng.choice(AS_OF),
                team_size=rng.choice([1, 5, 10, 50, 200]),
                ops_team=rng.choice(OPS_TEAMS),
                data_security=rng.choice(DATA_SECURITY_LEVELS),
                start_within_days=rng.choice([0, 14, 30, 90, 365, 3650]),
                rental_plan=rng.choice([*[None] * 8, *RENTAL_PLANS]),
                currency=rng.choice(CURRENCIES),
                gpu_model=rng.choice(gpu_models),
                capex_budget=rng.choice([None, None, 1e6, 1e8]),
                delay_cost_per_day=rng.choice([None, None, 0.0, 5e4]),
                providers=narrowed_providers,
                regions=narrowed_regions,
            )
        )
    return found


def _range(r: Any) -> list[float] | None:
    return None if r is None else [float(r.low), float(r.expected), float(r.high)]


def figures(a: Assessment) -> dict[str, Any]:
    c, e, s, u = a.cost, a.efficiency, a.stability, a.usability
    return {
        "offer": a.offer_label,
        "feasible": not decision.broken(a),
        "annual": _range(c.annual),
        "total": _range(c.total),
        "upfront": _range(c.upfront),
        "npv": _range(c.npv),
        "equivalent_annual": _range(c.equivalent_annual),
        "per_useful": _range(c.per_useful_gpu_hour),
        "per_effective": _range(c.per_effective_gpu_hour),
        "paid": _range(c.paid_gpu_hours),
        "lines": {li.key: [_range(li.annual), _range(li.upfront), _range(li.total)] for li in c.breakdown},
        "extras": {li.key: _range(li.total) for li in c.extras},
        "lead_time_days": _range(e.lead_time_days),
        "productive": _range(e.productive_share),
        "goodput": _range(s.goodput),
        "interruptions": _range(s.interruptions_per_year),
        "lost": _range(s.lost_gpu_hours_per_year),
        "infra_fte": _range(u.infra_fte_needed),
        "focus": _range(u.model_focus_share),
        "alternatives": len(a.alternatives),
        "offers_considered": a.offers_considered,
    }


def answers() -> list[dict[str, Any]]:
    kb = knowledge_from_seeds()
    host = create_option_host()
    out = []
    for i, p in enumerate(profiles()):
        per_option: dict[str, Any] = {}
        for o in decision.assess_all(host.options, lambda option, p=p: host.assess(option, p, kb)):
            per_option[o.option] = {"error_code": o.error_code} if o.assessment is None else figures(o.assessment)
        out.append({"case": i, "options": per_option})
    return out


def close(a: Any, b: Any, path: str) -> None:
    if isinstance(a, dict):
        assert set(a) == set(b), f"{path}: {sorted(a)} != {sorted(b)}"
        for k in a:
            close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), f"{path}: {a} != {b}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            assert math.isnan(a) and math.isnan(b), f"{path}: {a} != {b}"
        else:
            assert math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=1e-12), f"{path}: {a} != {b}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


@pytest.mark.skipif(os.environ.get("KERNEL_EQUIVALENCE_RECORD") == "1", reason="recording the fixture")
def test_kernels_compute_the_previous_implementations_figures() -> None:
    recorded = [json.loads(line) for line in FIXTURE.read_text().splitlines() if line]
    got = answers()
    assert len(got) == len(recorded) == CASES
    for now, before in zip(got, recorded, strict=True):
        close(now, before, f"case {before['case']}")


if __name__ == "__main__":  # KERNEL_EQUIVALENCE_RECORD=1 python tests/test_kernel_equivalence.py
    assert os.environ.get("KERNEL_EQUIVALENCE_RECORD") == "1"
    FIXTURE.write_text("".join(json.dumps(a, sort_keys=True) + "\n" for a in answers()))
