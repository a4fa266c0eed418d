"""Capacity plans (docs/methodology.md "Capacity plans"): demand that changes over the horizon, and
the cost-optimal mix of owned, reserved, rented and platform capacity, sized by a kept solver over
costs sampled from the options' own kernels."""

from app.engine.capacity.demand import MAX_PHASES, MONTHS_PER_YEAR, Owned, Phase, flat, growth, phases, useful_gpu_hours
from app.engine.capacity.plan import CapacityPlan, Singles, plan, singles
from app.engine.capacity.portfolio import HYBRID, SINGLE, Portfolio, Segment, assessment_on
from app.engine.capacity.solver import TIME_LIMIT_SECONDS
from app.engine.capacity.tables import BRIDGE, BUY, COMMIT, OWNED, USE
from app.engine.capacity.throughput import demand_model, equivalent_factor, in_gpus_of, throughput

__all__ = [
    "BRIDGE",
    "BUY",
    "COMMIT",
    "HYBRID",
    "MAX_PHASES",
    "MONTHS_PER_YEAR",
    "OWNED",
    "SINGLE",
    "TIME_LIMIT_SECONDS",
    "USE",
    "CapacityPlan",
    "Owned",
    "Phase",
    "Portfolio",
    "Segment",
    "Singles",
    "assessment_on",
    "demand_model",
    "equivalent_factor",
    "flat",
    "growth",
    "in_gpus_of",
    "phases",
    "plan",
    "singles",
    "throughput",
    "useful_gpu_hours",
]
