"""A price refresh keeps what its file does not say (docs/price-books.md, "Importing a catalog or a price
sheet"): a SkyPilot catalog has no interconnect, residency, capacity or lead time, so each new row takes
them from the row it replaces (``app.kb.price_refresh``); an instance of 8 GPUs or more with no row to
take an interconnect from is refused with the rows to complete, and nothing is written."""

from __future__ import annotations

import dataclasses
import datetime as dt
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import SEEDS, shipped_seeds
from seed_snapshot import knowledge_from_seeds

from app.cli import main
from app.core.types import Profile
from app.engine import decision
from app.host.manager import create_option_host
from app.kb import price_import as pi
from app.kb import price_refresh as pr
from app.kb.seeds import PriceSeed

SEED_SET = shipped_seeds()
EXISTING = [p for p in SEED_SET.records["prices"] if isinstance(p, PriceSeed)]
OFFERS = "41-offers-hyperscalers.yaml"
VALID_FROM = "2026-12-10"
HEADER = "InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region,AvailabilityZone"
#: p5 in two regions the seeds price with interconnect efa; the refresh drops their price to 50 USD
REFRESH = (
    f"{HEADER}\np5.48xlarge,H100,8.0,50.0,20.0,us-east-1,use1-az1\np5.48xlarge,H100,8.0,50.0,,us-east-2,use2-az1\n"
)
#: an 8-GPU instance type the seeds have never priced (line 2), and a 1-GPU one (line 3)
NEW = f"{HEADER}\np6-b300.48xlarge,B200,8.0,120.0,,us-east-1,use1-az1\ng7.xlarge,L40S,1.0,1.5,,us-east-1,use1-az1\n"
SHEET = pi.Sheet(
    source="test catalog",
    retrieved_on=dt.date(2026, 12, 2),
    provider="aws",
    valid_from=dt.date(2026, 12, 10),
    option="rented_gpu_instances",
)


@pytest.fixture
def seeds_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "seeds"
    shutil.copytree(SEEDS, copy)
    monkeypatch.setenv("SEEDS_PATH", str(copy))
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'never-created.db'}")
    return copy


def run_import(capsys: pytest.CaptureFixture[str], catalog: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    code = main(
        [
            "prices", "import", "--format", "skypilot", "--provider", "aws", "--valid-from", VALID_FROM,
            "--retrieved-on", "2026-12-02", "--source", "test catalog", "--out", str(out), *extra, str(catalog),
        ]
    )  # fmt: skip
    out_text, err_text = capsys.readouterr()
    return code, out_text, err_text


def written(out: Path) -> dict[tuple[str, str, str], dict[str, Any]]:
    rows = yaml.safe_load(out.read_text(encoding="utf-8"))["prices"]
    return {(r["subject"], r["region"], r["plan"]): r for r in rows}


def close_replaced(seeds_dir: Path, out: Path) -> int:
    """The admin's review step: close each row of seeds/41 the new rows replace."""
    new = [PriceSeed.model_validate(r) for r in yaml.safe_load(out.read_text(encoding="utf-8"))["prices"]]
    file = seeds_dir / OFFERS
    doc = yaml.safe_load(file.read_text(encoding="utf-8"))
    starts = {tuple(getattr(p, k) for k in pr.PERIOD_KEY): p.valid_from for p in new}
    closed = 0
    for row in doc["prices"]:
        key = tuple(row[k] if row[k] is not None else "*" for k in pr.PERIOD_KEY)
        if (start := starts.get(key)) is not None and row["valid_to"] is None and row["valid_from"] < start:
            row["valid_to"], closed = start, closed + 1
    file.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=160), encoding="utf-8")
    return closed


def test_a_catalog_refresh_keeps_the_interconnect_so_p5_still_runs_a_64_gpu_job(
    seeds_dir: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    catalog = tmp_path / "vms.csv"
    catalog.write_text(REFRESH, encoding="utf-8")
    out = seeds_dir / "47-aws-2026-12.yaml"

    code, stdout, stderr = run_import(capsys, catalog, out)

    assert code == 0, stderr
    rows = written(out)
    assert set(rows) == {
        ("p5.48xlarge", "us-east-1", "on_demand"),
        ("p5.48xlarge", "us-east-1", "spot"),
        ("p5.48xlarge", "us-east-2", "on_demand"),
    }
    for row in rows.values():
        assert (row["interconnect"], row["residency"]) == ("efa", "public_multi_tenant"), row
        assert "interconnect efa carried forward from the p5.48xlarge" in row["notes"]
    assert "carried forward from the rows they replace (the file does not say): " in stdout
    assert "interconnect efa on 3 rows" in stdout

    # closed as the import lists them, the seeds hold the new price, and a 64-GPU job still runs on p5
    assert close_replaced(seeds_dir, out) == 3
    assert main(["seeds", "check"]) == 0
    profile = Profile(
        gpus=64, largest_job_gpus=64, utilization=0.6, horizon_years=1, gpu_model="h100_sxm", currency="USD",
        providers=("aws",), regions=("us-east-1",), rental_plan="on_demand", as_of=dt.date(2026, 12, 10),
    )  # fmt: skip
    a = create_option_host().assess("rented_gpu_instances", profile, knowledge_from_seeds(seeds_dir))
    assert not decision.broken(a), [str(r) for r in decision.broken(a)]
    assert a.offer is not None
    assert (a.offer.subject, a.offer.valid_from, a.offer.price.expected) == ("p5.48xlarge", dt.date(2026, 12, 10), 50)


def test_a_new_8_gpu_instance_without_an_interconnect_is_refused_with_the_rows_to_complete(
    seeds_dir: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    catalog = tmp_path / "vms.csv"
    catalog.write_text(NEW, encoding="utf-8")
    out = tmp_path / "47-aws-new.yaml"

    code, stdout, stderr = run_import(capsys, catalog, out)

    assert (code, stdout) == (2, "")
    assert not out.exists()
    lines = stderr.splitlines()
    assert lines[0] == f"error: {catalog}: 1 row to complete before anything is written:"
    assert lines[1].startswith("  line 2: p6-b300.48xlarge us-east-1 on_demand: field 'interconnect': ")
    assert "refused every job across nodes" in lines[1] and "no row of the seeds to take it from" in lines[1]
    assert "g7.xlarge" not in stderr  # a 1-GPU instance runs no job across nodes: no interconnect needed
    assert "e.g. --interconnect p6-b300.48xlarge=efa" in lines[2]
    assert lines[-1] == "nothing was written"

    # stated at import: written as stated, and said so; the 1-GPU instance has none
    code, stdout, stderr = run_import(capsys, catalog, out, "--interconnect", "p6-b300.48xlarge=efa")
    assert code == 0, stderr
    rows = written(out)
    assert rows["p6-b300.48xlarge", "us-east-1", "on_demand"]["interconnect"] == "efa"
    assert "interconnect efa as stated at import." in rows["p6-b300.48xlarge", "us-east-1", "on_demand"]["notes"]
    assert rows["g7.xlarge", "us-east-1", "on_demand"]["interconnect"] is None
    assert "stated at import: line 2: p6-b300.48xlarge us-east-1 on_demand: interconnect efa" in stdout
    assert "no earlier row to carry from (check residency and capacity): " in stdout
    assert "--interconnect p6-b300.48xlarge=efa" in out.read_text(encoding="utf-8").splitlines()[0]

    # "unknown" says the source does not say: null, which a job across nodes cannot use
    code, stdout, _ = run_import(capsys, catalog, out, "--force", "--interconnect", "p6-b300.48xlarge=unknown")
    assert code == 0
    assert written(out)["p6-b300.48xlarge", "us-east-1", "on_demand"]["interconnect"] is None
    assert "p6-b300.48xlarge us-east-1 on_demand: interconnect unknown" in stdout
    code, _, stderr = run_import(capsys, catalog, tmp_path / "other.yaml", "--interconnect", "p6=nvlink")
    assert code == 2 and "'p6=nvlink' is not TYPE=FABRIC with FABRIC one of infiniband, roce, efa" in stderr


def _p5(**changes: Any) -> PriceSeed:
    (row,) = [
        p for p in EXISTING
        if (p.subject, p.region, p.plan, p.valid_to) == ("p5.48xlarge", "us-east-1", "on_demand", None)
    ]  # fmt: skip
    return row.model_copy(update=changes)


def test_every_field_the_file_does_not_state_comes_from_the_row_it_replaces() -> None:
    old = _p5(capacity_gpus=512, lead_time_days_low=Decimal(1), lead_time_days_high=Decimal(3), residency="dedicated")
    text = f"{HEADER}\np5.48xlarge,H100,8.0,50.0,20.0,us-east-1,z1\n"
    imported = pi.from_skypilot(text, SHEET)
    refresh = pr.carry_forward(imported.prices, imported.lines, [old], unstated=imported.unstated)

    rows = {p.plan: p for p in refresh.prices}
    on_demand, spot = rows["on_demand"], rows["spot"]
    assert (on_demand.interconnect, on_demand.residency, on_demand.capacity_gpus) == ("efa", "dedicated", 512)
    assert (on_demand.lead_time_days_low, on_demand.lead_time_days_high) == (Decimal(1), Decimal(3))
    assert (on_demand.low, on_demand.valid_from) == (Decimal(50), dt.date(2026, 12, 10))  # the price is the file's
    # the spot offer has no row of its own: what the instance type decides comes from its other rows; what
    # the offer decides (capacity, lead time) does not
    assert (spot.interconnect, spot.residency, spot.capacity_gpus, spot.lead_time_days_low) == (
        "efa",
        "dedicated",
        None,
        None,
    )
    assert not refresh.incomplete
    assert [(c.row.plan, c.source is old) for c in refresh.carried] == [("on_demand", True), ("spot", True)]

    # --residency states it: the row it replaces no longer decides
    stated = pi.from_skypilot(text, dataclasses.replace(SHEET, residency="public_multi_tenant"))
    again = pr.carry_forward(stated.prices, stated.lines, [old], unstated=stated.unstated)
    assert {p.residency for p in again.prices} == {"public_multi_tenant"}


def test_rows_that_disagree_or_contradict_the_file_are_listed_never_guessed() -> None:
    text = f"{HEADER}\np5.48xlarge,H100,8.0,50.0,,eu-west-3,z1\n"  # a region the seeds do not price p5 in
    imported = pi.from_skypilot(text, SHEET)
    other = _p5(region="us-west-2", interconnect=None)
    refresh = pr.carry_forward(imported.prices, imported.lines, [_p5(), other], unstated=imported.unstated)
    (incomplete,) = refresh.incomplete
    assert (incomplete.field, incomplete.line) == ("interconnect", 2)
    assert "the instance type's rows disagree" in incomplete.why

    twelve = pi.from_skypilot(text.replace("8.0", "12.0"), SHEET)
    refresh = pr.carry_forward(twelve.prices, twelve.lines, [_p5()], unstated=twelve.unstated, checked=twelve.checked)
    (incomplete,) = refresh.incomplete
    assert incomplete.field == "gpus_per_unit" and "the file says 12" in incomplete.why and "says 8" in incomplete.why


def test_a_csv_sheet_carries_the_columns_it_lacks_and_states_its_blank_cells() -> None:
    columns = "option,provider,item,subject,gpu_model,plan,unit,gpus_per_unit,low,high,currency,region,valid_from,"
    row = "rented_gpu_instances,aws,instance_hour,p5.48xlarge,h100_sxm,on_demand,per_server_hour,8,50,50,USD,us-east-1,"
    sheet = pi.Sheet(source="sheet", retrieved_on=dt.date(2026, 12, 2))
    without = pi.from_csv(f"{columns}source,source_quality\n{row}2026-12-10,quote,verified\n", sheet)
    refresh = pr.carry_forward(without.prices, without.lines, EXISTING, unstated=without.unstated)
    assert refresh.prices[0].interconnect == "efa" and not refresh.incomplete

    blank = pi.from_csv(f"{columns}interconnect,source,source_quality\n{row}2026-12-10,,quote,verified\n", sheet)
    refresh = pr.carry_forward(blank.prices, blank.lines, EXISTING, unstated=blank.unstated)
    assert refresh.prices[0].interconnect is None and not refresh.incomplete  # the sheet said it: null
