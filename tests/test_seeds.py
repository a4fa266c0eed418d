"""The seed loader (app/kb/seeds/) on SQLite and PostgreSQL: validation, idempotent and atomic
loads, dry runs, append-only prices, price changes over time and retirements."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import re
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import SEEDS, Databases, load_seeds, make_client
from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from app.cli import main
from app.kb import models as m
from app.kb import seeds
from app.kb.seeds.loader import Change
from app.settings import Settings

HARDWARE = "10-hardware.yaml"
ARTICLE = "20-article-reference.yaml"
RULES = "30-scoring-and-rules.yaml"
SECTION_TABLES = {section: model.__tablename__ for section, model in seeds.ORM_MODELS.items()}
KB_TABLES = (*SECTION_TABLES.values(), "knowledge_versions")


def _shipped_records() -> dict[str, int]:
    """Records per section, counted straight from the YAML files (not through the loader); a price row that
    lists several regions is one database row per region."""
    counts = dict.fromkeys(seeds.SECTIONS, 0)
    for file in sorted(SEEDS.glob("*.yaml")):
        for section, items in (yaml.safe_load(file.read_text(encoding="utf-8")) or {}).items():
            counts[section] += sum(len(item.get("regions") or [None]) for item in items)
    return counts


SHIPPED = _shipped_records()
TOTAL = sum(SHIPPED.values())


# --- helpers -----------------------------------------------------------------------------------


@pytest.fixture
def seeded_copy(databases: Databases, backend: str) -> str:
    """A fresh database of the test's own holding the shipped seeds, as ``load_seeds`` leaves an empty one
    (a copy of the seeded template): for tests whose subject is the next load, not the first."""
    return databases.seeded(backend)


def copy_seeds(tmp_path: Path) -> Path:
    target = tmp_path / "seeds"
    shutil.copytree(SEEDS, target)
    return target


def read_yaml(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def write_yaml(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8")


def find(records: list[dict[str, Any]], **match: Any) -> dict[str, Any]:
    (found,) = [r for r in records if all(r.get(k) == v for k, v in match.items())]
    return found


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _with_session(url: str, fn: Any, *, commit: bool = True) -> Any:
    engine = create_async_engine(Settings(database_url=url).async_database_url)
    try:
        async with async_sessionmaker(engine, expire_on_commit=False)() as session:
            async with session.begin():
                result = await fn(session)
                if not commit:
                    await session.rollback()
            return result
    finally:
        await engine.dispose()


def dump(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every knowledge-base table, in a stable order: 'the database as it was'."""

    async def read(session: Any) -> dict[str, list[tuple[Any, ...]]]:
        out = {}
        for table in KB_TABLES:
            rows = (await session.execute(text(f"SELECT * FROM {table}"))).all()
            out[table] = sorted((tuple(str(v) for v in row) for row in rows), key=repr)
        return out

    return run(_with_session(url, read))


def counts(url: str) -> dict[str, int]:
    return {table: len(rows) for table, rows in dump(url).items()}


def versions(url: str) -> list[m.KnowledgeVersion]:
    async def read(session: Any) -> list[m.KnowledgeVersion]:
        return list((await session.scalars(select(m.KnowledgeVersion).order_by(m.KnowledgeVersion.id))).all())

    return run(_with_session(url, read))


# --- the shipped seeds -------------------------------------------------------------------------


def test_the_shipped_seeds_validate() -> None:
    seed_set = seeds.read_seeds(SEEDS)
    assert {s: len(seed_set.rows(s)) for s in seed_set.records} == SHIPPED  # a price of n regions: n rows
    assert SHIPPED["gpu_models"] >= 8 and SHIPPED["prices"] >= 6 and SHIPPED["rules"] >= 1
    # the hash is of the content, not of the reading
    assert seed_set.content_hash() == seeds.read_seeds(SEEDS).content_hash()
    assert len(seed_set.content_hash()) == 64
    # the article's reference prices are there as the loader reads them
    hour = find([r.model_dump() for r in seed_set.records["prices"]], item="instance_hour", provider="cloud")
    assert (hour["low"], hour["high"], hour["currency"], hour["unit"]) == (
        Decimal("100"),
        Decimal("100"),
        "CNY",
        "per_server_hour",
    )


def test_a_dry_run_writes_nothing_a_load_creates_one_version_and_a_reload_changes_nothing(empty_db: str) -> None:
    # --dry-run: reports the adds, writes nothing
    before = dump(empty_db)
    # even when the caller commits, a dry run has nothing to commit
    plan = run(_with_session(empty_db, lambda s: seeds.apply(s, seeds.read_seeds(SEEDS), dry_run=True)))

    assert plan.summary() == {"add": TOTAL, "change": 0, "retire": 0}
    assert {c.kind for c in plan.changes} == {"add"}
    assert ("gpu_models", ("h100_sxm",)) in {(c.section, c.key) for c in plan.changes}
    assert plan.version is None
    assert dump(empty_db) == before
    assert all(not rows for rows in before.values())
    assert any(line.startswith("+ gpu_models h100_sxm") for line in seeds.describe(plan.changes))

    # the load: everything added, exactly one knowledge version
    plan = load_seeds(empty_db, note="first load")

    assert plan.summary() == {"add": TOTAL, "change": 0, "retire": 0}
    content_hash = seeds.read_seeds(SEEDS).content_hash()
    assert plan.content_hash == content_hash
    (version,) = versions(empty_db)
    assert plan.version == version.label == f"kv{version.id}-{content_hash[:12]}"
    assert version.content_hash == content_hash
    assert version.note == "first load"
    assert version.summary == {"add": TOTAL, "change": 0, "retire": 0}
    assert counts(empty_db) == {**{SECTION_TABLES[s]: n for s, n in SHIPPED.items()}, "knowledge_versions": 1}

    # loading the same seeds again changes nothing and creates no version
    before = dump(empty_db)
    again = load_seeds(empty_db, note="second load")

    assert again.empty
    assert again.changes == []
    assert again.version is None
    assert dump(empty_db) == before
    assert len(versions(empty_db)) == 1


# --- bad seed files ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("file", "section", "match", "field", "value", "record"),
    [
        (ARTICLE, "prices", {"item": "instance_hour", "provider": "cloud"}, "currency", "GBP", "instance_hour"),
        (ARTICLE, "prices", {"item": "ops_team"}, "expected", 600000, "ops_team"),
        (ARTICLE, "prices", {"item": "server_hardware"}, "unit", "per_fortnight", "server_hardware"),
        (ARTICLE, "assumptions", {"key": "depreciation_years"}, "unit", "decades", "depreciation_years"),
        (HARDWARE, "gpu_models", {"key": "h100_sxm"}, "bf16_dense_tflops", -1, "h100_sxm"),
        (RULES, "rules", {"key": "self_built_large_stable_demand"}, "points", None, "self_built_large_stable_demand"),
        (
            ARTICLE,
            "prices",
            {"item": "instance_hour", "provider": "cloud"},
            "retrieved_on",
            "2999-01-01",
            "instance_hour",
        ),
    ],
    ids=[
        "currency",
        "expected-out-of-range",
        "unit",
        "assumption-unit",
        "negative-tflops",
        "bonus-without-points",
        "retrieved-in-the-future",
    ],
)
def test_a_broken_field_is_named_with_its_file_and_record(
    tmp_path: Path, file: str, section: str, match: dict[str, Any], field: str, value: Any, record: str
) -> None:
    path = copy_seeds(tmp_path)
    doc = read_yaml(path / file)
    find(doc[section], **match)[field] = value
    write_yaml(path / file, doc)

    with pytest.raises(seeds.SeedError) as caught:
        seeds.read_seeds(path)

    message = str(caught.value)
    assert str(path / file) in message
    assert section in message
    assert record in message
    assert f"field '{field}'" in message


def test_no_shipped_figure_was_retrieved_in_the_future() -> None:
    """The loader refuses a future ``retrieved_on``; the shipped seeds have none (the check above, today)."""
    records = seeds.read_seeds(SEEDS).records
    days = [r.retrieved_on for section in ("prices", "exchange_rates") for r in records[section] if r.retrieved_on]
    assert days and max(days) <= dt.date.today() + dt.timedelta(days=1)


def test_a_broken_file_leaves_the_database_exactly_as_it_was(seeded_copy: str, tmp_path: Path) -> None:
    before = dump(seeded_copy)
    path = copy_seeds(tmp_path)
    doc = read_yaml(path / HARDWARE)
    doc["gpu_models"].append({**doc["gpu_models"][0], "key": "gpu_x"})  # a good change in one file…
    write_yaml(path / HARDWARE, doc)
    doc = read_yaml(path / ARTICLE)
    find(doc["prices"], item="instance_hour", provider="cloud")["currency"] = "GBP"  # …and a bad one in another
    write_yaml(path / ARTICLE, doc)

    with pytest.raises(seeds.SeedError, match=r"20-article-reference\.yaml: prices .*instance_hour.*'currency'"):
        load_seeds(seeded_copy, path)
    assert dump(seeded_copy) == before


def test_changing_or_dropping_a_loaded_price_is_refused_and_nothing_is_written(
    seeded_copy: str, tmp_path: Path
) -> None:
    before = dump(seeded_copy)
    path = copy_seeds(tmp_path)
    doc = read_yaml(path / HARDWARE)
    find(doc["gpu_models"], key="h20")["notes"] = "an allowed edit, planned before the refused one"
    write_yaml(path / HARDWARE, doc)
    doc = read_yaml(path / ARTICLE)
    row = find(doc["prices"], item="instance_hour", provider="cloud")
    row["low"] = row["high"] = 120
    write_yaml(path / ARTICLE, doc)
    seeds.read_seeds(path)  # the files themselves are valid

    with pytest.raises(seeds.SeedError) as caught:
        load_seeds(seeded_copy, path)

    message = str(caught.value)
    assert str(path / ARTICLE) in message
    assert "rented_gpu_instances/cloud/instance_hour/article_8gpu/*/on_demand/CN/CNY/2025-01-01" in message
    assert "field 'high'" in message
    assert "append-only" in message
    assert "(line " in message and "100 in the database, 120 in the file" in message
    assert dump(seeded_copy) == before

    # dropping a loaded price from the files is refused too: close it with valid_to instead
    path = copy_seeds(tmp_path / "dropped")
    doc = read_yaml(path / ARTICLE)
    doc["prices"] = [p for p in doc["prices"] if p["item"] != "reservation_discount"]
    write_yaml(path / ARTICLE, doc)

    with pytest.raises(seeds.SeedError, match=r"reservation_discount.*in no seed file.*append-only"):
        load_seeds(seeded_copy, path)
    assert dump(seeded_copy) == before


def test_a_failure_inside_the_database_rolls_the_whole_load_back(empty_db: str, tmp_path: Path) -> None:
    """Valid files whose rows are flushed before the database refuses the last write: nothing stays."""
    load_seeds(empty_db, note="first")
    path = copy_seeds(tmp_path)
    doc = read_yaml(path / HARDWARE)
    doc["gpu_models"].append({**doc["gpu_models"][0], "key": "gpu_x", "name": "B200"})
    find(doc["gpu_models"], key="h20")["notes"] = "changed"
    doc["gpu_models"] = [g for g in doc["gpu_models"] if g["key"] != "rtx_4090"]
    write_yaml(path / HARDWARE, doc)
    # the database will refuse the knowledge version, the very last row a load writes
    run(
        _with_session(
            empty_db, lambda s: s.execute(text("CREATE UNIQUE INDEX ux_test_note ON knowledge_versions (note)"))
        )
    )
    before = dump(empty_db)

    with pytest.raises(IntegrityError, match=r"(?i)unique|duplicate"):
        load_seeds(empty_db, path, note="first")

    assert dump(empty_db) == before
    assert counts(empty_db)["gpu_models"] == SHIPPED["gpu_models"]


@pytest.mark.parametrize(
    "closing",
    [None, dt.date(2026, 3, 1)],
    ids=["open-ended", "closed-after-the-next-starts"],
)
def test_overlapping_validity_for_one_price_item_is_refused(tmp_path: Path, closing: dt.date | None) -> None:
    path = copy_seeds(tmp_path)
    doc = read_yaml(path / ARTICLE)
    old = find(doc["prices"], item="instance_hour", provider="cloud")
    old["valid_to"] = closing
    doc["prices"].append({**old, "valid_from": dt.date(2026, 1, 1), "valid_to": None, "low": 80, "high": 80})
    write_yaml(path / ARTICLE, doc)

    with pytest.raises(seeds.SeedError) as caught:
        seeds.read_seeds(path)

    message = str(caught.value)
    assert "rented_gpu_instances/cloud/instance_hour/article_8gpu/*/on_demand/CN/CNY" in message
    assert "field 'valid_to'" in message
    assert "overlaps" in message
    assert str(path / ARTICLE) in message


def test_the_same_price_item_twice_is_refused(tmp_path: Path) -> None:
    path = copy_seeds(tmp_path)
    doc = read_yaml(path / ARTICLE)
    doc["prices"].append(find(doc["prices"], item="instance_hour", provider="cloud"))
    write_yaml(path / ARTICLE, doc)

    with pytest.raises(seeds.SeedError, match="duplicates the record"):
        seeds.read_seeds(path)


# --- changes over time -------------------------------------------------------------------------


def _comparison(client: Any, as_of: str) -> dict[str, Any]:
    r = client.post(
        "/v1/price-comparisons",
        json={"gpus": 8, "utilization": 0.5, "horizon_years": 1, "rental_plan": "on_demand", "as_of": as_of},
    )
    assert r.status_code == 200, r.text
    return {item["option"]: item for item in r.json()["items"]}


def _instance_hour_prices(client: Any, as_of: str) -> list[dict[str, Any]]:
    r = client.get(
        "/v1/prices",
        params={"as_of": as_of, "item": "instance_hour", "option": "rented_gpu_instances", "provider": "cloud"},
    )
    assert r.status_code == 200, r.text
    return r.json()["items"]


def test_a_price_change_made_the_right_way_keeps_the_old_price_for_old_dates(empty_db: str, tmp_path: Path) -> None:
    first = load_seeds(empty_db)
    path = copy_seeds(tmp_path)
    doc = read_yaml(path / ARTICLE)
    old = find(doc["prices"], item="instance_hour", provider="cloud")
    old["valid_to"] = dt.date(2026, 1, 1)  # close the old row…
    write_yaml(path / ARTICLE, doc)
    new = {**old, "valid_from": dt.date(2026, 1, 1), "valid_to": None, "low": 80, "high": 80, "source": "price list"}
    write_yaml(path / "25-prices-2026.yaml", {"prices": [new]})  # …and add the new one in a file of its own

    second = load_seeds(empty_db, path, note="2026 prices")

    assert second.summary() == {"add": 1, "change": 1, "retire": 0}
    (change,) = [c for c in second.changes if c.kind == "change"]
    assert change.fields == {"valid_to": (None, dt.date(2026, 1, 1))}
    assert second.version is not None and second.version != first.version
    assert [v.label for v in versions(empty_db)] == [first.version, second.version]

    with make_client(empty_db) as client:
        assert client.get("/v1/knowledge-version").json()["version"] == second.version
        (before,) = _instance_hour_prices(client, "2025-06-01")
        (after,) = _instance_hour_prices(client, "2026-06-01")
        assert (before["low"], before["high"], before["valid_to"]) == (100, 100, "2026-01-01")
        assert (after["low"], after["high"], after["valid_from"]) == (80, 80, "2026-01-01")
        assert len(client.get("/v1/prices", params={"item": "instance_hour", "provider": "cloud"}).json()["items"]) == 2

        old_cost = _comparison(client, "2025-06-01")["rented_gpu_instances"]["annual_cost"]
        new_cost = _comparison(client, "2026-06-01")["rented_gpu_instances"]["annual_cost"]
        # one 8-GPU server held all year: 8,760 h × 100 CNY, then × 80 CNY
        assert old_cost == {"low": 876_000, "expected": 876_000, "high": 876_000}
        assert new_cost == {"low": 700_800, "expected": 700_800, "high": 700_800}


def test_retiring_a_gpu_model_is_reported_and_removes_it(seeded_copy: str, tmp_path: Path) -> None:
    path = copy_seeds(tmp_path)
    doc = read_yaml(path / HARDWARE)
    doc["gpu_models"] = [g for g in doc["gpu_models"] if g["key"] != "rtx_4090"]
    write_yaml(path / HARDWARE, doc)

    dry = run(_with_session(seeded_copy, lambda s: seeds.apply(s, seeds.read_seeds(path), dry_run=True)))
    assert [(c.kind, c.section, c.key) for c in dry.changes] == [("retire", "gpu_models", ("rtx_4090",))]
    assert counts(seeded_copy)["gpu_models"] == SHIPPED["gpu_models"]

    plan = load_seeds(seeded_copy, path, note="retire the 4090")

    assert [(c.kind, c.section, c.key) for c in plan.changes] == [("retire", "gpu_models", ("rtx_4090",))]
    assert plan.summary() == {"add": 0, "change": 0, "retire": 1}
    assert list(seeds.describe(plan.changes)) == ["- gpu_models rtx_4090"]
    assert len(versions(seeded_copy)) == 2
    gpus = {row[0] for row in dump(seeded_copy)["gpu_models"]}
    assert "rtx_4090" not in gpus
    assert len(gpus) == SHIPPED["gpu_models"] - 1
    with make_client(seeded_copy) as client:
        assert client.get("/v1/gpus/rtx_4090").status_code == 404
        assert client.get("/v1/gpus/h100_sxm").status_code == 200


def test_a_planned_change_shows_values_as_the_seed_files_spell_them() -> None:
    change = Change(
        "change",
        "prices",
        ("rented_gpu_instances", "aws"),
        {"valid_to": (None, dt.date(2027, 1, 1)), "expected": (Decimal("1.50"), Decimal("1.25")), "notes": ("a", "b")},
    )
    assert change.describe() == (
        "~ prices rented_gpu_instances/aws (valid_to: None → 2027-01-01; expected: 1.50 → 1.25; notes: 'a' → 'b')"
    )


# --- what a person reads when a seed is refused (through the command line) ------------------------------

#: a valid price row of an offer the shipped seeds do not have; each fault below changes one field
GOOD_ROW: dict[str, Any] = {
    "option": "rented_gpu_instances",
    "provider": "aws",
    "item": "instance_hour",
    "subject": "test.good",
    "gpu_model": "h100_sxm",
    "plan": "on_demand",
    "unit": "per_server_hour",
    "gpus_per_unit": 8,
    "low": 10,
    "high": 10,
    "currency": "USD",
    "region": "us-east-1",
    "valid_from": dt.date(2026, 1, 1),
    "residency": "public_multi_tenant",
    "interconnect": "efa",
    "source": "test",
    "source_quality": "verified",
}
#: subject → (field changed, value) — the value as the file spells it; dates that are no day unquoted
RECORD_FAULTS: dict[str, tuple[str, Any]] = {
    "test.date": ("valid_from", "2026-13-05"),
    "test.day": ("retrieved_on", "2026-02-30"),
    "test.currency": ("currency", "GBP"),
    "test.interconnect": ("interconnect", "nvlink"),
    "test.plan": ("plan", "On-Demand"),
    "test.unknown-field": ("colour", "red"),
    "test.missing-field": ("source", None),
}
#: what a regular expression looks like in a message
REGEX = re.compile(r"\^|\$'|\[a-z|\{\d|\\d")


def _record_line(text: str, needle: str) -> int:
    """The line (1-based) of the record of ``text`` holding ``needle``."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if needle in line)
    while not lines[at].startswith("- "):
        at -= 1
    return at + 1


def _faulty_rows() -> str:
    rows = [GOOD_ROW]
    for subject, (name, value) in RECORD_FAULTS.items():
        row = {**GOOD_ROW, "subject": subject, name: value}
        rows.append({k: v for k, v in row.items() if v is not None})
    rows.append(dict(GOOD_ROW))  # the same row twice (a copy: no YAML alias)
    text = yaml.safe_dump({"prices": rows}, sort_keys=False, allow_unicode=True)
    return text.replace("'2026-13-05'", "2026-13-05").replace("'2026-02-30'", "2026-02-30")


def _error_line(stderr: str, *needles: str) -> str:
    (found,) = [line for line in stderr.splitlines() if all(n in line for n in needles)]
    return found


def test_every_seed_error_names_its_file_line_and_field_without_a_traceback(tmp_path: Path) -> None:
    """``seeds check`` of files with a date that is no day (which PyYAML raises on), an unknown currency,
    interconnect and field, a malformed plan, a missing field, a duplicate, a file that is no YAML, an
    unknown section and a section that is no list: every problem on a line of its own, with its file, the
    line and the field, in words; the console script's own output, no traceback."""
    path = copy_seeds(tmp_path)
    records = path / "90-faults.yaml"
    text = _faulty_rows()
    records.write_text(text, encoding="utf-8")
    (path / "91-not-yaml.yaml").write_text("prices:\n- option: x\n  low: [1, 2\n  high: 3\n", encoding="utf-8")
    (path / "92-unknown-section.yaml").write_text("# a comment\npricez:\n- low: 1\n", encoding="utf-8")
    (path / "93-no-list.yaml").write_text("prices:\n  low: 1\n", encoding="utf-8")
    root = Path(__file__).resolve().parent.parent

    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "seeds", "check", str(path)],
        cwd=root,
        env={**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'never-created.db'}"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert "Traceback" not in done.stderr and "nothing was written" not in done.stderr, done.stderr
    errors = done.stderr.splitlines()[:-1]
    assert all(line.startswith(f"error: {path}/") for line in errors), done.stderr
    assert not [line for line in errors if REGEX.search(line)], done.stderr
    for subject, (name, _) in RECORD_FAULTS.items():
        line = _error_line(done.stderr, f"{records}: prices #", subject, f"field '{name}': ")
        assert line.endswith(f"(line {_record_line(text, f'subject: {subject}')})"), line
    date = _error_line(done.stderr, "test.date")
    assert "'2026-13-05' is not a day of the calendar" in date and "e.g. 2026-12-05" in date
    plan = _error_line(done.stderr, "test.plan")
    assert "'On-Demand' is not a plan: " in plan and "e.g. on_demand, spot, reserved_1y" in plan
    assert "'GBP' is not one of 'CNY', 'USD' or 'EUR'" in _error_line(done.stderr, "test.currency")
    unknown = _error_line(done.stderr, "test.unknown-field")
    assert "field 'colour': unknown field; the fields of such a record are low, " in unknown and "option, " in unknown
    twice = _error_line(done.stderr, "duplicates the record of")
    assert twice.startswith(f"error: {records}: prices #{len(RECORD_FAULTS) + 2} (")
    assert f"of {records}, line 2 (the same option, provider, item, subject, gpu_model, plan, region," in twice
    assert twice.endswith(f"(line {len(text[: text.rindex('- option')].splitlines()) + 1})")
    assert _error_line(done.stderr, "91-not-yaml.yaml: not YAML: ").endswith("(line 4)")
    section = _error_line(done.stderr, "92-unknown-section.yaml: pricez: unknown section; the sections are providers")
    assert section.endswith("(line 2)")
    assert _error_line(done.stderr, "93-no-list.yaml: prices: a section is a list of records").endswith("(line 1)")
    files = len(list(path.glob("*.yaml")))
    assert done.stderr.splitlines()[-1] == (
        f"checked {path}: {files} files: not valid, {len(errors)} problems; the database was not read"
    )


def test_references_between_records_are_refused_with_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'never-created.db'}")
    path = copy_seeds(tmp_path)
    rows = [
        {**GOOD_ROW, "subject": "test.provider", "provider": "nowhere"},
        {**GOOD_ROW, "subject": "test.gpu", "gpu_model": "h900"},
        {**GOOD_ROW, "subject": "test.region", "region": "mars-1"},
        {**GOOD_ROW, "subject": "test.overlap"},
        {**GOOD_ROW, "subject": "test.overlap", "valid_from": dt.date(2026, 6, 1)},
    ]
    file = path / "90-references.yaml"
    text = yaml.safe_dump({"prices": rows}, sort_keys=False)
    file.write_text(text, encoding="utf-8")

    code = main(["seeds", "check", str(path)])
    out, err = capsys.readouterr()

    assert (code, out) == (2, "")
    for subject, name in [("provider", "provider"), ("gpu", "gpu_model"), ("region", "region")]:
        line = _error_line(err, f"{file}: prices rented_gpu_instances/instance_hour/test.{subject}: field '{name}': ")
        assert line.endswith(f"(line {_record_line(text, f'subject: test.{subject}')})"), line
    overlap = _error_line(err, "test.overlap", "field 'valid_to': the period from 2026-01-01 overlaps")
    second = len(text[: text.rindex("- option")].splitlines()) + 1
    assert f"the one from 2026-06-01 at {file}, line {second}: close it with valid_to: 2026-06-01" in overlap
    assert overlap.endswith(f"(line {_record_line(text, 'subject: test.overlap')})"), overlap

    # a plan its option does not sell: checked once the files are valid, with the line too
    file.write_text(yaml.safe_dump({"prices": [{**GOOD_ROW, "plan": "reserved_1yr"}]}, sort_keys=False), "utf-8")
    assert main(["seeds", "check", str(path)]) == 2
    plan = _error_line(capsys.readouterr().err, "field 'plan'")
    assert plan.startswith(f"error: {file}: prices rented_gpu_instances/aws/instance_hour: field 'plan': ")
    assert plan.endswith("(line 2)")


def test_no_pattern_of_a_seed_record_reaches_a_person_as_a_regular_expression() -> None:
    """Every pattern a seed model checks has words (``PATTERN_WORDS``): a refused value is described with
    examples, never shown its regular expression."""
    from app.kb.seeds.problems import PATTERN_WORDS

    patterns = {
        (section, name): meta.pattern
        for section, model in seeds.SEED_MODELS.items()
        for name, info in model.model_fields.items()
        for meta in info.metadata
        if getattr(meta, "pattern", None)
    }
    assert ("prices", "plan") in patterns and ("gpu_models", "key") in patterns
    assert {where: p for where, p in patterns.items() if p not in PATTERN_WORDS} == {}


SOURCE_NOT_PUBLIC = re.compile(
    r"facts(-[0-9-]+)?\.md|price-sources|platform-prices|shared/research|index id|stored (document|memo|file|index)"
    r"|research compilation",
    re.IGNORECASE,
)


def test_seed_sources_name_the_public_document_never_where_a_copy_was_read() -> None:
    """A seed's source names the public document (URL, repository and path, publication and date), never a
    working file beside the project nor the copy it was read in: every line of every seed file is checked,
    sources, notes and comments alike."""
    found = [
        f"{file.name}, line {number}: {match.group(0)}"
        for file in sorted(SEEDS.glob("*.yaml"))
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1)
        for match in [SOURCE_NOT_PUBLIC.search(line)]
        if match
    ]
    assert found == []
