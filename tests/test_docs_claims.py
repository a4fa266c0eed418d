"""What the README and the operations guide state as counts, bounds, scopes and answers is what the
service does: each test reads the sentence from the document and compares it with the seeded knowledge
base, the message catalogs, the routes' declared scopes, the request models' limits or the service's
own answer — so a change that moves one fails here until the document says it (the failure names the
figure to write).

The first-run time and size in the README are one day's measurement, dated there; no test can check them.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Databases, make_client
from litestar.routes import HTTPRoute
from litestar.testing import TestClient
from packaging.requirements import Requirement

from app.asgi import create_app
from app.core.text import flat_messages
from app.core.vocab import SCOPES
from app.domain.decisions.schemas import MAX_BATCH_PROFILES, MAX_FULL_PROFILES
from app.domain.insights.schemas import MAX_DRAWS
from app.domain.shared.schemas import MAX_GPUS, MAX_HORIZON_YEARS, MAX_START_DAYS, MAX_TEAM_SIZE
from app.settings import PROJECT_ROOT, Settings

README = PROJECT_ROOT / "README.md"
OPERATIONS = PROJECT_ROOT / "docs" / "operations.md"
Client = TestClient  # type: ignore[type-arg]


def _text(document: Path) -> str:
    return document.read_text(encoding="utf-8")


def claim(pattern: str, document: Path = README) -> re.Match[str]:
    """The sentence of ``document`` that states a figure (``pattern``, whitespace matching any line
    break); the test fails saying so when the document no longer has it."""
    found = re.search(pattern.replace(" ", r"\s+"), _text(document), re.S)
    assert found, f"{document.name} no longer states {pattern!r}: update the sentence or this test"
    return found


def number(text: str) -> int:
    return int(text.replace(",", ""))


@pytest.fixture(scope="module")
def client(databases: Databases) -> Iterator[Client]:
    """An app on the reference seeds, as ``make run`` serves them."""
    with make_client(databases.seeded("sqlite")) as c:
        yield c


def total(client: Client, path: str) -> int:
    r = client.get(path, params={"limit": 1})
    assert r.status_code == 200, r.text
    return int(r.json()["total"])


# ---- counts ------------------------------------------------------------------------------------------


def test_the_knowledge_base_counts_are_what_the_service_serves(client: Client) -> None:
    """ "9 GPU models, 20 providers (…), 479 dated price rows and 32 exchange rates", and the
    rows a first seed load adds (the CLI example's "888 added"): as the seeded service lists them."""
    found = claim(r"(\d+) GPU models, (\d+) providers \([^)]*\), ([\d,]+) dated price rows and (\d+) exchange rates")
    stated = dict(zip(("gpus", "providers", "prices", "exchange-rates"), map(number, found.groups()), strict=True))
    served = {name: total(client, f"/v1/{name}") for name in stated}
    assert stated == served, f"README states {stated}; the service serves {served}"
    added = number(claim(r"knowledge version # kv1-… \S+ \S+ UTC seed load ([\d,]+) added").group(1))
    version = client.get("/v1/knowledge-version").json()
    assert added == version["summary"]["add"], f"README: {added} added; a seed load adds {version['summary']['add']}"


def _codes(path: Path) -> set[str]:
    return set(flat_messages(tomllib.loads(path.read_text(encoding="utf-8"))))


def test_the_message_catalog_counts_are_the_catalogs() -> None:
    """ "N codes each for the answers … and M for the explorer page" (the service's catalogs, every
    language alike) and "P codes in each language" (the built-in plugins' catalogs)."""
    found = claim(r"\(([\d,]+) codes each for the answers — [^—]+ — and ([\d,]+) for the explorer page\)")
    answers, page = number(found.group(1)), number(found.group(2))
    plugins = number(claim(r"<option>\.<lang>\.toml` \(([\d,]+) codes in each language").group(1))
    locales = PROJECT_ROOT / "app" / "i18n" / "locales"
    for lang in ("en", "zh"):
        codes = _codes(locales / f"{lang}.toml")
        explorer = {c for c in codes if c.startswith("explorer.")}
        counted = (len(codes - explorer), len(explorer))
        assert counted == (answers, page), f"README: {answers} and {page} codes; {lang}.toml has {counted}"
        ours = sum(len(_codes(f)) for f in (PROJECT_ROOT / "plugins" / "locales").glob(f"*.{lang}.toml"))
        assert ours == plugins, f"README: {plugins} plugin codes; the built-ins ship {ours} in {lang}"


# ---- scopes and routes ---------------------------------------------------------------------------------

#: a backticked route in a table cell: "`GET /v1/gpus`" names its method, "`/v1/servers`" takes the last one
ROUTE = re.compile(r"`(?:(GET|POST|PUT|PATCH|DELETE) )?(/[^`\s]*)`")


def _path(path: str) -> str:
    """A route's path without its parameters' names and types: ``/v1/gpus/{key:str}`` → ``/v1/gpus/{}``."""
    return re.sub(r"\{[^}]*\}", "{}", path)


def _routes(cell: str) -> set[str]:
    found, method = set(), "GET"
    for named, path in ROUTE.findall(cell):
        method = named or method
        found.add(f"{method} {_path(path)}")
    return found


def _table(text: str, header: str) -> list[list[str]]:
    """The rows (cells) of the Markdown table whose header row is ``header``."""
    start = text.index(header)
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


def served_routes() -> dict[str, str | None]:
    """Every route the app serves (``METHOD /path``) with the scope its handler declares (``opt["scope"]``)."""
    app = create_app(Settings(database_url="sqlite:///:memory:"))
    found: dict[str, str | None] = {}
    for route in app.routes:
        assert isinstance(route, HTTPRoute), route
        for handler in route.route_handlers:
            for method in handler.http_methods - {"OPTIONS", "HEAD"}:
                found[f"{method} {_path(route.path)}"] = handler.opt.get("scope")
    return found


def test_the_scopes_table_is_what_the_routes_enforce() -> None:
    """docs/operations.md's table of scopes lists, for each scope, exactly the routes that declare it
    (``admin`` holds every scope besides: its row names what only it may call); the README names the
    same scopes."""
    rows = {row[0].strip("`"): _routes(row[1]) for row in _table(_text(OPERATIONS), "| scope | allows |")}
    declared: dict[str, set[str]] = {}
    for route, scope in served_routes().items():
        if scope is not None:
            declared.setdefault(scope, set()).add(route)
    assert set(rows) == set(SCOPES) == set(declared) | {"admin"}, (set(rows), set(SCOPES))
    for scope, routes in rows.items():
        assert routes == declared.get(scope, set()), (
            f"docs/operations.md, scope {scope}: missing {sorted(declared.get(scope, set()) - routes)}, "
            f"not declared {sorted(routes - declared.get(scope, set()))}"
        )
    listed = claim(r"needs an `X-API-Key` with the route's scope \(([^)]*)\)").group(1)
    assert re.findall(r"`([a-z:]+)`", listed) == list(SCOPES), listed


def test_every_route_is_in_the_readme_api_table() -> None:
    """The README's API table names every route the service answers under ``/v1``, and its metrics,
    explorer, documentation and health routes."""
    text = _text(README)
    table = text[text.index("## API v1") :]
    documented = set().union(*(_routes(row[0]) for row in _table(table, "| method and path | what |")))
    wanted = {
        r
        for r in served_routes()
        if r.split(" ")[1].startswith(("/v1/", "/health/", "/metrics")) or r in ("GET /explorer", "GET /docs")
    }
    assert wanted - documented == set(), sorted(wanted - documented)
    assert documented - set(served_routes()) == set(), sorted(documented - set(served_routes()))


def test_the_stated_bounds_are_the_enforced_ones() -> None:
    """ "Bounds: `gpus` 1–1,000,000, `horizon_years` up to 10, …, 4 MiB per body": the request models' and
    the settings' limits."""
    found = claim(
        r"Bounds: `gpus` 1–([\d,]+), `horizon_years` up to ([\d,]+), `team_size` up to ([\d,]+), "
        r"`start_within_days` up to ([\d,]+), ([\d,]+) profiles per evaluation batch \(([\d,]+) with "
        r'`detail: "full"`[^)]*\), ([\d,]+) uncertainty `draws`, (\d+) MiB per body'
    )
    stated = [number(g) for g in found.groups()]
    limits = [
        MAX_GPUS,
        MAX_HORIZON_YEARS,
        MAX_TEAM_SIZE,
        MAX_START_DAYS,
        MAX_BATCH_PROFILES,
        MAX_FULL_PROFILES,
        MAX_DRAWS,
        Settings().max_body_bytes // 2**20,
    ]
    assert stated == limits


# ---- the answers the README shows ------------------------------------------------------------------------


def _body_after(heading: str) -> dict[str, Any]:
    """The JSON body of the first runnable block after ``heading`` (``-d '{…}'``)."""
    text = _text(README)
    block = text[text.index(heading) :].split("```sh runnable\n", 1)[1].split("```", 1)[0]
    found = re.search(r"-d '(\{.*?\})'", block, re.S)
    assert found, block
    return json.loads(found.group(1))  # type: ignore[no-any-return]


def _figure(value: float, decimals: int) -> str:
    return f"{value:.{decimals}f}"


def test_the_capacity_plan_figures_are_the_services(client: Client) -> None:
    """ "A capacity plan": the recommended mix's and the best single option's cost per useful GPU-hour,
    the saving in effective NPV and the sizing reason's thresholds, as the README's request is answered."""
    r = client.post("/v1/capacity-plans", json=_body_after("### A capacity plan"))
    assert r.status_code == 200, r.text
    plan = r.json()
    found = claim(
        r"recommends the `(\w+)`.*? — (\d+\.\d+) CNY per useful GPU-hour against (\d+\.\d+) for the best single "
        r"option .*?, (\d+\.\d+) % less in effective NPV"
    )
    recommended, mix, single, saving = found.groups()
    portfolios = {p["key"]: p for p in plan["portfolios"]}
    best = portfolios[plan["saving_vs_best_single"]["against"]]
    assert plan["recommended"] == recommended
    assert _figure(portfolios[recommended]["cost_per_useful_gpu_hour"]["expected"], 2) == mix
    assert _figure(best["cost_per_useful_gpu_hour"]["expected"], 2) == single
    assert _figure(plan["saving_vs_best_single"]["share"] * 100, 1) == saving
    pays, keeps = claim(r"pays only at (\d+) % utilization or more .*? would keep it at (\d+) %").groups()
    reasons = " ".join(portfolios[recommended]["reasons"])
    assert f"{pays}%" in reasons and f"{keeps}%" in reasons, reasons


def test_the_demand_over_time_figures_are_the_services(client: Client) -> None:
    """ "A recommendation on a demand over time": the ranking's first option and each option's cost per
    useful and per effective GPU-hour, as the README's request is answered."""
    r = client.post("/v1/recommendations", json=_body_after("### A recommendation on a demand over time"))
    assert r.status_code == 201, r.text
    ranking = {e["option"]: e for e in r.json()["ranking"]}
    assert r.json()["ranking"][0]["option"] == "self_built_cluster" and claim(r"the own cluster ranks first")
    stated = {
        "self_built_cluster": claim(r"(\d+\.\d+) CNY per useful GPU-hour \((\d+\.\d+) per effective\)").groups(),
        "rented_gpu_instances": claim(r"renting is a yearly reservation each year, (\d+\.\d+) \((\d+\.\d+),").groups(),
        "ai_compute_platform": claim(r"the platform (\d+\.\d+) \((\d+\.\d+)\) billed as used").groups(),
    }
    for option, (useful, effective) in stated.items():
        cost = ranking[option]["cost"]
        answered = (
            _figure(cost["cost_per_useful_gpu_hour"]["expected"], 2),
            _figure(cost["cost_per_effective_gpu_hour"]["expected"], 2),
        )
        assert answered == (useful, effective), (option, answered)


# ---- the examples need only `make run` ------------------------------------------------------------------


def _dev_only_scripts() -> dict[str, Requirement]:
    """The commands the development extras install and serving does not need: script → its requirement."""
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    serving = {Requirement(r).name for r in project["dependencies"]}
    found = {}
    for line in project["optional-dependencies"]["dev"]:
        requirement = Requirement(line)
        if requirement.name in serving:
            continue
        try:
            distribution = importlib.metadata.distribution(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for entry in distribution.entry_points:
            if entry.group == "console_scripts":
                found[entry.name] = requirement
    return found


def test_the_readme_examples_install_what_make_run_does_not() -> None:
    """A README example that runs a development tool (``openapi-python-client``) installs it first, with
    the version the development extras pin: the examples run after ``make run`` alone."""
    from test_docs_examples import blocks

    scripts = _dev_only_scripts()
    assert "openapi-python-client" in scripts
    text = "\n".join(block for _, block in blocks(README))
    installs = " ".join(re.findall(r"\.venv/bin/pip install ([^\n#]+)", text))
    used = set(re.findall(r"\.venv/bin/([\w.-]+)", text)) & set(scripts)
    assert used, "the README's examples run no development tool: check the pattern"
    for script in used:
        first_use = text.index(f".venv/bin/{script}")
        assert 0 <= text.find(".venv/bin/pip install") < first_use, f"{script} is run before it is installed"
        assert f"'{scripts[script]}'" in installs, f"the README installs {installs!r}, not '{scripts[script]}'"
