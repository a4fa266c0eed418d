"""What a request costs against its key's rate-limit budget (``RATE_LIMIT``, units per window).

One unit is about one profile's evaluation (ranking and scores); the other figures are what each
operation measured against it (README "Rate limits" has the table and how it was measured). A cost
function reads the decoded body before validation, so it must accept anything: a body the schema
will refuse costs what it asks for, or 1.
"""

from __future__ import annotations

import math
from typing import Any

from app.domain.capacity.schemas import MAX_OWNED
from app.domain.decisions.schemas import MAX_FULL_PROFILES
from app.domain.insights.schemas import MAX_DRAWS
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
    return TRAINING_PLAN_UNITS


def capacity_plan(body: Any) -> int:
    """Phases × options × (1 + owned entries / 10), plus the base: measured 0.07 s for one phase, 0.2 s
    for 12, 1.5–2 s for 60, 3.1 s for 120; 0.8–1.4 s for 12 phases with 20 owned entries, 5.3–5.5 s for
    60 with 20 (README "Rate limits")."""
    owned = _count(_field(body, "owned", []), MAX_OWNED)
    factor = 1 + owned / OWNED_ENTRIES_PER_DOUBLING
    return DEMAND_BASE_UNITS + math.ceil(phases(body) * OPTIONS * CAPACITY_PLAN_UNITS_PER_PHASE_OPTION * factor)


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
    "POST /v1/training-plans": str(TRAINING_PLAN_UNITS),
    "POST /v1/capacity-plans": f"{DEMAND_BASE_UNITS} + phases × {OPTIONS} × (1 + owned entries / "
    f"{OWNED_ENTRIES_PER_DOUBLING}), rounded up (1 phase: {capacity_plan({})}; 120 phases: "
    f"{capacity_plan({'demand': [{}] * MAX_PHASES})}; with 20 owned entries: "
    f"{capacity_plan({'demand': [{}] * MAX_PHASES, 'owned': [{}] * MAX_OWNED})})",
}
