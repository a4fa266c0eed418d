"""The plugin contract (app/host/hookspecs.py): options come from the entry-point group
``compute_advisor.options``, a broken plugin fails at start-up or alone, and a third-party option
installed as a package joins the API without any change to app/."""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib
import importlib.metadata
import logging
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pluggy
import pytest
from conftest import make_client
from litestar.testing import TestClient

from app.core.declarations import OptionSpec, ProfileField
from app.core.knowledge import Knowledge
from app.core.types import Assessment, Profile
from app.host.hookspecs import ENTRY_POINT_GROUP, hookimpl
from app.host.manager import OptionHost, PluginError, create_option_host

BUILTINS = {"self_built_cluster", "rented_gpu_instances", "ai_compute_platform"}
AS_OF = "2025-06-01"
Client = TestClient  # type: ignore[type-arg]
PROFILE = {
    "rental_plan": "on_demand",  # the article's on-demand renting, 876,000 CNY a year
    "gpus": 8,
    "utilization": 0.5,
    "horizon_years": 1,
    "team_size": 10,
    "ops_team": "none",
    "data_security": "standard",
    "start_within_days": 30,
    "as_of": AS_OF,
}


def spec(key: str) -> OptionSpec:
    return OptionSpec(key=key, name=key.replace("_", " "), description=f"test option {key}", version="9.9")


# ---- the built-ins come through the entry-point group ----------------------------------------


def test_the_builtins_are_declared_in_the_entry_point_group() -> None:
    eps = {ep.name: ep.value for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    assert eps == {key: f"plugins.{key}:plugin" for key in BUILTINS}


def test_the_builtins_are_loaded_through_the_entry_point_group() -> None:
    host = create_option_host()
    assert set(host.options) == BUILTINS
    distinfo = {host.pm.get_name(p): d.project_name for p, d in host.pm.list_plugin_distinfo()}
    assert distinfo == dict.fromkeys(BUILTINS, "compute-advisor")
    for key, loaded in host.options.items():
        assert loaded.plugin_name == key
        assert loaded.plugin_version == importlib.metadata.version("compute-advisor")
        assert loaded.spec.key == key and loaded.spec.name and loaded.spec.description
    # without the entry points there is nothing: no option is wired in by hand
    assert create_option_host(entry_points=False).options == {}


def test_options_endpoint_names_plugin_and_version(client: Client) -> None:
    items = client.get("/v1/options").json()["items"]
    assert {i["key"] for i in items} == BUILTINS
    version = importlib.metadata.version("compute-advisor")
    for i in items:
        assert i["plugin"] == i["key"]
        assert i["plugin_version"] == version
        assert i["name"] and i["description"]


# ---- start-up checks -------------------------------------------------------------------------


class Misspelled:
    sdk = ">=4,<5"

    @hookimpl
    def compute_advisor_options(self) -> list[OptionSpec]:
        return [spec("misspelled_option")]

    @hookimpl
    def compute_advisor_asess(self, option: str, profile: Profile, knowledge: Knowledge) -> Assessment | None:
        raise AssertionError("never called")


def test_a_misspelled_hook_fails_at_start_up() -> None:
    with pytest.raises(pluggy.PluginValidationError, match="compute_advisor_asess"):
        create_option_host(extra_plugins=[Misspelled()])


class WrongArguments:
    @hookimpl
    def compute_advisor_assess(self, option: str, profile: Profile, knowledge: Knowledge, clock: Any) -> None:
        raise AssertionError("never called")


def test_a_hook_asking_for_arguments_the_spec_lacks_fails_at_start_up() -> None:
    with pytest.raises(pluggy.PluginValidationError, match="clock"):
        create_option_host(extra_plugins=[WrongArguments()])


class Claims:
    sdk = ">=4,<5"

    def __init__(self, *keys: str) -> None:
        self.keys = keys

    @hookimpl
    def compute_advisor_options(self) -> list[OptionSpec]:
        return [spec(k) for k in self.keys]

    @hookimpl
    def compute_advisor_assess(self, option: str) -> Assessment | None:
        raise AssertionError("never called")


def test_two_plugins_claiming_one_option_key_fail_loudly() -> None:
    with pytest.raises(PluginError, match="'rented_gpu_instances' is provided by both"):
        create_option_host(extra_plugins=[Claims("rented_gpu_instances")])
    with pytest.raises(PluginError, match="'twin' is provided by both"):
        create_option_host(extra_plugins=[Claims("twin"), Claims("twin")], entry_points=False)


def test_a_plugin_claiming_a_key_twice_itself_fails_loudly() -> None:
    with pytest.raises(PluginError, match="'twin'"):
        create_option_host(extra_plugins=[Claims("twin", "twin")], entry_points=False)


class Malformed:
    sdk = ">=4,<5"

    @hookimpl
    def compute_advisor_options(self) -> Any:
        return {"key": "malformed"}


def test_a_malformed_options_answer_fails_at_start_up() -> None:
    with pytest.raises(PluginError, match="list\\[OptionSpec\\]"):
        create_option_host(extra_plugins=[Malformed()])


class Declares:
    """An option declaring profile fields (``OptionSpec.profile_fields``)."""

    sdk = ">=4,<5"

    def __init__(self, key: str, *fields: ProfileField) -> None:
        self.key, self.fields = key, fields

    @hookimpl
    def compute_advisor_options(self) -> list[OptionSpec]:
        return [dataclasses.replace(spec(self.key), profile_fields=self.fields)]

    @hookimpl
    def compute_advisor_assess(self, option: str) -> Assessment | None:
        raise AssertionError("never called")


def _field(**changes: Any) -> ProfileField:
    return dataclasses.replace(ProfileField(name="queue", description="d", kind="string"), **changes)


@pytest.mark.parametrize(
    ("field", "problem"),
    [
        (_field(name="Queue"), "lower_snake_case"),
        (_field(name="gpus"), "not a Profile field"),
        (_field(kind="date"), "kind 'date'"),
        (_field(kind="number", choices=("a",)), "only a string field has choices"),
        (_field(minimum=1.0), "only a number has bounds"),
        (_field(kind="integer", minimum=5.0, maximum=1.0), "minimum is above its maximum"),
        (_field(kind="integer", minimum=1.0, default=0), "its default 0 must be at least 1"),
        (_field(choices=("a", "b"), default="c"), "must be one of a, b"),
        (_field(kind="boolean", default="yes"), "must be true or false"),
    ],
)
def test_a_profile_field_against_the_rules_fails_at_start_up(field: ProfileField, problem: str) -> None:
    with pytest.raises(PluginError, match=re.escape(problem)):
        create_option_host(extra_plugins=[Declares("declaring", field)], entry_points=False)


def test_a_profile_field_declared_by_two_options_fails_at_start_up() -> None:
    with pytest.raises(PluginError, match="'queue' is declared by both options alpha and beta"):
        create_option_host(extra_plugins=[Declares("alpha", _field()), Declares("beta", _field())], entry_points=False)


def test_declared_profile_fields_are_the_hosts() -> None:
    host = create_option_host(extra_plugins=[Declares("alpha", _field(choices=("a", "b"), default="a"))])
    assert host.profile_fields == {"queue": _field(choices=("a", "b"), default="a")}
    assert create_option_host().profile_fields == {}  # the built-ins read no field of their own


def test_a_batchs_profiles_are_each_made_as_one_alone() -> None:
    """``Advisor.profiles`` works out what profiles share once (references, the options' fields, today);
    each profile is still what ``Advisor.profile`` makes of it alone, and the first refusal in order is
    raised. ``True == 1`` in Python: a field declared an integer takes 1 and refuses true, whatever came first."""
    from seed_snapshot import knowledge_from_seeds

    from app.core.errors import InconsistentProfile, UnknownReference
    from app.domain.shared.advisor import Advisor
    from app.domain.shared.schemas import ProfileFields

    fields = (_field(name="nodes", kind="integer", default=2), _field(name="urgent", kind="boolean", default=False))
    host = create_option_host(extra_plugins=[Declares("declaring", *fields)])
    kb = knowledge_from_seeds()
    engine = Advisor(host, lambda: kb, today=lambda: dt.date(2026, 3, 1))
    base = {"gpus": 16, "utilization": 0.5, "horizon_years": 2}
    bodies = [
        {**base, "option_fields": {"nodes": 1}},
        {**base, "option_fields": {"urgent": True}},
        {**base, "option_fields": {"nodes": 1, "urgent": True}},
        {**base, "providers": ["aws", "alibaba_cloud", "aws"], "as_of": "2025-06-01"},
        {**base, "providers": ["alibaba_cloud", "aws"], "currency": "USD"},
        {**base, "largest_job_gpus": 8},
        base,
    ]
    reqs = [ProfileFields.model_validate(b) for b in bodies]
    made = engine.profiles(reqs, kb)
    assert made == [engine.profile(r, kb) for r in reqs]
    assert [p.option_fields for p in made[:3]] == [
        (("nodes", 1), ("urgent", False)),
        (("nodes", 2), ("urgent", True)),
        (("nodes", 1), ("urgent", True)),
    ]
    assert made[3].providers == made[4].providers == ("alibaba_cloud", "aws") and made[3].as_of == dt.date(2025, 6, 1)
    assert made[6].as_of == dt.date(2026, 3, 1)

    refused = ProfileFields.model_validate({**base, "option_fields": {"nodes": True}})
    with pytest.raises(InconsistentProfile) as one:
        engine.profile(refused, kb)
    with pytest.raises(InconsistentProfile) as many:
        engine.profiles([*reqs, refused], kb)  # reqs[0] gave nodes 1 first: true is refused all the same
    assert one.value.field == many.value.field == "option_fields.nodes"
    later = [ProfileFields.model_validate({**base, "gpus": 4, "largest_job_gpus": 8}), *reqs]
    first = ProfileFields.model_validate({**base, "gpu_model": "no-such-gpu"})
    with pytest.raises(UnknownReference) as bad:
        engine.profiles([*reqs, first, *later], kb)
    assert bad.value.field == "gpu_model"


def test_distinct_extra_plugins_load_side_by_side() -> None:
    host = create_option_host(extra_plugins=[Claims("alpha"), Claims("beta")])
    assert set(host.options) == BUILTINS | {"alpha", "beta"}
    assert host.options["alpha"].plugin_version == "9.9"  # no distribution: the spec's own version


# ---- a failing plugin is isolated --------------------------------------------------------------


class Exploding:
    sdk = ">=4,<5"

    @hookimpl
    def compute_advisor_options(self) -> list[OptionSpec]:
        return [spec("exploding_option")]

    @hookimpl
    def compute_advisor_assess(self, option: str, profile: Profile, knowledge: Knowledge) -> Assessment | None:
        if option != "exploding_option":
            return None
        raise RuntimeError("boom at 8 GPUs")


class Lacking:
    sdk = ">=4,<5"

    @hookimpl
    def compute_advisor_options(self) -> list[OptionSpec]:
        return [spec("lacking_option")]

    @hookimpl
    def compute_advisor_assess(self, option: str, knowledge: Knowledge) -> Assessment | None:
        knowledge.assumption(option, "no_such_assumption")
        return None


@pytest.fixture
def isolating_client(seeded_db: str) -> Iterator[Client]:
    host = create_option_host(extra_plugins=[Exploding(), Lacking()])
    with make_client(seeded_db, option_host=host) as c:
        yield c


def test_a_plugin_that_raises_only_marks_its_own_option(
    isolating_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    client = isolating_client
    options = {o["key"] for o in client.get("/v1/options").json()["items"]}
    assert options == BUILTINS | {"exploding_option", "lacking_option"}
    failures_before = _failures("exploding_option")

    with caplog.at_level(logging.ERROR, logger="app.domain.shared.advisor"):
        r = client.post("/v1/recommendations", json=PROFILE, headers={"X-Request-ID": "boom-request-1"})
    assert r.status_code == 201, r.text
    assert "boom" not in r.text and "RuntimeError" not in r.text  # a plugin's exception text never reaches a client
    doc = r.json()
    by_option = {e["option"]: e for e in doc["ranking"]}
    assert set(by_option) == BUILTINS | {"exploding_option", "lacking_option"}
    assert doc["recommended_option"] in BUILTINS
    assert [e["rank"] for e in doc["ranking"]] == [1, 2, 3, 4, 5]
    assert {e["option"] for e in doc["ranking"][:3]} == BUILTINS
    boom = by_option["exploding_option"]
    assert boom["error_code"] == "option-failed"
    assert boom["error"] == "the option's computation failed; the service has logged it with the request id"
    assert boom["feasible"] is False and boom["score"] == 0 and boom["cost"] is None
    assert boom["reasons"] == ["Could not be assessed: the option's computation failed (logged)."]
    assert boom["reason_codes"][0]["code"] == "reason.option_failed"
    lacking = by_option["lacking_option"]
    assert lacking["error_code"] == "missing-knowledge" and "no_such_assumption" in lacking["error"]
    for key in BUILTINS:
        assert by_option[key]["error"] is None and by_option[key]["error_code"] is None
        assert by_option[key]["cost"]["annual_cost"]["low"] > 0
    # the built-ins are scored as if the broken options were not there
    assert by_option["rented_gpu_instances"]["cost"]["annual_cost"]["low"] == 876_000
    # logged with its traceback and the request id, and counted (the recommendation and its
    # confidence run each assessed it)
    logged = [rec for rec in caplog.records if "exploding_option" in rec.getMessage()]
    assert logged and all(rec.exc_info and "boom at 8 GPUs" in str(rec.exc_info[1]) for rec in logged)
    assert {getattr(rec, "request_id", None) for rec in logged} == {"boom-request-1"}
    assert _failures("exploding_option") >= failures_before + 1

    r = client.post(
        "/v1/price-comparisons", json={k: PROFILE[k] for k in ("gpus", "utilization", "horizon_years", "as_of")}
    )
    assert r.status_code == 200, r.text
    assert "boom" not in r.text
    items = {i["option"]: i for i in r.json()["items"]}
    assert items["exploding_option"]["error_code"] == "option-failed"
    assert items["exploding_option"]["annual_cost"] is None
    assert items["exploding_option"]["breakdown"] == []
    for key in BUILTINS:
        assert items[key]["error"] is None and items[key]["annual_cost"]["low"] > 0

    r = client.post(
        "/v1/price-comparisons",
        headers={"Accept": "text/csv"},
        json={"gpus": 8, "utilization": 0.5, "horizon_years": 1, "as_of": AS_OF},
    )
    assert r.status_code == 200
    assert "boom" not in r.text and "the option's computation failed" in r.text

    # a batch large enough to be vectorised retries the plugin per profile, and reports each failure alike
    batch = [dict(PROFILE, gpus=g) for g in range(8, 20)]
    r = client.post("/v1/evaluations", json={"profiles": batch})
    assert r.status_code == 200, r.text
    assert "boom" not in r.text
    for result in r.json()["results"]:
        entry = next(e for e in result["ranking"] if e["option"] == "exploding_option")
        assert entry["error_code"] == "option-failed"

    r = client.post("/v1/uncertainty", json={**PROFILE, "draws": 100})
    assert r.status_code == 200, r.text
    assert "boom" not in r.text
    assert r.json()["error_codes"]["exploding_option"] == "option-failed"


def _failures(option: str) -> float:
    from app.web.metrics import OPTION_FAILURES

    return float(OPTION_FAILURES.labels(option)._value.get())


def test_when_every_option_fails_the_problem_names_each_error(seeded_db: str) -> None:
    host = create_option_host(extra_plugins=[Exploding(), Lacking()], entry_points=False)
    with make_client(seeded_db, option_host=host) as client:
        # neither option rents: a plan to rent on is a plan no loaded option sells
        r = client.post("/v1/recommendations", json=PROFILE)
        assert r.status_code == 422 and r.json()["field"] == "rental_plan", r.text
        r = client.post("/v1/recommendations", json={k: v for k, v in PROFILE.items() if k != "rental_plan"})
        assert r.status_code == 422, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        problem = r.json()
        assert problem["type"].endswith("no-option-assessable")
        assert "exploding_option: the option's computation failed" in problem["detail"]
        assert "boom" not in r.text
        assert "lacking_option:" in problem["detail"] and "no_such_assumption" in problem["detail"]


# ---- a third-party option installed as a package with an entry point ---------------------------

SPOT_MODULE = '''
"""Spot GPU instances: the rented instance price at the yearly reservation's discount, paid like
on-demand instances. A third-party option, built only on app.host.hookspecs and existing knowledge rows."""

from app.core import inputs as model  # SDK v2's helpers (deprecated with the assess hook)
from app.core.declarations import OptionSpec
from app.core.ranges import Range
from app.core.types import HOURS_PER_YEAR, Assessment, Cost, LineItem
from app.host.hookspecs import hookimpl

KEY = "spot_instances"
sdk = ">=4,<5"  # the SDK versions this plugin is written for
RENTED = "rented_gpu_instances"
ZERO = Range.point(0)


@hookimpl
def compute_advisor_options():
    return [OptionSpec(KEY, "Spot GPU instances", "Interruptible rented instances at a discount.", "0.0-spec")]


@hookimpl
def compute_advisor_assess(option, profile, knowledge):
    if option != KEY:
        return None
    server = knowledge.server_for(profile.gpu_model)
    common = dict(currency=profile.currency, as_of=profile.as_of)
    hourly = knowledge.price(RENTED, "instance_hour", unit="per_server_hour", subject=server.key, **common)
    discount = knowledge.price(RENTED, "reservation_discount", unit="fraction", subject=server.key, **common)
    inputs = model.Inputs(knowledge, RENTED)  # spot instances behave like rented ones
    held = inputs("held_utilization")
    useful = profile.useful_gpu_hours_per_year
    paid = (useful / held).cap(profile.gpus * HOURS_PER_YEAR)
    annual = paid * (hourly.value / server.gpus_per_server) * discount.value.complement()
    line = LineItem(
        key="spot_hours",
        label="Spot instance hours",
        annual=annual,
        upfront=ZERO,
        basis="min(gpus × 8760, useful ÷ held_utilization) × hourly price ÷ GPUs per server × (1 − discount)",
        sources=(hourly.ref, discount.ref, server.ref, *inputs.take_refs()),
    )
    cost = Cost(annual, annual * profile.horizon_years, ZERO, annual / useful, useful, paid, False, (line,))
    infra = inputs("infra_fte_base")
    return Assessment(
        option=KEY,
        cost=cost,
        efficiency=model.efficiency(inputs, profile),
        stability=model.stability(inputs, profile),
        usability=model.usability(inputs, profile, infra, "as rented instances, plus preemptions"),
        notes=("Spot: the rented price at the reservation discount.",),
    )
'''


@pytest.fixture
def spot_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Install ``spot_option`` 0.1 into ``tmp_path`` as a distribution with an entry point."""
    root = tmp_path / "site"
    (root / "spot_option").mkdir(parents=True)
    (root / "spot_option" / "__init__.py").write_text(textwrap.dedent(SPOT_MODULE), encoding="utf-8")
    dist = root / "spot_option-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: spot-option\nVersion: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nspot_instances = spot_option\n", encoding="utf-8")
    (dist / "RECORD").write_text("", encoding="utf-8")
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    yield root
    sys.modules.pop("spot_option", None)
    importlib.invalidate_caches()


def test_the_spot_package_is_an_installed_distribution(spot_package: Path) -> None:
    assert importlib.metadata.version("spot-option") == "0.1"
    eps = {ep.name: ep.value for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    assert eps["spot_instances"] == "spot_option"


def test_without_the_package_there_is_no_spot_option() -> None:
    assert "spot_instances" not in create_option_host().options


def test_a_third_party_option_joins_the_api_through_its_entry_point(spot_package: Path, seeded_db: str) -> None:
    host: OptionHost = create_option_host()
    assert set(host.options) == BUILTINS | {"spot_instances"}

    with make_client(seeded_db) as client:
        options = {o["key"]: o for o in client.get("/v1/options").json()["items"]}
        assert set(options) == BUILTINS | {"spot_instances"}
        spot = options["spot_instances"]
        assert spot["plugin"] == "spot_instances"
        assert spot["plugin_version"] == "0.1"  # from the dist-info, not the spec
        assert spot["name"] == "Spot GPU instances"

        r = client.post("/v1/recommendations", json=PROFILE)
        assert r.status_code == 201, r.text
        ranking = {e["option"]: e for e in r.json()["ranking"]}
        assert set(ranking) == BUILTINS | {"spot_instances"}
        assert sorted(e["rank"] for e in ranking.values()) == [1, 2, 3, 4]
        entry = ranking["spot_instances"]
        assert entry["error"] is None and entry["feasible"] is True
        # 876,000 CNY a year at the reservation's 30–40 % off
        assert (entry["cost"]["annual_cost"]["low"], entry["cost"]["annual_cost"]["high"]) == (525_600, 613_200)
        # 16.25 CNY per useful GPU-hour (expected) against the platform's 12.50 ÷ 0.77 = 16.23
        assert entry["cost"]["cost_per_useful_gpu_hour"]["expected"] == 16.25
        # a plugin that prices no effective cost is scored on useful ÷ (execution × goodput), as every option
        spot_effective = entry["cost"]["cost_per_effective_gpu_hour"]["expected"]
        platform_effective = ranking["ai_compute_platform"]["cost"]["cost_per_effective_gpu_hour"]["expected"]
        assert spot_effective > 16.25
        assert entry["scores"]["cost"] == pytest.approx(100 * platform_effective / spot_effective, abs=0.1)
        assert ranking["ai_compute_platform"]["scores"]["cost"] == 100
        assert ranking["rented_gpu_instances"]["cost"]["annual_cost"]["low"] == 876_000

        r = client.post(
            "/v1/price-comparisons", json={"gpus": 8, "utilization": 0.5, "horizon_years": 2, "as_of": AS_OF}
        )
        assert r.status_code == 200, r.text
        items = {i["option"]: i for i in r.json()["items"]}
        assert set(items) == BUILTINS | {"spot_instances"}
        spot_item = items["spot_instances"]
        assert spot_item["plugin"] == "spot_instances"
        assert (spot_item["total_cost"]["low"], spot_item["total_cost"]["high"]) == (1_051_200, 1_226_400)
        assert spot_item["cost_per_useful_gpu_hour"]["low"] == 15.0
        # its figures cite the rented option's existing rows
        prices = {str(p["id"]): p for p in client.get("/v1/prices", params={"limit": 500}).json()["items"]}
        cited = {
            prices[s["ref"]]["item"]
            for li in spot_item["breakdown"]
            for s in li["sources"]
            if s["table"] == "price_items"
        }
        assert cited == {"instance_hour", "reservation_discount"}
        assumptions = {s["ref"] for li in spot_item["breakdown"] for s in li["sources"] if s["table"] == "assumptions"}
        assert assumptions == {"rented_gpu_instances/held_utilization"}
