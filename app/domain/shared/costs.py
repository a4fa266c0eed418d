"""What a request costs against its key's rate-limit budget (``RATE_LIMIT``, units per window).

One unit is about one profile's evaluation (ranking and scores); the other figures are what each
operation measured against it (README "Rate limits" has the table and how it was measured). A cost
function reads the decoded body before validation, so it must accept anything: a body the schema
will refuse costs what it asks for, or 1.
"""

from __future__ import annotations

import math
from typing import Any

from app.domain.decisions.schemas import MAX_FULL_PROFILES
from app.domain.insights.schemas import MAX_DRAWS

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
#: the cost tables (a few hundred quotes in a few dozen kernel calls) and up to four bounded solves
CAPACITY_PLAN_UNITS = 40


def _field(body: Any, name: str, default: Any) -> Any:
    return body.get(name, default) if isinstance(body, dict) else default


def _over_time(body: Any) -> bool:
    """Whether the body asks for a demand over time: each option is then priced as a capacity plan's
    single portfolio (its cost tables and a bounded solve per option)."""
    return _field(body, "demand", None) is not None


def comparison(body: Any) -> int:
    return CAPACITY_PLAN_UNITS if _over_time(body) else COMPARISON_UNITS


def recommendation(body: Any) -> int:
    return CAPACITY_PLAN_UNITS if _over_time(body) else RECOMMENDATION_UNITS


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
    return CAPACITY_PLAN_UNITS


#: the cost table as documented (README "Rate limits"), checked against the functions by a test
TABLE = {
    "GET (any)": "1",
    "POST /v1/price-comparisons": f"{COMPARISON_UNITS}; with `demand`: {CAPACITY_PLAN_UNITS}",
    "POST /v1/recommendations": f"{RECOMMENDATION_UNITS}; with `demand`: {CAPACITY_PLAN_UNITS}",
    "POST /v1/evaluations": "profiles × 1 (`detail: scores`) or × 2 (`detail: full`, at most "
    f"{MAX_FULL_PROFILES} profiles)",
    "POST /v1/break-even": str(BREAK_EVEN_UNITS),
    "POST /v1/sensitivity": str(SENSITIVITY_UNITS),
    "POST /v1/uncertainty": f"1 + draws / {DRAWS_PER_UNIT} (rounded up)",
    "POST /v1/training-plans": str(TRAINING_PLAN_UNITS),
    "POST /v1/capacity-plans": str(CAPACITY_PLAN_UNITS),
}
