"""What a request costs against its key's rate-limit budget (``RATE_LIMIT``, units per window).

One unit is about one profile's evaluation (ranking and scores); the other figures are what each
operation measured against it (README "Rate limits" has the table and how it was measured). A cost
function reads the decoded body before validation, so it must accept anything: a body the schema
will refuse costs what it asks for, or 1.
"""

from __future__ import annotations

import math
from typing import Any

from app.domain.capacity.schemas import MAX_OWNED, MAX_PLAN_GPU_MODELS
from app.domain.decisions.schemas import MAX_FULL_PROFILES
from app.domain.insights.schemas import MAX_DRAWS
from app.domain.planning.schemas import MAX_GPU_MODELS
from app.domain.shared.schemas import MAX_HORIZON_YEARS
from app.engine.capacity import MAX_PHASES

#: a profile's evaluation in a batch, by ``detail``
PROFILE_UNITS = {"scores": 1, "full": 2}
COMPARISON_UNITS = 1
#: an evaluation with its confidence block (1,000 draws) and break-even sentence
RECOMMENDATION_UNITS = 5
BREAK_EVEN_UNITS = 100
SENSITIVITY_UNITS = 30
#: Monte Carlo: one unit per this many draws, plus one for the evaluation
DRAWS_PER_UNIT = 1_000
TRAINING_PLAN_UNITS = 2
#: a training plan across GPU models adds one unit per GPU model (measured in process: 6.2 ms for one GPU model,
#: 21.5 ms for the eight the reference price book prices), and this many without a list (a cost reads the body
#: alone: the knowledge base's GPU models are not counted)
TRAINING_PLAN_MODELS = 10
#: 32 utilizations × every option, and the crossings (a sixth of a break-even's work, measured)
COST_CURVE_UNITS = 15
#: what a plan or a demand over time costs whatever its size: the profile, the kernels' first calls
DEMAND_BASE_UNITS = 5
#: the options a demand is priced on: the three built-in ones, with which the coefficients below were
#: measured (a cost reads the body alone, so an option plugin added to them is not counted)
OPTIONS = 3
#: a capacity plan: one unit per phase and option (its cost tables and its share of the bounded solves)…
CAPACITY_PLAN_UNITS_PER_PHASE_OPTION = 1
#: …times 1 + owned entries / this (each owned entry adds tranche levels and a binary per phase)
OWNED_ENTRIES_PER_DOUBLING = 10
#: a comparison or recommendation with a demand: each option's single portfolio alone, a unit per this
#: many phases and options
PHASE_OPTIONS_PER_DEMAND_UNIT = 5


def _field(body: Any, name: str, default: Any) -> Any:
    return body.get(name, default) if isinstance(body, dict) else default


def _count(value: Any, most: int) -> int:
    """A list's length (else 0), at most ``most``: a longer one is refused by validation (``422``)."""
    return min(len(value), most) if isinstance(value, list) else 0


def phases(body: Any) -> int:
    """The phases a body's demand has: a list's, the growth shorthand's yearly ones over ``horizon_years``
    (rounded up), or 1 (a plain profile, a malformed body)."""
    demand = _field(body, "demand", None)
    if isinstance(demand, list):
        return max(1, _count(demand, MAX_PHASES))
    years = _field(body, "horizon_years", 1)
    if isinstance(demand, dict) and isinstance(years, int | float) and not isinstance(years, bool):
        return min(MAX_PHASES, max(1, math.ceil(min(float(years), MAX_HORIZON_YEARS) - 1e-9)))
    return 1


def demand_over_time(body: Any) -> int:
    """A comparison or recommendation with ``demand``: each option priced as a capacity plan's single
    portfolio (its cost tables and a bounded solve), measured at ~2 ms per phase and option."""
    return DEMAND_BASE_UNITS + math.ceil(phases(body) * OPTIONS / PHASE_OPTIONS_PER_DEMAND_UNIT)


def comparison(body: Any) -> int:
    return demand_over_time(body) if _field(body, "demand", None) is not None else COMPARISON_UNITS


def recommendation(body: Any) -> int:
    return demand_over_time(body) if _field(body, "demand", None) is not None else RECOMMENDATION_UNITS


def evaluations(body: Any) -> int:
    profiles = _field(body, "profiles", [])
    detail = _field(body, "detail", "scores")
    return max(1, len(profiles) if isinstance(profiles, list) else 1) * PROFILE_UNITS.get(detail, 1)


def break_even(body: Any) -> int:
    return BREAK_EVEN_UNITS


def sensitivity(body: Any) -> int:
    return SENSITIVITY_UNITS


def cost_curves(body: Any) -> int:
    return COST_CURVE_UNITS


def uncertainty(body: Any) -> int:
    draws = _field(body, "draws", 10_000)
    if not isinstance(draws, int | float) or isinstance(draws, bool) or not 0 < draws <= MAX_DRAWS:
        return 1
    return 1 + math.ceil(draws / DRAWS_PER_UNIT)


def training_plan(body: Any) -> int:
    """One GPU model: the base; across GPU models, one more unit per listed model (``TRAINING_PLAN_MODELS``
    without a list)."""
    if _field(body, "gpu_model", None) is not None:
        return TRAINING_PLAN_UNITS
    listed = _field(body, "gpu_models", None)
    models = _count(listed, MAX_GPU_MODELS) if isinstance(listed, list) else TRAINING_PLAN_MODELS
    return TRAINING_PLAN_UNITS + max(1, models)


def capacity_plan(body: Any) -> int:
    """Phases × options × (1 + owned entries / 10), plus the base: measured 0.07 s for one phase, 0.2 s
    for 12, 1.5–2 s for 60, 3.1 s for 120; 0.8–1.4 s for 12 phases with 20 owned entries, 5.3–5.5 s for
    60 with 20 (README "Rate limits"). Answered per GPU model (``gpu_models``), that once more for each
    model listed other than ``gpu_model`` (each is the same plan on that model's GPUs: measured 0.06 s
    for one phase alone, 0.44 s on six models more)."""
    owned = _count(_field(body, "owned", []), MAX_OWNED)
    factor = 1 + owned / OWNED_ENTRIES_PER_DOUBLING
    one = DEMAND_BASE_UNITS + math.ceil(phases(body) * OPTIONS * CAPACITY_PLAN_UNITS_PER_PHASE_OPTION * factor)
    listed = _field(body, "gpu_models", None)
    if not isinstance(listed, list):
        return one
    own = _field(body, "gpu_model", None)
    others = {m for m in listed[:MAX_PLAN_GPU_MODELS] if isinstance(m, str) and m != own}
    return one * (1 + len(others))


#: a demand over time on a comparison or recommendation, as the table says it
DEMAND_UNITS = (
    f"{DEMAND_BASE_UNITS} + phases × {OPTIONS} / {PHASE_OPTIONS_PER_DEMAND_UNIT}, rounded up (120 phases: "
    f"{demand_over_time({'demand': [{}] * MAX_PHASES})})"
)

#: the cost table as documented (README "Rate limits", each row's units as said here: a test compares them)
TABLE = {
    "GET (any)": "1",
    "POST /v1/price-comparisons": f"{COMPARISON_UNITS}; with `demand`: {DEMAND_UNITS}",
    "POST /v1/recommendations": f"{RECOMMENDATION_UNITS}; with `demand`: {DEMAND_UNITS}",
    "POST /v1/evaluations": f'profiles × {PROFILE_UNITS["scores"]} (`detail: "scores"`), × {PROFILE_UNITS["full"]} '
    f'(`detail: "full"`, at most {MAX_FULL_PROFILES} profiles)',
    "POST /v1/break-even": str(BREAK_EVEN_UNITS),
    "POST /v1/sensitivity": str(SENSITIVITY_UNITS),
    "POST /v1/uncertainty": f"1 + draws / {DRAWS_PER_UNIT:,}, rounded up (10,000 draws: "
    f"{uncertainty({'draws': 10_000})}; 100,000: {uncertainty({'draws': 100_000})})",
    "POST /v1/training-plans": f"{TRAINING_PLAN_UNITS}; without `gpu_model`: {TRAINING_PLAN_UNITS} + GPU models "
    f"listed ({TRAINING_PLAN_MODELS} without `gpu_models`: {training_plan({})})",
    "POST /v1/capacity-plans": f"{DEMAND_BASE_UNITS} + phases × {OPTIONS} × (1 + owned entries / "
    f"{OWNED_ENTRIES_PER_DOUBLING}), rounded up (1 phase: {capacity_plan({})}; 120 phases: "
    f"{capacity_plan({'demand': [{}] * MAX_PHASES})}; with 20 owned entries: "
    f"{capacity_plan({'demand': [{}] * MAX_PHASES, 'owned': [{}] * MAX_OWNED})}); with `gpu_models`: that × (1 + "
    f"GPU models listed other than `gpu_model`) (1 phase on {MAX_PLAN_GPU_MODELS} models: "
    f"{capacity_plan({'gpu_models': [str(i) for i in range(MAX_PLAN_GPU_MODELS)]})})",
}
