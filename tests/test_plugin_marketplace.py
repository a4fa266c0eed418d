"""The second third-party example (tests/plugins_marketplace/): a GPU marketplace written on ``app.sdk``
alone, installed as its own distribution with an entry point, its seed file loaded with the reference
seeds. It ranks on every computing endpoint; interruptible GPUs serve only fully preemptible work; an
8-GPU job is never placed on single GPUs; a release written for another SDK is refused at start, and
seeds lacking an assumption it requires are refused by ``seeds check``.

One database and one app for the module: the API tests share them."""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SEEDS, load_seeds, make_client
from litestar.testing import TestClient

from app.cli import main
from app.host.hookspecs import ENTRY_POINT_GROUP
from app.host.manager import PluginError, create_option_host
from app.sdk import Knowledge, __version__
from app.sdk.testing import assess, knowledge
from plugins.rented_gpu_instances import plugin as rented

EXAMPLE = Path(__file__).parent / "plugins_marketplace"
PACKAGE = EXAMPLE / "gpu_marketplace"
SEED_FILE = EXAMPLE / "90-gpu-marketplace.yaml"
KEY = "gpu_marketplace"
AS_OF = "2026-06-15"
PROFILE: dict[str, Any] = {
    "gpus": 8,
    "utilization": 0.5,
    "horizon_years": 1,
    "gpu_model": "h100_sxm",
    "team_size": 10,
    "ops_team": "none",
    "as_of": AS_OF,
}
Client = TestClient  # type: ignore[type-arg]


def install(site: Path, dist: str, module: str, entry: str) -> None:
    """A distribution ``dist`` 0.1.0 in ``site`` whose entry point ``entry`` names ``module:plugin``."""
    info = site / f"{dist.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{entry} = {module}:plugin\n", encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")


@pytest.fixture(scope="module")
def market_seeds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference seed files and the marketplace's, in one directory (what an admin loads)."""
    path = tmp_path_factory.mktemp("seeds")
    for file in [*SEEDS.glob("*.yaml"), SEED_FILE]:
        shutil.copy(file, path / file.name)
    return path


@pytest.fixture(scope="module")
def market_package(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The marketplace installed as the distribution ``gpu-marketplace`` 0.1.0 with its entry point."""
    site = tmp_path_factory.mktemp("site")
    shutil.copytree(PACKAGE, site / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__"))
    install(site, "gpu-marketplace", "gpu_marketplace", KEY)
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(site))
        importlib.invalidate_caches()
        yield
    sys.modules.pop("gpu_marketplace", None)
    importlib.invalidate_caches()


@pytest.fixture(scope="module")
def client(market_package: None, market_seeds: Path, databases: Any) -> Iterator[Client]:
    url = databases.seeded("sqlite")
    load_seeds(url, market_seeds, note="the GPU marketplace example")
    with make_client(url) as c:
        yield c


@pytest.fixture(scope="module")
def kb(market_seeds: Path) -> Knowledge:
    return knowledge(market_seeds, as_of=dt.date.fromisoformat(AS_OF))


@pytest.fixture(scope="module")
def market(market_package: None) -> Any:
    """The installed marketplace's plugin."""
    return importlib.import_module("gpu_marketplace").plugin


def _entry(ranking: list[dict[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {e["option"]: e for e in ranking}[KEY]
    assert found["error"] is None, found["error"]
    return found


# ---- every computing endpoint -------------------------------------------------------------------


def test_it_joins_the_api_as_its_own_distribution(client: Client) -> None:
    options = {o["key"]: o for o in client.get("/v1/options").json()["items"]}
    assert options[KEY]["plugin"] == KEY and options[KEY]["plugin_version"] == "0.1.0"
    assert options[KEY]["name"] == "GPU marketplace"

    r = client.post("/v1/recommendations", params={"store": "false"}, json=PROFILE)
    assert r.status_code == 200, r.text
    entry = _entry(r.json()["ranking"])
    assert entry["feasible"] is True
    assert entry["cost"]["cost_per_useful_gpu_hour"]["expected"] > 0
    assert KEY in r.json()["confidence"]["options"] and r.json()["confidence"]["errors"] == {}
    # its own words, in the language asked for
    zh = client.post("/v1/recommendations", params={"store": "false"}, json=PROFILE, headers={"Accept-Language": "zh"})
    assert any(reason.startswith("GPU算力市场（") for reason in _entry(zh.json()["ranking"])["reasons"])

    r = client.post("/v1/price-comparisons", json=PROFILE)
    assert r.status_code == 200, r.text
    item = {i["option"]: i for i in r.json()["items"]}[KEY]
    assert item["error"] is None and item["offer"]["provider"] == "example_gpu_market"
    assert [li["key"] for li in item["breakdown"]] == ["gpu_hours"]

    profiles = [{**PROFILE, "gpus": 8 * 2**i} for i in range(10)]  # more than a few: vectorised
    r = client.post("/v1/evaluations", json={"profiles": profiles})
    assert r.status_code == 200, r.text
    assert all(_entry(result["ranking"])["feasible"] for result in r.json()["results"])


def test_it_joins_the_insights(client: Client) -> None:
    r = client.post("/v1/break-even", json=PROFILE)
    assert r.status_code == 200 and KEY not in r.json()["errors"], r.text  # rented's reserved_1y has no H100 row
    assert any(KEY in (c["first"], c["second"]) for c in r.json()["crossings"])

    # narrowed to the marketplace's provider: the other options' 40 inputs would take seconds more
    r = client.post("/v1/sensitivity", json={**PROFILE, "providers": ["example_gpu_market"]})
    assert r.status_code == 200, r.text
    assert f"assumptions:{KEY}/held_utilization" in {i["ref"] for i in r.json()["inputs"]}

    r = client.post("/v1/uncertainty", json={**PROFILE, "draws": 200, "seed": 1})
    assert r.status_code == 200 and KEY not in r.json()["errors"], r.text
    spread = r.json()["options"][KEY]["annual_cost"]
    assert spread["p10"] < spread["p50"] < spread["p90"]

    r = client.post("/v1/cost-curves", json=PROFILE)
    assert r.status_code == 200, r.text
    assert KEY in {s["option"] for s in r.json()["series"]}


def test_it_joins_training_and_capacity_plans(client: Client) -> None:
    body = {"parameters": 7e9, "tokens": 1e12, "gpu_model": "h100_sxm", "gpus": 8, "as_of": AS_OF}
    r = client.post("/v1/training-plans", json=body)
    assert r.status_code == 200, r.text
    assert _entry(r.json()["items"])["feasible"] is True

    plain = {k: v for k, v in PROFILE.items() if k != "gpus"}
    ramp = [{"months": 12, "gpus": g, "utilization": 0.5, "largest_job_gpus": 8} for g in (8, 16, 32)]
    r = client.post("/v1/capacity-plans", json={**plain, "horizon_years": 3, "demand": ramp})
    assert r.status_code == 200, r.text
    single = {p["key"]: p for p in r.json()["portfolios"]}[f"single:{KEY}"]
    assert single["feasible"] is True, single["reasons"]
    assert {s["option"] for s in single["segments"]} == {KEY}


# ---- what the kernel decides (priced with app.sdk.testing, as the plugin's own tests would) -------


def test_interruptible_gpus_serve_only_fully_preemptible_work(kb: Knowledge, market: Any) -> None:
    def chosen(share: float) -> Any:
        return assess(kb, {**PROFILE, "preemptible_share": share}, market)[KEY]

    for share in (0.0, 0.5):
        a = chosen(share)
        assert a.offer.plan == "on_demand" and not a.violations
        refused = [alt for alt in a.alternatives if alt.offer.plan == "interruptible"]
        assert refused and not any(alt.feasible for alt in refused)
        assert all(any("taken back at any time" in reason for reason in alt.reasons) for alt in refused)
    a = chosen(1.0)
    assert a.offer.plan == "interruptible" and not a.violations
    assert any("interruptions count as failures" in note for note in a.notes)
    assert a.cost.annual.expected < chosen(0.0).cost.annual.expected


def test_an_eight_gpu_job_is_not_placed_on_single_gpus(kb: Knowledge, market: Any) -> None:
    # single GPUs are the cheapest rows, yet an 8-GPU job runs on an 8-GPU node
    a = assess(kb, PROFILE, market)[KEY]
    assert a.offer.gpus_per_unit == 8 and not a.violations
    singles = [alt for alt in a.alternatives if alt.offer.gpus_per_unit == 1]
    assert singles and all(any("more than one 1-GPU node" in reason for reason in alt.reasons) for alt in singles)
    # jobs of one GPU go to single GPUs; a 16-GPU job spans 8-GPU nodes joined by InfiniBand
    assert assess(kb, {**PROFILE, "largest_job_gpus": 1}, market)[KEY].offer.gpus_per_unit == 1
    wide = assess(kb, {**PROFILE, "gpus": 16}, market)[KEY]
    assert wide.offer.gpus_per_unit == 8 and not wide.violations
    assert "*/multi_node_scaling_infiniband" in {s.ref for s in wide.efficiency.sources}

    # the SDK's defaults: a row that says how many GPUs one rental has is its node; the team's machine
    # is the row's unit, or for one GPU its GPU's server (the marketplace says one rental is one machine)
    kernel = market.kernel(market.spec, kb, "CNY", dt.date.fromisoformat(AS_OF), lambda *_: None)
    single = next(o for o in kernel.offers("gpu_hour", "h100_sxm") if o.gpus_per_unit == 1)
    assert (kernel.candidate(single).node_gpus, kernel.candidate(single).per_machine) == (1, 8)
    # a per-GPU row that says nothing of its unit would be a whole server's node: state gpus_per_unit
    unstated = dataclasses.replace(single, row=dataclasses.replace(single.row, gpus_per_unit=None))
    assert kernel.candidate(unstated).node_gpus == 8


def test_it_is_priced_beside_the_built_ins_without_a_server(kb: Knowledge, market: Any, client: Client) -> None:
    """``app.sdk.testing`` prices the option and a built-in as the service does."""
    found = assess(kb, PROFILE, market, rented)
    r = client.post("/v1/price-comparisons", json=PROFILE)
    items = {i["option"]: i for i in r.json()["items"]}
    for option in (KEY, "rented_gpu_instances"):
        assert round(found[option].cost.total.expected, 2) == items[option]["total_cost"]["expected"]


# ---- refused at start, refused seeds -----------------------------------------------------------


def test_a_release_written_for_another_sdk_is_refused_at_start(
    market_package: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "gpu_marketplace_next.py").write_text(
        "import dataclasses\n\nfrom gpu_marketplace import GpuMarketplace\n\n\n"
        "class Next(GpuMarketplace):\n"
        '    sdk = ">=5"\n'
        '    spec = dataclasses.replace(GpuMarketplace.spec, key="gpu_marketplace_next")\n\n\n'
        "plugin = Next()\n",
        encoding="utf-8",
    )
    install(site, "gpu-marketplace-next", "gpu_marketplace_next", "gpu_marketplace_next")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    try:
        with pytest.raises(PluginError) as refused:
            create_option_host()
    finally:
        sys.modules.pop("gpu_marketplace_next", None)
    assert str(refused.value) == (
        f"plugin gpu_marketplace_next is written for SDK >=5; this service has SDK {__version__}: "
        "install a release of the plugin for it"
    )


def test_seeds_lacking_an_assumption_it_requires_are_refused(
    market_package: None, market_seeds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``seeds check`` loads the installed plugins and refuses seeds without an assumption one requires."""
    seeds = tmp_path / "seeds"
    shutil.copytree(market_seeds, seeds)
    text = SEED_FILE.read_text(encoding="utf-8")
    row = text.index("  - {option: gpu_marketplace, key: interruptions_per_gpu_year")
    (seeds / SEED_FILE.name).write_text(text[:row], encoding="utf-8")
    assert main(["seeds", "check", str(seeds)]) == 2
    said = capsys.readouterr().err
    assert f"the plugin of option {KEY} requires the assumption interruptions_per_gpu_year" in said
    assert "not valid, 1 problem;" in said  # the one row taken out: the rest is complete
