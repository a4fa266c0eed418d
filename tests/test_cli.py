"""The ``compute-advisor`` admin CLI: migrate, seeds check/load, knowledge version, plugins."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import SEEDS, Databases, shipped_seeds
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from app.cli import main
from app.kb.db import migration_head
from app.settings import PROJECT_ROOT, Settings

SEED_SET = shipped_seeds()
RECORDS = sum(len(r) for r in SEED_SET.records.values())
#: the rows a load writes: a price row of several regions is one database row per region
TOTAL = sum(len(SEED_SET.rows(section)) for section in SEED_SET.records)
HASH12 = SEED_SET.content_hash()[:12]


@pytest.fixture
def db_url(databases: Databases, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh, empty SQLite database named by DATABASE_URL, as the CLI reads it."""
    url = databases.new("sqlite")
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.delenv("SEEDS_PATH", raising=False)
    return url


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def scalar(url: str, sql: str) -> object:
    async def run() -> object:
        engine = create_async_engine(Settings(database_url=url).async_database_url)
        try:
            async with engine.connect() as conn:
                return (await conn.execute(text(sql))).scalar()
        finally:
            await engine.dispose()

    return asyncio.run(run())


def test_migrate_brings_the_database_to_head(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "migrate")

    assert code == 0
    assert out.startswith("database at head: sqlite")
    assert scalar(db_url, "SELECT version_num FROM alembic_version") == migration_head()
    assert scalar(db_url, "SELECT count(*) FROM gpu_models") == 0


def test_seeds_check_validates_without_a_database(monkeypatch: pytest.MonkeyPatch, capsys, tmp_path: Path) -> None:
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'never-created.db'}")
    code, out, _ = cli(capsys, "seeds", "check")

    assert code == 0
    counts = {s: len(r) for s, r in SEED_SET.records.items()}
    read, checked, valid = out.strip().splitlines()
    listed = ", ".join(f"{n} {section}" for section, n in counts.items())
    assert read == f"checked {SEEDS}: {len(list(SEEDS.glob('*.yaml')))} files, {RECORDS} records ({listed})"
    assert checked.startswith("checked: every field of every record; ")
    assert valid == f"valid; content hash {HASH12}; the database was not read"
    assert not (tmp_path / "never-created.db").exists()


def test_seeds_load_prints_counts_and_version_then_no_changes(db_url: str, capsys) -> None:
    assert cli(capsys, "migrate")[0] == 0

    code, out, _ = cli(capsys, "seeds", "load", "--note", "from the cli")
    assert code == 0
    # one line per load (every change with --verbose or --dry-run)
    assert out.strip() == f"{TOTAL} added, 0 changed, 0 retired; knowledge version kv1-{HASH12}"
    assert scalar(db_url, "SELECT count(*) FROM knowledge_versions") == 1
    assert scalar(db_url, "SELECT note FROM knowledge_versions") == "from the cli"

    code, out, _ = cli(capsys, "seeds", "load")
    assert code == 0
    assert out.strip() == "no changes: the database already holds these seeds; no new knowledge version"
    assert scalar(db_url, "SELECT count(*) FROM knowledge_versions") == 1

    code, out, _ = cli(capsys, "seeds", "load", "--if-empty")
    assert (code, out.strip()) == (0, "knowledge base already loaded; nothing to do")

    code, out, _ = cli(capsys, "knowledge", "version")
    assert code == 0
    assert re.fullmatch(
        rf"kv1-{HASH12}  \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC  from the cli  {TOTAL} added, 0 changed, 0 retired",
        out.strip(),
    )


def test_seeds_load_dry_run_writes_nothing(db_url: str, capsys) -> None:
    cli(capsys, "migrate")

    code, out, _ = cli(capsys, "seeds", "load", "--dry-run")

    assert code == 0
    lines = out.strip().splitlines()
    assert lines[-1] == f"dry run: would apply {TOTAL} added, 0 changed, 0 retired; nothing written"
    assert sum(1 for line in lines if line.startswith("+ ")) == TOTAL
    assert scalar(db_url, "SELECT count(*) FROM knowledge_versions") == 0
    assert scalar(db_url, "SELECT count(*) FROM price_items") == 0
    code, out, _ = cli(capsys, "knowledge", "version")
    assert (code, out.strip()) == (1, "no knowledge version: run `compute-advisor seeds load`")


def test_seeds_load_of_a_broken_file_exits_2_and_writes_nothing(db_url: str, capsys, tmp_path: Path) -> None:
    cli(capsys, "migrate")
    broken = tmp_path / "seeds"
    shutil.copytree(SEEDS, broken)
    file = broken / "10-hardware.yaml"
    doc = yaml.safe_load(file.read_text(encoding="utf-8"))
    next(g for g in doc["gpu_models"] if g["key"] == "h100_sxm")["memory_gb"] = "lots"
    file.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8")

    code, out, err = cli(capsys, "seeds", "load", str(broken))

    assert code == 2
    assert out == ""
    first, last = err.strip().splitlines()
    assert first.startswith(f"error: {file}: gpu_models #2 (h100_sxm): field 'memory_gb': ")
    assert last == "nothing was written"
    assert scalar(db_url, "SELECT count(*) FROM knowledge_versions") == 0
    assert scalar(db_url, "SELECT count(*) FROM gpu_models") == 0

    code, _, err = cli(capsys, "seeds", "check", str(broken))
    assert code == 2
    assert "field 'memory_gb'" in err


def test_a_price_row_on_a_plan_its_option_does_not_sell_is_refused(db_url: str, capsys, tmp_path: Path) -> None:
    # the plans are free-form in the files and the database, and declared by the plugins that sell them
    # (OptionSpec.price_plans): a typo or another option's plan is refused before anything is written
    cli(capsys, "migrate")
    broken = tmp_path / "seeds"
    shutil.copytree(SEEDS, broken)
    file = broken / "41-offers-hyperscalers.yaml"
    doc = yaml.safe_load(file.read_text(encoding="utf-8"))
    row = next(p for p in doc["prices"] if p.get("plan") == "reserved_1y")
    row["plan"] = "reserved_1yr"
    file.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8")

    for command in ("check", "load"):
        code, out, err = cli(capsys, "seeds", command, str(broken))
        assert (code, out) == (2, "")
        assert f"{file}: prices rented_gpu_instances/{row['provider']}/{row['item']}: field 'plan':" in err
        assert "'reserved_1yr' is not a plan option rented_gpu_instances sells (on_demand, spot," in err
    assert scalar(db_url, "SELECT count(*) FROM knowledge_versions") == 0


def test_a_price_row_of_an_option_that_declares_no_billing_is_refused_one_that_says_how_it_bills(
    db_url: str, capsys, tmp_path: Path
) -> None:
    # how a row bills is declared by the plugins whose rows say it (OptionSpec.billings: the platform's);
    # the rented option's plugin declares none
    file_name, said = "41-offers-hyperscalers.yaml", "option rented_gpu_instances does not say how its rows bill"
    cli(capsys, "migrate")
    broken = tmp_path / "seeds"
    shutil.copytree(SEEDS, broken)
    file = broken / file_name
    doc = yaml.safe_load(file.read_text(encoding="utf-8"))
    row = next(p for p in doc["prices"] if p["item"] in ("instance_hour", "gpu_hour"))
    row["billing"] = "held_cluster"
    file.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8")

    for command in ("check", "load"):
        code, out, err = cli(capsys, "seeds", command, str(broken))
        assert (code, out) == (2, "")
        assert f"{file}: prices {row['option']}/{row['provider']}/{row['item']}: field 'billing':" in err
        assert said in err
    assert scalar(db_url, "SELECT count(*) FROM knowledge_versions") == 0


def test_plugins_lists_the_three_built_in_options(capsys) -> None:
    code, out, _ = cli(capsys, "plugins")

    assert code == 0
    *options, version = out.strip().splitlines()
    assert sorted(line.split()[0] for line in options) == [
        "ai_compute_platform",
        "rented_gpu_instances",
        "self_built_cluster",
    ]
    assert all("SDK >=4,<5" in line for line in options)
    assert version == "SDK 4.1.0"


@pytest.mark.slow
def test_the_installed_console_script_runs(db_url: str) -> None:
    exe = PROJECT_ROOT / ".venv" / "bin" / "compute-advisor"
    if not exe.exists():
        pytest.skip(f"{exe} is not installed")
    env = {**os.environ, "DATABASE_URL": db_url}
    done = subprocess.run([str(exe), "migrate"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [str(exe), "seeds", "load", "--if-empty"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.strip().splitlines()[-1] == f"{TOTAL} added, 0 changed, 0 retired; knowledge version kv1-{HASH12}"
    )
    bad = subprocess.run([str(exe), "seeds"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert bad.returncode == 2  # argparse: a sub-command is required
