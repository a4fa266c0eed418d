"""The example plugin of docs/plugins.md (tests/plugins_example/), installed as a package with an entry
point, and its seed file loaded with the reference seeds: it joins every answer of the API — rankings,
price comparisons, batches (with arrays), Monte Carlo (with arrays), break-even and sensitivity.
Also the tests of each hook of app/host/hookspecs.py (tests/test_hook_docs.py asks for them)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib
import importlib.metadata
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import SEEDS, load_seeds, make_client, migrate, require_backend
from litestar.testing import TestClient
from seed_snapshot import knowledge_from_seeds

from app import i18n
from app.engine.batch import vector_profile
from app.engine.insights import sample_knowledge
from app.host.hookspecs import ENTRY_POINT_GROUP
from app.host.manager import create_option_host
from app.sdk import Assessment, Kernel, OptionSpec, Profile, ProfileField, hookimpl

EXAMPLE = Path(__file__).parent / "plugins_example"
PACKAGE = EXAMPLE / "hpc_allocation"
MODULE = PACKAGE / "__init__.py"
CATALOGS = {lang: PACKAGE / "locales" / f"{lang}.toml" for lang in ("en", "zh")}
SEED_FILE = EXAMPLE / "90-hpc-allocation.yaml"
DOCS = Path(__file__).parent.parent / "docs" / "plugins.md"
KEY = "hpc_allocation"
BUILTINS = {"self_built_cluster", "rented_gpu_instances", "ai_compute_platform"}
AS_OF = "2025-06-01"
PROFILE: dict[str, Any] = {
    "gpus": 8,
    "utilization": 0.5,
    "horizon_years": 1,
    "team_size": 10,
    "ops_team": "none",
    "data_security": "standard",
    "start_within_days": 30,
    "as_of": AS_OF,
}
Client = TestClient  # type: ignore[type-arg]


@pytest.fixture(scope="module")
def example_seeds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference seed files and the example's, in one directory (what an admin loads)."""
    path = tmp_path_factory.mktemp("seeds")
    for file in [*SEEDS.glob("*.yaml"), SEED_FILE]:
        shutil.copy(file, path / file.name)
    return path


@pytest.fixture(scope="module")
def example_db(example_seeds: Path, databases: Any) -> str:
    require_backend("sqlite")
    url: str = databases.new("sqlite")
    migrate(url)
    load_seeds(url, example_seeds)
    return url


@pytest.fixture
def example_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Install the example as the distribution ``hpc-allocation`` 0.1.0 with its entry point."""
    root = tmp_path / "site"
    root.mkdir()
    shutil.copytree(PACKAGE, root / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__"))
    dist = root / "hpc_allocation-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: hpc-allocation\nVersion: 0.1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{KEY} = hpc_allocation:plugin\n", encoding="utf-8")
    (dist / "RECORD").write_text("", encoding="utf-8")
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    yield
    sys.modules.pop("hpc_allocation", None)
    importlib.invalidate_caches()


@pytest.fixture
def example_client(example_package: None, example_db: str) -> Iterator[Client]:
    with make_client(example_db) as c:
        yield c


def _example() -> Any:
    return importlib.import_module("hpc_allocation")


def test_the_docs_show_the_tested_example() -> None:
    """docs/plugins.md shows the example's module, catalogs and seed file as they are here, whole."""
    docs = DOCS.read_text(encoding="utf-8")
    assert f"```python\n{MODULE.read_text(encoding='utf-8')}```" in docs
    for catalog in CATALOGS.values():
        assert f"```toml\n{catalog.read_text(encoding='utf-8')}```" in docs
    assert f"```yaml\n{SEED_FILE.read_text(encoding='utf-8')}```" in docs
    assert f'[project.entry-points."{ENTRY_POINT_GROUP}"]\n{KEY} = "hpc_allocation:plugin"' in docs


def test_the_example_joins_the_api_through_its_entry_point(example_client: Client) -> None:
    options = {o["key"]: o for o in example_client.get("/v1/options").json()["items"]}
    assert set(options) == BUILTINS | {KEY}
    assert options[KEY]["plugin"] == KEY
    assert options[KEY]["plugin_version"] == "0.1.0"  # the distribution's version
    assert options[KEY]["name"] == "HPC centre allocation"

    r = example_client.post("/v1/recommendations", json=PROFILE)
    assert r.status_code == 201, r.text
    ranking = {e["option"]: e for e in r.json()["ranking"]}
    entry = ranking[KEY]
    assert entry["error"] is None and entry["feasible"] is True
    # 8 GPUs × 0.5 × 8,760 h = 35,040 useful GPU-hours a year at 8–12 CNY (expected 10)
    annual = entry["cost"]["annual_cost"]
    assert (annual["low"], annual["expected"], annual["high"]) == (280_320, 350_400, 420_480)
    assert entry["cost"]["cost_per_useful_gpu_hour"]["expected"] == 10
    # the one money scale: the effective cost adds unmet infrastructure work and divides by goodput
    assert entry["cost"]["cost_per_effective_gpu_hour"]["expected"] > 10
    assert any("HPC allocation" in reason for reason in entry["reasons"])
    assert r.json()["confidence"]["errors"] == {}
    assert KEY in r.json()["confidence"]["options"]

    r = example_client.post(
        "/v1/price-comparisons", json={k: PROFILE[k] for k in ("gpus", "utilization", "horizon_years", "as_of")}
    )
    assert r.status_code == 200, r.text
    item = {i["option"]: i for i in r.json()["items"]}[KEY]
    prices = {str(p["id"]): p for p in example_client.get("/v1/prices", params={"option": KEY}).json()["items"]}
    cited = {s["ref"] for li in item["breakdown"] for s in li["sources"] if s["table"] == "price_items"}
    assert [prices[ref]["provider"] for ref in cited] == ["regional_hpc_centre"]


def test_the_example_declares_a_profile_field(example_client: Client) -> None:
    """``hpc_queue`` (OptionSpec.profile_fields): listed by /v1/options and in the API document, sent in
    ``option_fields``, checked against its declaration, read by the kernel on every endpoint."""
    declared = {o["key"]: o for o in example_client.get("/v1/options").json()["items"]}[KEY]["profile_fields"]
    assert declared == [
        {
            "name": "hpc_queue",
            "description": "The centre's queue: standard, or priority, billed at priority_price_factor × the price.",
            "kind": "string",
            "default": "standard",
            "minimum": None,
            "maximum": None,
            "choices": ["standard", "priority"],
        }
    ]
    schemas = example_client.get("/docs/openapi.json").json()["components"]["schemas"]
    given = schemas["ComparisonCreate"]["properties"]["option_fields"]["oneOf"][0]
    queue = given["properties"]["hpc_queue"]
    named = queue["allOf"][0]["$ref"].rsplit("/", 1)[1] if "allOf" in queue else None  # an enum gets its name
    assert (schemas[named] if named else queue)["enum"] == ["standard", "priority"]
    assert queue["default"] == "standard"
    assert given["additionalProperties"] is False

    def annual(body: dict[str, Any]) -> dict[str, float]:
        r = example_client.post("/v1/price-comparisons", json=body)
        assert r.status_code == 200, r.text
        return {i["option"]: i for i in r.json()["items"]}[KEY]["annual_cost"]  # type: ignore[no-any-return]

    standard = annual(PROFILE)
    assert standard == annual({**PROFILE, "option_fields": {"hpc_queue": "standard"}})
    # 35,040 useful GPU-hours a year at 8–12 CNY (mean 10) × the priority factor 1.25–2, most likely 1.5: its
    # mean (1.25 + 1.5 + 2) ÷ 3 = 1.5833… is the expected end (a knowledge row's range is triangular)
    priority = annual({**PROFILE, "option_fields": {"hpc_queue": "priority"}})
    assert (priority["low"], priority["expected"], priority["high"]) == (350_400, 554_800, 840_960)
    r = example_client.post(
        "/v1/evaluations", json={"profiles": [{**PROFILE, "option_fields": {"hpc_queue": "priority"}}] * 9}
    )
    assert r.status_code == 200, r.text
    entry = {e["option"]: e for e in r.json()["results"][8]["ranking"]}[KEY]
    assert entry["annual_cost"] == 554_800

    for fields, named in (
        ({"hpc_queue": "express"}, "option_fields.hpc_queue"),
        ({"queue": "x"}, "option_fields.queue"),
    ):
        r = example_client.post("/v1/price-comparisons", json={**PROFILE, "option_fields": fields})
        assert r.status_code == 422, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        assert [e["field"] for e in r.json()["errors"]] == [named]


def test_the_example_is_infeasible_above_the_centres_gpus(example_client: Client) -> None:
    r = example_client.post("/v1/recommendations", params={"store": "false"}, json={**PROFILE, "gpus": 512})
    assert r.status_code == 200, r.text
    entry = {e["option"]: e for e in r.json()["ranking"]}[KEY]
    assert entry["feasible"] is False
    assert any("at most 256 GPUs" in reason for reason in entry["reasons"])


def test_the_example_speaks_chinese_and_english_from_its_own_catalogs(example_client: Client) -> None:
    """The example's sentences are messages its package words in both languages (locales/<lang>.toml):
    its note among the reasons, its breakdown line, its name, each in the language asked for."""
    words = {}
    for lang in ("en", "zh"):
        headers = {"Accept-Language": lang}
        r = example_client.post("/v1/recommendations", params={"store": "false"}, json=PROFILE, headers=headers)
        assert r.status_code == 200, r.text
        assert r.headers["content-language"] == {"en": "en", "zh": "zh-CN"}[lang]
        entry = {e["option"]: e for e in r.json()["ranking"]}[KEY]
        codes = [c["code"] for c in entry["reason_codes"]]
        note = entry["reasons"][codes.index("hpc_allocation.note")]
        body = {k: PROFILE[k] for k in ("gpus", "utilization", "horizon_years", "as_of")}
        item = {
            i["option"]: i
            for i in example_client.post("/v1/price-comparisons", json=body, headers=headers).json()["items"]
        }
        line = {li["key"]: li for li in item[KEY]["breakdown"]}["gpu_hours"]["label"]
        options = example_client.get("/v1/options", headers=headers).json()["items"]
        words[lang] = (note, line, {o["key"]: o["name"] for o in options}[KEY])
    assert words["en"] == (
        "HPC allocation: 280,320–420,480 CNY (expected 350,400) a year at Regional HPC centre.",
        "Allocated GPU-hours",
        "HPC centre allocation",
    )
    assert words["zh"] == (
        "超算中心机时：每年 280,320–420,480 CNY（预期 350,400），由 Regional HPC centre 提供。",  # the seed's name
        "分配的GPU机时",
        "超算中心机时分配",
    )


def test_the_example_takes_a_batch_as_arrays(example_client: Client, example_seeds: Path) -> None:
    """Through the API, a batch larger than a few profiles is vectorised; it ranks as one profile at a time."""
    profiles = [{**PROFILE, "gpus": 8 * 2**i, "utilization": 0.2 + 0.05 * i} for i in range(10)]  # 8 … 4,096 GPUs
    large = example_client.post("/v1/evaluations", json={"profiles": profiles})
    assert large.status_code == 200, large.text
    small = example_client.post("/v1/evaluations", json={"profiles": profiles[:8]}).json()["results"]
    assert small == large.json()["results"][:8]
    over = {e["option"]: e for e in large.json()["results"][-1]["ranking"]}[KEY]
    assert over["feasible"] is False and over["error"] is None

    # the plugin itself: arrays in, arrays out, no fallback to one profile at a time
    kb = knowledge_from_seeds(example_seeds)
    members = [Profile(gpus=g, utilization=0.5, horizon_years=1, as_of=dt.date(2025, 6, 1)) for g in (8, 512)]
    a = create_option_host().assess(KEY, vector_profile(members), kb)
    assert isinstance(a.cost.annual.expected, np.ndarray) and a.cost.annual.expected.shape == (2,)
    assert a.violations[0].violated.tolist() == [False, True]


def test_the_example_takes_monte_carlo_draws(example_client: Client, example_seeds: Path) -> None:
    r = example_client.post("/v1/uncertainty", json={**PROFILE, "draws": 500, "seed": 1})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["errors"] == {}
    spread = doc["options"][KEY]["annual_cost"]
    assert 280_320 < spread["p10"] < spread["p50"] < spread["p90"] < 420_480

    kb = knowledge_from_seeds(example_seeds)
    sampled = sample_knowledge(kb, 200, np.random.default_rng(0))
    profile = Profile(gpus=8, utilization=0.5, horizon_years=1, as_of=dt.date(2025, 6, 1))
    a = create_option_host().assess(KEY, profile, sampled)
    assert a.cost.annual.expected.shape == (200,)


def test_break_even_and_sensitivity_take_the_example(example_client: Client) -> None:
    r = example_client.post("/v1/break-even", json=PROFILE)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["errors"] == {}
    pairs = {(c["first"], c["second"]) for c in doc["crossings"]}
    assert (KEY, "ai_compute_platform") in pairs  # every pair of options: the example's key comes first
    assert any(p["alternative"] == KEY for p in doc["paybacks"])  # the owner's payback against it

    r = example_client.post("/v1/sensitivity", json=PROFILE)
    assert r.status_code == 200, r.text
    refs = {i["ref"] for i in r.json()["inputs"]}
    assert f"assumptions:{KEY}/lead_time_days" in refs  # every ranged row the assessment cites
    # labelled by the option's name and the price item's words
    hpc_hours = f"HPC centre allocation: {i18n.translate('chart.input.gpu_hour')}"
    assert any(i["label"] == hpc_hours for i in r.json()["inputs"])


# ---- the hooks, called through pluggy ------------------------------------------------------------


def test_hook_compute_advisor_options(example_package: None) -> None:
    host = create_option_host()
    answers = host.pm.hook.compute_advisor_options()
    specs = {s.key: s for answer in answers for s in answer}
    assert set(specs) == BUILTINS | {KEY}
    assert specs[KEY] == OptionSpec(
        key=KEY,
        name="HPC centre allocation",
        description="GPU-hours on a regional HPC centre's shared cluster: billed per GPU-hour used, after a queue.",
        version="0.1.0",
        profile_fields=(
            ProfileField(
                name="hpc_queue",
                description="The centre's queue: standard, or priority, billed at priority_price_factor × the price.",
                kind="string",
                choices=("standard", "priority"),
                default="standard",
            ),
        ),
    )
    assert specs["self_built_cluster"].owns_hardware and specs["rented_gpu_instances"].plans


def test_hook_compute_advisor_messages(example_package: None) -> None:
    host = create_option_host()
    answers = host.pm.hook.compute_advisor_messages()
    assert len(answers) == len(BUILTINS) + 1  # every built-in ships its words, and so does the example
    example = next(a for a in answers if "hpc_allocation" in a.get("en", {}))
    assert set(example) == {"en", "zh"}
    assert example["zh"]["hpc_allocation"]["line"]["gpu_hours"] == "分配的GPU机时"  # TOML's tables, as read
    # the host keeps each plugin's catalogs flat, by the plugin's name; i18n merges them with the service's
    assert host.messages[KEY]["en"]["hpc_allocation.note"] == "HPC allocation: {annual} a year at {provider}."
    assert set(host.messages) == BUILTINS | {KEY}
    assert i18n.catalog("zh")["option.hpc_allocation.name"] == "超算中心机时分配"
    assert i18n.translate("hpc_allocation.setup", "zh") == "中心的批处理调度系统和软件模块"


def test_hook_compute_advisor_compile(example_package: None, example_seeds: Path) -> None:
    host = create_option_host()
    kb = knowledge_from_seeds(example_seeds)
    as_of = dt.date(2025, 6, 1)
    # every plugin answers; only the one that provides the option returns a kernel
    answers = host.pm.hook.compute_advisor_compile(
        option=KEY, knowledge=kb, currency="CNY", as_of=as_of, roles=host.role
    )
    found = [k for k in answers if k is not None]
    assert len(found) == 1 and isinstance(found[0], Kernel) and found[0].option == KEY
    profile = Profile(gpus=8, utilization=0.5, horizon_years=1, as_of=as_of)
    assessment = found[0].assess(profile)
    assert isinstance(assessment, Assessment) and assessment.cost.annual.expected == pytest.approx(350_400)
    # an implementation may take fewer arguments than the specification: keywords only
    with pytest.raises(TypeError):
        host.pm.hook.compute_advisor_compile(KEY, kb, "CNY", as_of, host.role)
    # the host compiles once per snapshot, currency and period, and keeps the kernel
    assert host.kernel(KEY, kb, "CNY", as_of) is host.kernel(KEY, kb, "CNY", dt.date(2025, 6, 2))
    assert host.assess(KEY, profile, kb).cost.annual == assessment.cost.annual


class _SdkV2Option:
    """An option written for SDK v2: ``compute_advisor_assess`` only, asked once per profile."""

    sdk = ">=4,<5"

    @hookimpl
    def compute_advisor_options(self) -> list[OptionSpec]:
        return [OptionSpec("v2_option", "An SDK v2 option", "Assessed per profile.", "0.1")]

    @hookimpl
    def compute_advisor_assess(self, option: str, profile: Profile, knowledge: Any) -> Assessment | None:
        if option != "v2_option":
            return None
        return dataclasses.replace(
            create_option_host().assess("rented_gpu_instances", profile, knowledge), option=option
        )


def test_hook_compute_advisor_assess() -> None:
    host = create_option_host([_SdkV2Option()])
    kb = knowledge_from_seeds()
    profile = Profile(gpus=8, utilization=0.5, horizon_years=1, as_of=dt.date(2025, 6, 1))
    answers = host.pm.hook.compute_advisor_assess(option="v2_option", profile=profile, knowledge=kb)
    found = [a for a in answers if a is not None]
    assert len(found) == 1 and found[0].option == "v2_option"
    with pytest.raises(TypeError):
        host.pm.hook.compute_advisor_assess("v2_option", profile, kb)
    # the host asks such a plugin once per profile, for single answers and for the numbers of a batch
    assert host.assess("v2_option", profile, kb).cost.annual == found[0].cost.annual
    quote, quoted = host.choose("v2_option", profile, kb)
    assert quoted == 1 and quote.cost.annual == found[0].cost.annual


def test_the_example_takes_part_in_capacity_portfolios(example_client: Client) -> None:
    """A third party's option is sampled by its own kernel like the built-ins: it has its single
    portfolio, the mix may use it, and a recommendation on a demand prices it as that portfolio."""
    plain = {k: v for k, v in PROFILE.items() if k != "gpus"}
    # jobs of one 8-GPU node: the centre's nodes have no training interconnect named (a job across them is refused)
    ramp = [{"months": 12, "gpus": g, "utilization": 0.5, "largest_job_gpus": 8} for g in (16, 32, 64)]
    body = {**plain, "horizon_years": 3, "demand": ramp}
    r = example_client.post("/v1/capacity-plans", json=body)
    assert r.status_code == 200, r.text
    doc = r.json()
    portfolios = {p["key"]: p for p in doc["portfolios"]}
    single = portfolios[f"single:{KEY}"]
    assert single["feasible"] is True and doc["errors"] == {}, (single["reasons"], doc["errors"])
    assert {s["option"] for s in single["segments"]} == {KEY}
    assert [sum(s["gpus_by_phase"][k] for s in single["segments"]) for k in range(3)] == [16, 32, 64]
    assert all(s["acquired"] == "use" and s["offer"]["provider"] == "regional_hpc_centre" for s in single["segments"])
    # billed per useful GPU-hour at 8–12 CNY (expected 10): the hours served × the price
    per_hour = single["cost_per_useful_gpu_hour"]
    assert (per_hour["low"], per_hour["expected"], per_hour["high"]) == (8, 10, 12)
    # (16 + 32 + 64) GPUs × 0.5 × 8,760 h a year = 490,560 useful GPU-hours at 8, 10 and 12 CNY
    total = single["total_cost"]
    assert (total["low"], total["expected"], total["high"]) == (3_924_480, 4_905_600, 5_886_720)
    assert KEY in {s["option"] for s in portfolios["hybrid"]["segments"]}

    r = example_client.post("/v1/recommendations", json=body)
    assert r.status_code == 201, r.text
    entry = {e["option"]: e for e in r.json()["ranking"]}[KEY]
    assert entry["cost"]["total_cost"] == single["total_cost"] and entry["segments"] == single["segments"]
