"""GPUs by what they do (docs/methodology.md "Capacity plans"): a fleet of another GPU model enters a
capacity plan as the GPUs of the demand's model that sustain the same training throughput,

    equivalent GPUs = count × sustained BF16 TFLOPS of the owned model
                            ÷ sustained BF16 TFLOPS of the demand's model,

and a plan answered per GPU model counts the demand's GPUs in each model's the same way, at the
team's precision (``in_gpus_of``: whole GPUs, rounded up). Each model's sustained throughput is
``app.engine.throughput``'s (peak at the precision × expected MFU). One synchronous job never spans
two GPU models: the solver holds a job on GPUs of one model (``app.engine.capacity.solver.group_of``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from app.core.knowledge import Knowledge
from app.engine.capacity.demand import Phase
from app.engine.throughput import Throughput, throughput

#: a product of GPUs and a factor this close above a whole number is that number (float noise)
WHOLE = 1e-9


def demand_model(knowledge: Knowledge, gpu_model: str | None) -> str | None:
    """The GPU model the demand is counted in: the profile's, else the reference server's (None where
    that names none: the article's server is a server of unnamed GPUs)."""
    if gpu_model is not None:
        return gpu_model
    return knowledge.reference_server().gpu_model_key


def equivalent_factor(
    knowledge: Knowledge, owned_model: str, demand_gpu_model: str | None, precision: str = "bf16"
) -> float:
    """GPUs of ``demand_gpu_model`` one GPU of ``owned_model`` is worth by sustained throughput at
    ``precision`` (1 for the same model, and where the demand's model is not known: one for one)."""
    if demand_gpu_model is None or owned_model == demand_gpu_model:
        return 1.0
    owned = throughput(knowledge, owned_model, precision)
    wanted = throughput(knowledge, demand_gpu_model, precision)
    return owned.sustained_tflops / wanted.sustained_tflops


def in_gpus_of(demand: Sequence[Phase], factor: float) -> tuple[Phase, ...]:
    """``demand`` counted in another GPU model's GPUs, ``factor`` of them for each of the demand's
    (``equivalent_factor(demand's model, other)``): each phase's GPUs and largest job
    ``ceil(gpus × factor)`` (the job at most the phase's GPUs), months and utilization as they are."""

    def whole(gpus: int) -> int:
        return max(1, math.ceil(gpus * factor - WHOLE))

    return tuple(
        Phase(p.start_month, p.months, whole(p.gpus), p.utilization, min(whole(p.largest_job_gpus), whole(p.gpus)))
        for p in demand
    )


__all__ = ["Throughput", "demand_model", "equivalent_factor", "in_gpus_of", "throughput"]
