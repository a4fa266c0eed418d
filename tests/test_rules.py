"""The scenario-rule interpreter (app/engine/rules.py): operators, refs, missing figures, all/any,
path checking and template rendering — declarative data, never code."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from pydantic import ValidationError

from app.core.knowledge import Condition, Rule
from app.core.ranges import Range
from app.core.types import Profile
from app.engine import rules
from app.kb.seeds import ConditionSeed, read_seeds
from app.settings import PROJECT_ROOT

AS_OF = dt.date(2025, 6, 1)
SEEDS = PROJECT_ROOT / "seeds"


def profile(**overrides: Any) -> Profile:
    values: dict[str, Any] = {
        "gpus": 16,
        "utilization": 0.6,
        "horizon_years": 2,
        "as_of": AS_OF,
        "team_size": 20,
        "ops_team": "basic",
        "data_security": "high",
        "start_within_days": 45,
    }
    values.update(overrides)
    return Profile(**values)


METRICS = {
    "lead_time_days": Range(30, 60, 90),
    "upfront_cost": Range(1_500_000, 1_750_000, 2_000_000),
    "goodput": Range(0.95, 0.97, 0.99),
}


def ctx(metrics: dict[str, Range] | None = None, **overrides: Any) -> rules.Context:
    return rules.Context(profile(**overrides), METRICS if metrics is None else metrics)


def rule(*conditions: tuple[str, str, Any], match: str = "all", reason: str = "r") -> Rule:
    return Rule(
        key="test_rule",
        option="*",
        description="a test rule",
        match=match,
        conditions=tuple(Condition(f, op, v) for f, op, v in conditions),
        effect="bonus",
        points=5.0,
        reason=reason,
        rationale="testing",
        source="test",
        source_quality="assumption",
    )


def holds(field: str, op: str, value: Any, context: rules.Context | None = None) -> bool:
    return rules.holds(rule((field, op, value)), context or ctx())


# ---- operators -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "value", "expected"),
    [
        ("eq", 16, True),
        ("eq", 8, False),
        ("ne", 8, True),
        ("ne", 16, False),
        ("lt", 17, True),
        ("lt", 16, False),
        ("le", 16, True),
        ("le", 15, False),
        ("gt", 15, True),
        ("gt", 16, False),
        ("ge", 16, True),
        ("ge", 17, False),
        ("in", [8, 16, 32], True),
        ("in", [8, 32], False),
        ("not_in", [8, 32], True),
        ("not_in", [8, 16], False),
    ],
)
def test_each_operator_on_a_number(op: str, value: Any, expected: bool) -> None:
    assert holds("profile.gpus", op, value) is expected


@pytest.mark.parametrize(
    ("op", "value", "expected"),
    [
        ("eq", "basic", True),
        ("eq", "professional", False),
        ("ne", "professional", True),
        ("in", ["basic", "professional"], True),
        ("not_in", ["basic", "professional"], False),
    ],
)
def test_operators_on_text_fields(op: str, value: Any, expected: bool) -> None:
    assert holds("profile.ops_team", op, value) is expected


def test_float_fields_compare_as_numbers() -> None:
    assert holds("profile.utilization", "ge", 0.6)
    assert not holds("profile.utilization", "gt", 0.6)
    assert holds("profile.horizon_years", "le", 2)


def test_a_type_mismatch_is_false_not_an_error() -> None:
    assert holds("profile.ops_team", "lt", 5) is False
    assert holds("profile.gpus", "in", 16) is False  # 'in' on a non-container


# ---- refs to assessment figures ------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "ref", "expected"),
    [
        (45, "assessment.lead_time_days.low", False),  # 45 < 30
        (45, "assessment.lead_time_days.expected", True),  # 45 < 60
        (45, "assessment.lead_time_days", True),  # no end named: expected
        (45, "assessment.lead_time_days.high", True),  # 45 < 90
        (29, "assessment.lead_time_days.low", True),
        (70, "assessment.lead_time_days", False),
        (70, "assessment.lead_time_days.high", True),
        (90, "assessment.lead_time_days.high", False),
    ],
)
def test_refs_pick_the_named_end_of_a_figure(start: int, ref: str, expected: bool) -> None:
    context = ctx(start_within_days=start)
    assert holds("profile.start_within_days", "lt", {"ref": ref}, context) is expected


def test_an_assessment_figure_as_the_field_against_a_profile_ref() -> None:
    over = ctx(capex_budget=1_000_000.0)
    under = ctx(capex_budget=1_600_000.0)
    assert holds("assessment.upfront_cost.low", "gt", {"ref": "profile.capex_budget"}, over)
    assert not holds("assessment.upfront_cost.low", "gt", {"ref": "profile.capex_budget"}, under)
    # the high end of the same figure does exceed 1.6 M
    assert holds("assessment.upfront_cost.high", "gt", {"ref": "profile.capex_budget"}, under)


def test_assessment_figures_against_literals() -> None:
    assert holds("assessment.goodput.low", "ge", 0.95)
    assert not holds("assessment.goodput.low", "gt", 0.95)
    assert holds("assessment.goodput", "eq", 0.97)
    assert holds("assessment.upfront_cost.high", "le", 2_000_000)


# ---- missing figures -----------------------------------------------------------------------


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge", "in", "not_in"])
def test_a_missing_profile_field_makes_the_condition_false(op: str) -> None:
    context = ctx(capex_budget=None)
    value: Any = [1, 2] if op in ("in", "not_in") else 1_000_000
    # even 'ne' and 'not_in', which would hold for None, are false when the figure is absent
    assert holds("profile.capex_budget", op, value, context) is False
    assert holds("assessment.upfront_cost.low", op, {"ref": "profile.capex_budget"}, context) is False


def test_a_missing_profile_field_in_a_ref_is_false_but_present_is_evaluated() -> None:
    assert not holds("profile.gpu_model", "eq", None)
    assert holds("profile.gpu_model", "eq", "h100_sxm", ctx(gpu_model="h100_sxm"))


def test_a_figure_the_assessment_lacks_makes_the_condition_false() -> None:
    context = ctx(metrics={})
    assert holds("assessment.goodput.low", "ge", 0) is True
    assert holds("assessment.goodput.low", "ge", 0, context) is False
    assert holds("assessment.goodput.low", "ne", 0, context) is False
    assert holds("profile.start_within_days", "lt", {"ref": "assessment.lead_time_days.low"}, context) is False


def test_a_missing_figure_fails_one_condition_of_an_any_rule_only() -> None:
    context = ctx(capex_budget=None)
    r = rule(("profile.capex_budget", "lt", 10), ("profile.gpus", "eq", 16), match="any")
    assert rules.holds(r, context)
    assert not rules.holds(rule(("profile.capex_budget", "lt", 10), ("profile.gpus", "eq", 16)), context)


# ---- all vs any ----------------------------------------------------------------------------

TRUE_1 = ("profile.gpus", "ge", 16)
TRUE_2 = ("profile.ops_team", "eq", "basic")
FALSE_1 = ("profile.gpus", "gt", 100)
FALSE_2 = ("profile.data_security", "eq", "extreme")


@pytest.mark.parametrize(
    ("conditions", "all_holds", "any_holds"),
    [
        ((TRUE_1, TRUE_2), True, True),
        ((TRUE_1, FALSE_1), False, True),
        ((FALSE_1, TRUE_2), False, True),
        ((FALSE_1, FALSE_2), False, False),
        ((TRUE_1,), True, True),
        ((FALSE_2,), False, False),
    ],
)
def test_match_all_versus_any(conditions: tuple[Any, ...], all_holds: bool, any_holds: bool) -> None:
    assert rules.holds(rule(*conditions, match="all"), ctx()) is all_holds
    assert rules.holds(rule(*conditions, match="any"), ctx()) is any_holds


# ---- check_path ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "profile.gpus",
        "profile.capex_budget",
        "profile.start_within_days",
        "assessment.upfront_cost",
        "assessment.lead_time_days.low",
        "assessment.cost_per_useful_gpu_hour.expected",
        "assessment.goodput.high",
    ],
)
def test_check_path_accepts_declared_fields(path: str) -> None:
    assert rules.check_path(path) is None


@pytest.mark.parametrize(
    ("path", "named"),
    [
        ("profile.gpu_count", "gpu_count"),
        ("profile.__class__", "__class__"),
        ("profile.useful_gpu_hours_per_year", "useful_gpu_hours_per_year"),  # a property, not a field
        ("assessment.cost", "cost"),
        ("assessment.__dict__", "__dict__"),
        ("assessment.upfront_cost.middle", "middle"),
        ("assessment.upfront_cost.__class__", "__class__"),
        ("profile.gpus.low", "profile.gpus.low"),
        ("gpus", "gpus"),
        ("knowledge.prices", "knowledge.prices"),
        ("profile", "profile"),
        ("assessment.upfront_cost.low.extra", "assessment.upfront_cost.low.extra"),
    ],
)
def test_check_path_rejects_unknown_fields_and_names_them(path: str, named: str) -> None:
    problem = rules.check_path(path)
    assert problem is not None
    assert named in problem


def test_seed_conditions_are_checked_with_check_path() -> None:
    ConditionSeed.model_validate({"field": "profile.gpus", "op": "ge", "value": {"ref": "assessment.upfront_cost.low"}})
    with pytest.raises(ValidationError, match="unknown profile field 'gpu_count'"):
        ConditionSeed.model_validate({"field": "profile.gpu_count", "op": "ge", "value": 8})
    with pytest.raises(ValidationError, match="unknown range end 'mid'"):
        ConditionSeed.model_validate({"field": "profile.gpus", "op": "ge", "value": {"ref": "assessment.goodput.mid"}})
    with pytest.raises(ValidationError):
        ConditionSeed.model_validate({"field": "profile.gpus", "op": "matches", "value": 8})


def test_conditions_on_undeclared_paths_never_reach_python_attributes() -> None:
    # a condition the seed loader would refuse, built by hand: resolves to nothing, so it is false
    assert holds("profile.__class__", "ne", 0) is False
    assert holds("profile.useful_gpu_hours_per_year", "gt", 0) is False
    assert holds("profile.gpus", "eq", {"ref": "profile.__class__"}) is False


# ---- render ----------------------------------------------------------------------------------


def test_render_fills_profile_placeholders() -> None:
    context = ctx(gpus=1024, utilization=0.85, horizon_years=5, capex_budget=2_500_000.0)
    text = rules.render(
        "Demand: {profile.gpus} GPUs at {profile.utilization} for {profile.horizon_years} years; "
        "ops {profile.ops_team}; budget {profile.capex_budget}.",
        context,
    )
    assert text == "Demand: 1,024 GPUs at 0.85 for 5 years; ops basic; budget 2,500,000."


def test_render_fills_assessment_ends() -> None:
    text = rules.render(
        "needed within {profile.start_within_days} days, but it takes "
        "{assessment.lead_time_days.low}–{assessment.lead_time_days.high} days "
        "(expected {assessment.lead_time_days}); upfront at least {assessment.upfront_cost.low}.",
        ctx(),
    )
    assert text == "needed within 45 days, but it takes 30–90 days (expected 60); upfront at least 1,500,000."


def test_render_leaves_absent_figures_as_written() -> None:
    context = ctx(metrics={}, capex_budget=None)
    assert rules.render("{profile.capex_budget} / {assessment.goodput.low}", context) == (
        "{profile.capex_budget} / {assessment.goodput.low}"
    )


@pytest.mark.parametrize(
    "template",
    [
        "{profile.__class__}",
        "{profile.__class__.__name__}",
        "{profile.gpus.__class__}",
        "{profile.ops_team.upper}",
        "{assessment.__dict__}",
        "{assessment.goodput.__class__}",
        "{profile.useful_gpu_hours_per_year}",
        "{profile.gpus!r}",
        "{profile.gpus:>10}",
        "{0.__class__}",
        '{__import__("os").getcwd()}',
        "{{profile.gpus}}x",
    ],
)
def test_render_never_evaluates_code(template: str) -> None:
    rendered = rules.render(template, ctx())
    if template == "{{profile.gpus}}x":
        # no str.format: doubled braces are not an escape, the inner placeholder is simply filled
        assert rendered == "{16}x"
        return
    assert rendered == template
    assert "class" not in rendered.replace("__class__", "")


def test_render_does_not_render_a_value_twice() -> None:
    # a profile value that looks like a placeholder is text, not a template
    context = ctx(gpu_model="{profile.team_size}")
    assert rules.render("model {profile.gpu_model}", context) == "model {profile.team_size}"


def test_render_of_seed_reasons_leaves_no_placeholder() -> None:
    seed_rules = read_seeds(SEEDS).records["rules"]
    assert len(seed_rules) >= 6  # methodology 4.0 retired self_built_no_ops_team (the bill hires the team)
    context = ctx(capex_budget=1_000_000.0)
    for r in seed_rules:
        text = rules.render(r.reason, context)  # type: ignore[attr-defined]
        assert "{" not in text, (r.key, text)  # type: ignore[attr-defined]


def test_a_batch_reads_the_ends_its_rules_test():
    """A batch's kernels compute the expected end alone unless a scenario rule tests another end of an
    assessment's figure, as its field or as the value it compares with."""
    from app.core.columns import ALL, EXPECTED
    from app.core.knowledge import Condition, Rule
    from app.engine.rules import ends_read

    def rule(field: str, value: object) -> Rule:
        return Rule("r", "*", "", "all", (Condition(field, "gt", value),), "bonus", 1.0, "", "", "", "assumption")

    assert ends_read([]) == EXPECTED
    assert ends_read([rule("profile.gpus", 64), rule("assessment.total_cost", 1e6)]) == EXPECTED
    assert ends_read([rule("assessment.total_cost.expected", 1e6)]) == EXPECTED
    assert ends_read([rule("assessment.total_cost.high", 1e6)]) == ALL
    assert ends_read([rule("profile.capex_budget", {"ref": "assessment.upfront_cost.low"})]) == ALL
