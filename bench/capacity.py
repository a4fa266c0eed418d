"""``make capacity-bench``: how long the capacity-plan optimiser takes (a tool, not a test).

Plans three demand shapes — 36 monthly phases of a growing team (64 GPUs, 8 more each month), the
steady base with yearly bursts and the 4× ramp of docs/methodology.md "Capacity plans" — on the
reference server (CNY) and on ``h100_sxm`` (USD), over the reference seeds in memory, ``REPEAT``
times each (default 3), and prints a Markdown table: the whole plan's time (cost tables, the single
options' solves and the mix's), kernel calls, whether the mix was proved optimal within the time
limit, and each portfolio's cost per useful GPU-hour with the recommended mix; and the single options
alone (``cap.singles``): what a recommendation or price comparison with that ``demand`` prices.
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from seed_snapshot import knowledge_from_seeds  # noqa: E402

from app.core.types import Profile  # noqa: E402
from app.engine import capacity as cap  # noqa: E402
from app.engine.insights.common import Variant  # noqa: E402
from app.host.manager import create_option_host  # noqa: E402

AS_OF = dt.date(2026, 12, 1)
SHAPES = {
    "36 monthly phases, 64 → 344 GPUs at 80 %": (
        3,
        cap.phases([(1, 64 + 8 * m, 0.8, None) for m in range(36)]),
    ),
    "256 GPUs at 90 % + 3 months a year of 1,024 more, 4 years": (
        4,
        cap.phases([(9, 256, 0.9, 256), (3, 1280, 0.9, 1024)] * 4),
    ),
    "4× ramp over 3 years (64, 128, 256 GPUs at 80 %)": (3, cap.growth(64, 1.0, 0.8, 3)),
}


def main() -> None:
    repeat = int(os.environ.get("REPEAT", "3"))
    host, kb = create_option_host(), knowledge_from_seeds()
    variants = [
        Variant(k, p) for k in sorted(host.options, reverse=True) for p in (host.options[k].spec.plans or (None,))
    ]
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} CPUs, load averages {load} (1, 5, 15 min)")
    print(f"time limit {cap.TIME_LIMIT_SECONDS:g} s for the mix, half of it for each single option\n")
    head = (
        "| demand | hardware | plan time (median of {}) | plan CPU time | single options alone | kernel calls "
        "| optimal | recommended | per useful GPU-hour |"
    )
    print(head.format(repeat))
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, (years, demand) in SHAPES.items():
        for gpu_model, currency in ((None, "CNY"), ("h100_sxm", "USD")):
            base = Profile(
                gpus=max(p.gpus for p in demand),
                utilization=demand[0].utilization,
                horizon_years=years,
                as_of=AS_OF,
                currency=currency,
                gpu_model=gpu_model,
                team_size=20,
                ops_team="professional",
                start_within_days=120,
            )
            times, cpu, alone = [], [], []
            for _ in range(repeat):
                start = time.perf_counter()
                cap.singles(
                    host,
                    kb,
                    base,
                    demand,
                    options=list(host.options),
                    variants=variants,
                    owner=host.owner(),
                    unit=kb.server_for(gpu_model).gpus_per_server,
                )
                alone.append(time.perf_counter() - start)
                start, started = time.perf_counter(), time.process_time()
                found = cap.plan(
                    host,
                    kb,
                    base,
                    demand,
                    options=list(host.options),
                    variants=variants,
                    owner=host.owner(),
                    unit=kb.server_for(gpu_model).gpus_per_server,
                )
                times.append(time.perf_counter() - start)
                cpu.append(time.process_time() - started)
            costs = "; ".join(
                f"{p.key} {p.per_useful_gpu_hour.expected:.2f}" if p.feasible else f"{p.key} —"
                for p in found.portfolios
            )
            rec = next((p for p in found.portfolios if p.key == found.recommended), None)
            kinds = Counter(f"{s.option}:{s.acquired}" for s in ([] if rec is None else rec.segments))
            mix = " + ".join(f"{n} × {k}" if n > 1 else k for k, n in kinds.items()) or "—"
            print(
                f"| {label} | {gpu_model or 'reference'} ({currency}) | {statistics.median(times):.3f} s | "
                f"{statistics.median(cpu):.3f} s | {statistics.median(alone):.3f} s | "
                f"{found.kernel_calls} | {_proved(found)} | {found.recommended}: {mix} | {costs} |"
            )


def _proved(found: cap.CapacityPlan) -> str:
    """The mix's proof, and the single options' whose plan was not proved optimal (their reason says so)."""
    unproved = [p.key for p in found.portfolios if any(r.code == "capacity.not_optimal" for r in p.reasons)]
    return f"{found.optimal}" + (f" (not proved: {', '.join(unproved)})" if unproved else "")


if __name__ == "__main__":
    main()
