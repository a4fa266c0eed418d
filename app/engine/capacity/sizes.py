"""Which sizes the cost tables sample (docs/methodology.md "Capacity plans"): a plan's tranches are
sized at the demand's levels and at the steps between them, in whole servers; what is used on top is
sampled at what the demand leaves over each of those sizes."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from app.engine.capacity.demand import Owned, Phase

#: at most this many tranche sizes and this many samples per phase of an option billed as used
MAX_SIZES = 12
MAX_SAMPLES = 16
#: commitments start at the first phase and where the demand rises: at most this many phases, spread evenly
MAX_COMMITMENT_STARTS = 12


def whole(gpus: float, unit: int) -> int:
    """``gpus`` rounded up to whole servers of ``unit`` GPUs."""
    return max(unit, math.ceil(gpus / unit - 1e-9) * unit)


def thin(values: Iterable[int], limit: int) -> list[int]:
    """At most ``limit`` of ``values`` (sorted, distinct): the smallest, the largest and, between them,
    the ones closest to an even spread on a log scale."""
    found = sorted(set(v for v in values if v > 0))
    if len(found) <= limit:
        return found
    logs = [math.log(v) for v in found]
    lo, hi = logs[0], logs[-1]
    kept = {0, len(found) - 1}
    for k in range(1, limit - 1):
        target = lo + (hi - lo) * k / (limit - 1)
        kept.add(min(range(len(found)), key=lambda i: (abs(logs[i] - target), i)))
    return [found[i] for i in sorted(kept)]


def tranche_sizes(demand: Sequence[Phase], unit: int) -> list[int]:
    """The demand's distinct levels and every step between two of them, in whole servers."""
    levels = sorted({p.gpus for p in demand})
    steps = {b - a for i, a in enumerate(levels) for b in levels[i + 1 :]}
    return thin((whole(v, unit) for v in (*levels, *steps)), MAX_SIZES)


def held_gpus(owned: Sequence[Owned]) -> int:
    """The GPUs of the demand's model the GPUs already owned are worth (by sustained throughput), whole."""
    return math.floor(sum(o.equivalent_gpus for o in owned) + 1e-9)


def tranche_levels(demand: Sequence[Phase], owned: Sequence[Owned], unit: int) -> list[int]:
    """The levels an owned cluster may be bought to: the demand's distinct levels in whole servers,
    and what they (and the largest job) leave over the GPUs already owned, and over those of the demand's
    GPU model alone."""
    held, same = held_gpus(owned), held_gpus([o for o in owned if o.same_model])
    # what the GPUs owned leave over, and what those of the demand's model alone leave (a job on one model)
    wanted = (g for p in demand for g in (p.gpus, p.gpus - held, p.gpus - same, p.largest_job_gpus - same))
    return thin((whole(g, unit) for g in wanted if g > 0), MAX_SIZES)


def commitment_starts(demand: Sequence[Phase]) -> list[int]:
    """The phases a commitment may start at: the first, and each where the demand rises (at most
    ``MAX_COMMITMENT_STARTS``, spread evenly over them)."""
    rises = [i for i, p in enumerate(demand) if i == 0 or p.gpus > demand[i - 1].gpus]
    if len(rises) <= MAX_COMMITMENT_STARTS:
        return rises
    picked = {rises[round(k * (len(rises) - 1) / (MAX_COMMITMENT_STARTS - 1))] for k in range(MAX_COMMITMENT_STARTS)}
    return sorted(picked)


def use_samples(phase: Phase, sizes: Sequence[int], owned: Sequence[Owned], unit: int) -> list[int]:
    """Sizes an option billed as used is priced at in ``phase``: the whole demand, what it leaves over
    each tranche size and over the GPUs already owned, one server."""
    held = held_gpus(owned)
    over = [phase.gpus - s for s in (*sizes, held) if 0 < s < phase.gpus]
    return thin([phase.gpus, min(unit, phase.gpus), *over], MAX_SAMPLES)


__all__ = [
    "MAX_COMMITMENT_STARTS",
    "MAX_SAMPLES",
    "MAX_SIZES",
    "commitment_starts",
    "held_gpus",
    "thin",
    "tranche_levels",
    "tranche_sizes",
    "use_samples",
    "whole",
]
