"""``compute-advisor prices import`` and ``prices stale``: a SkyPilot catalog or a CSV price sheet → a seed
file → ``seeds load`` → offers in ``/v1/offers``; malformed sheets refused by line with nothing written;
stale offers by the rule of ``/v1/offers?stale_days=`` (on SQLite and PostgreSQL)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import SEEDS, Databases, make_client, shipped_seeds

from app.cli import main
from app.cli import prices as prices_cli
from app.kb import price_import as pi
from app.kb import price_refresh
from app.kb.seeds import PriceSeed

SAMPLE = Path(__file__).parent / "data" / "skypilot-aws-sample.csv"
CATALOG = "skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv@00148f2af3672e2229b4f7bf8157d5a3f36e3c35"
HEADER = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone,Arch"
)
SEED_SET = shipped_seeds()
SHEET = pi.Sheet(
    source=CATALOG,
    retrieved_on=dt.date(2026, 12, 2),
    provider="aws",
    valid_from=dt.date(2026, 12, 10),
    option="rented_gpu_instances",
    providers=frozenset(p.key for p in SEED_SET.records["providers"]),  # type: ignore[attr-defined]
    gpu_models=frozenset(g.key for g in SEED_SET.records["gpu_models"]),  # type: ignore[attr-defined]
)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def by_offer(prices: list[PriceSeed]) -> dict[tuple[str, str, str], PriceSeed]:
    return {(p.subject, p.region, p.plan): p for p in prices}


def catalog(*rows: str, header: str = HEADER) -> str:
    return "\n".join((header, *rows)) + "\n"


# ---- the SkyPilot format ----------------------------------------------------------------------------


def test_the_sample_catalog_becomes_one_row_per_instance_region_and_plan() -> None:
    imported = pi.from_skypilot(SAMPLE.read_text(encoding="utf-8"), SHEET)

    rows = by_offer(imported.prices)
    assert imported.rows_read == 17
    assert len(rows) == len(imported.prices) == 22
    # two zones of us-east-1 collapse; the zone whose spot price equals on demand offers no spot
    assert (rows["p5.48xlarge", "us-east-1", "on_demand"].low, rows["p5.48xlarge", "us-east-1", "on_demand"].high) == (
        Decimal("55.04"),
        Decimal("55.04"),
    )
    spot = rows["p5.48xlarge", "us-east-1", "spot"]
    assert (spot.low, spot.high) == (Decimal("19.2531"), Decimal("19.2531"))
    assert "line 11 (zone use1-az2)" in (spot.notes or "") and "use1-az1" in (spot.notes or "")
    assert ("p5.48xlarge", "ap-northeast-2", "spot") not in rows  # empty SpotPrice
    assert ("p5e.48xlarge", "us-east-2", "on_demand") not in rows  # empty Price
    assert rows["p5e.48xlarge", "us-east-2", "spot"].low == Decimal("62.9957")
    assert {p.gpu_model for p in imported.prices} == {"a100_80gb", "h100_sxm", "h200_sxm", "b200"}
    assert imported.unknown == {"A100 (no GPU model key)": [4], "Trainium (no GPU model key)": [18]}
    assert imported.skipped == {"no accelerator": [2, 3], "spot price not below on demand": [10]}
    for p in imported.prices:
        assert (p.option, p.provider, p.item, p.unit, p.gpus_per_unit, p.currency) == (
            "rented_gpu_instances",
            "aws",
            "instance_hour",
            "per_server_hour",
            8,
            "USD",
        )
        assert (p.valid_from, p.valid_to, p.retrieved_on) == (dt.date(2026, 12, 10), None, dt.date(2026, 12, 2))
        assert p.source.startswith(f"{CATALOG}, row") and p.subject in p.source and p.region in p.source
        assert (p.residency, p.source_quality) == ("public_multi_tenant", "verified")


def test_imported_rows_are_written_like_the_hand_written_hyperscaler_rows() -> None:
    """Every on-demand row of the sample that seeds/41 also holds (same instance, region and price) has
    the same fields but for its dates and wording."""
    imported = by_offer(pi.from_skypilot(SAMPLE.read_text(encoding="utf-8"), SHEET).prices)
    written = {
        (p.subject, p.region, p.plan): p
        for p in SEED_SET.records["prices"]
        if isinstance(p, PriceSeed) and p.provider == "aws" and p.valid_to is None
    }
    same = [k for k in imported if k[2] == "on_demand" and k in written]
    assert len(same) >= 8
    figures = ("option", "provider", "item", "subject", "gpu_model", "plan", "unit", "gpus_per_unit", "low", "high")
    for key in same:
        for name in (*figures, "expected", "currency", "region", "residency", "source_quality", "capacity_gpus"):
            assert getattr(imported[key], name) == getattr(written[key], name), (key, name)
        assert imported[key].source.split(", row")[0] == written[key].source.split(", row")[0]


def test_the_price_sections_of_the_seed_files_are_written_back_byte_for_byte() -> None:
    assert set(pi.FIELD_ORDER) == set(PriceSeed.model_fields)
    for file in sorted(SEEDS.glob("4*.yaml")):
        text = file.read_text(encoding="utf-8")
        doc = yaml.safe_load(text)
        if "prices" in doc:
            rows = [PriceSeed.model_validate(r) for r in doc["prices"]]
            assert pi.to_yaml(rows) == text[text.index("\nprices:") + 1 :], file.name


def test_zones_that_differ_give_a_range_and_columns_may_come_in_any_order() -> None:
    header = "Region,Price,SpotPrice,InstanceType,AcceleratorCount,AcceleratorName,AvailabilityZone"
    text = catalog(
        "us-x-1,10.5,4.000000,gpu_8x_h100_sxm5,8.0,H100,z1",
        "us-x-1,11.25,3.5,gpu_8x_h100_sxm5,8.0,H100,z2",
        "us-x-1,0.123456789,,gpu_1x_l40s,1.0,L40S,z1",
        header=header,
    )
    rows = by_offer(pi.from_skypilot(text, SHEET).prices)

    od = rows["gpu_8x_h100_sxm5", "us-x-1", "on_demand"]
    assert (od.low, od.high) == (Decimal("10.5"), Decimal("11.25"))
    assert "Zones differ: low is the cheapest, high the dearest." in (od.notes or "")
    assert "lines 2, 3 (zones z1, z2)" in (od.notes or "")
    spot = rows["gpu_8x_h100_sxm5", "us-x-1", "spot"]
    assert (spot.low, spot.high) == (Decimal("3.5"), Decimal("4"))
    l40s = rows["gpu_1x_l40s", "us-x-1", "on_demand"]
    assert (l40s.low, l40s.gpus_per_unit) == (Decimal("0.123457"), 1)
    assert "Rounded to 6 decimals from 0.123456789" in (l40s.notes or "")


def test_a_catalog_without_zone_spot_and_gpuinfo_columns_imports() -> None:
    text = catalog(
        "gpu_8x_b200,B200,8,53.52,us-east-1", header="InstanceType,AcceleratorName,AcceleratorCount,Price,Region"
    )
    (row,) = pi.from_skypilot(text, SHEET).prices
    assert (row.gpu_model, row.plan, row.low, row.region) == ("b200", "on_demand", Decimal("53.52"), "us-east-1")
    assert (row.notes or "").startswith("Catalog line 2. valid_from 2026-12-10")


def test_accelerators_priced_apart_from_an_instance_are_skipped() -> None:
    """Google Cloud's catalog: a VM line without a GPU, and the GPU's own line without an instance type
    (rows of catalogs/v8/gcp/vms.csv, the GPU price made up); neither is an instance's price."""
    header = (
        "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice"
    )
    text = catalog(
        "a3-highgpu-1g,26.0,234.0,,,,us-central1,us-central1-a,1.18251,0.36117",
        ",,,H100,1,H100,us-central1,us-central1-a,9.5,2.5",
        header=header,
    )
    imported = pi.from_skypilot(text, SHEET)
    assert imported.prices == []
    assert imported.skipped == {"no accelerator": [2], "an accelerator priced apart from any instance": [3]}
    with pytest.raises(pi.PriceImportError, match="line 2: column InstanceType is empty"):
        pi.from_skypilot(catalog(",,,,,,us-central1,z,1,1", header=header), SHEET)


def test_unknown_accelerators_are_reported_with_their_lines_never_guessed() -> None:
    text = catalog(
        "gb200.x,GB200,4.0,,,,42.0,,us-east-1,z1,arm64",
        "p5.48xlarge,H100,8.0,,,,55.04,,us-east-1,z1,x86_64",
        "gpu_1x_h100_pcie,H100,1.0,,,,2.49,,us-east-1,z1,x86_64",
        "h100nvl,H100,1.0,,,\"{'Gpus': [{'Name': 'H100 NVL'}]}\",2.79,,us-east-1,z1,x86_64",
        "gb200.x,GB200,4.0,,,,42.0,,us-west-2,z1,arm64",
    )
    imported = pi.from_skypilot(text, SHEET)

    assert [p.subject for p in imported.prices] == ["p5.48xlarge"]
    assert imported.unknown == {
        "GB200 (no GPU model key)": [2, 6],
        "H100 (not SXM, per gpu_1x_h100_pcie or GpuInfo)": [4],
        "H100 (not SXM, per h100nvl or GpuInfo)": [5],
    }
    without_b200 = dataclasses.replace(SHEET, gpu_models=SHEET.gpu_models - {"b200"})
    assert pi.from_skypilot(catalog("p6,B200,8,,,,1,,r,z,a"), without_b200).unknown == {
        "B200 (maps to b200, which the seeds lack)": [2]
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "line 1: the file is empty"),
        (
            catalog("p5,H100,8,,,,55,,us-east-1,z", header=HEADER.replace("Price,", "Cost,")),
            "line 1: missing column Price",
        ),
        (
            catalog("c1,,,8,7,,0.52,,us-east-1,z,x", "p5,H100,8,,,,55.O4,,us-east-1,z,x"),
            "line 3: column Price: '55.O4'",
        ),
        (catalog("p5,H100,8,,,,NaN,,us-east-1,z,x"), "line 2: column Price: 'NaN' is not a non-negative number"),
        (catalog("p5,H100,8,,,,-1,,us-east-1,z,x"), "line 2: column Price: '-1' is not a non-negative number"),
        (catalog("p5,H100,eight,,,,55,,us-east-1,z,x"), "line 2: column AcceleratorCount: 'eight'"),
        (catalog("p5,H100,8,,,,55,,us-east-1,z"), "line 2: 10 cells, the header has 11"),
        (catalog("p5,H100,8,,,,55,,,z,x"), "line 2: column Region is empty"),
        (
            catalog("p5,H100,8,,,\"{'a': 1}\n\",55,,us-east-1,z,x", "p4,H100,8,,,,oops,,us-east-1,z,x"),
            "line 4: column Price",
        ),
        (
            catalog("p5,H100,8,,,,55,,us-east-1,z,x", "p5,H200,8,,,,55,,us-east-1,y,x"),
            "line 3: p5 in us-east-1 has 8 × H200",
        ),
    ],
)
def test_a_malformed_catalog_is_refused_with_its_line(text: str, message: str) -> None:
    with pytest.raises(pi.PriceImportError) as refused:
        pi.from_skypilot(text, SHEET)
    assert str(refused.value).startswith(message), str(refused.value)


def test_rows_still_open_when_a_new_row_starts_are_listed_to_be_closed() -> None:
    imported = pi.from_skypilot(SAMPLE.read_text(encoding="utf-8"), SHEET).prices
    existing = [p for p in SEED_SET.records["prices"] if isinstance(p, PriceSeed)]

    pairs = price_refresh.superseded(imported, existing)

    assert len(pairs) == 20
    for old, new in pairs:
        assert [getattr(old, k) for k in pi.PERIOD_KEY] == [getattr(new, k) for k in pi.PERIOD_KEY]
        assert old.valid_from < new.valid_from and old.valid_to is None
    assert price_refresh.superseded(imported, imported) == []


# ---- the generic CSV format -------------------------------------------------------------------------

QUOTES = (
    "option,provider,item,subject,gpu_model,plan,unit,gpus_per_unit,low,expected,high,currency,region,valid_from,"
    "lead_time_days_low,lead_time_days_high,residency,source,source_quality,notes\n"
    "self_built_cluster,own,server_hardware,hgx_h100_8gpu,h100_sxm,,per_server,8,1850000,1900000.00,1990000,CNY,"
    'CN-SH,2026-11-20,45,90,on_premises,"Quote Q-2026-117 from a server vendor, 2026-11-20",verified,'
    '"8 × H100 SXM5, delivered, incl. 3-year warranty"\n'
    'self_built_cluster,own,colocation,*,,,per_kw_month,,980,,1150,CNY,CN-BJ,2026-11-01,,,,"Colocation offer, '
    'Beijing, 2026-11",secondary,\n'
)


def test_a_csv_price_sheet_maps_one_to_one_onto_price_rows() -> None:
    imported = pi.from_csv(QUOTES, pi.Sheet(source="unused", retrieved_on=dt.date(2026, 12, 2), **_known()))

    server, colo = imported.prices
    assert imported.rows_read == 2
    assert (server.low, server.expected, server.high) == (Decimal("1850000"), Decimal("1900000.00"), Decimal("1990000"))
    assert (server.plan, server.gpus_per_unit, server.lead_time_days_low, server.residency) == (
        "*",
        8,
        45,
        "on_premises",
    )
    assert server.source == "Quote Q-2026-117 from a server vendor, 2026-11-20"
    assert (colo.subject, colo.gpu_model, colo.expected, colo.residency, colo.notes) == ("*", "*", None, None, None)
    assert {p.retrieved_on for p in imported.prices} == {dt.date(2026, 12, 2)}  # blank: the sheet's date
    # the YAML reads back to the same rows
    back = [PriceSeed.model_validate(r) for r in yaml.safe_load(pi.to_yaml(imported.prices))["prices"]]
    assert back == imported.prices


def _known() -> dict[str, Any]:
    return {"providers": SHEET.providers, "gpu_models": SHEET.gpu_models}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("valid_from", "valid_since"), "line 1: missing column valid_from"),
        (lambda t: t.replace(",notes\n", ",remarks\n"), "line 1: unknown column 'remarks'"),
        (lambda t: t.replace("2026-11-01", "2026-13-01"), "line 3: field 'valid_from': "),
        (lambda t: t.replace("1850000,", "1.85M,"), "line 2: field 'low': "),
        (lambda t: t.replace("per_kw_month", "per_rack"), "line 3: field 'unit': "),
        (lambda t: t.replace(",own,", ",ownn,", 1), "line 2: field 'provider': unknown provider 'ownn'"),
        (lambda t: t.replace("h100_sxm,", "h100,", 1), "line 2: field 'gpu_model': unknown GPU model 'h100'"),
        (lambda t: t + t.splitlines()[2] + "\n", "line 4: the same price row (offer and valid_from) as line 3"),
    ],
)
def test_a_malformed_csv_sheet_is_refused_with_its_line(edit: Any, message: str) -> None:
    with pytest.raises(pi.PriceImportError) as refused:
        pi.from_csv(edit(QUOTES), pi.Sheet(source="x", retrieved_on=dt.date(2026, 12, 2), **_known()))
    assert str(refused.value).startswith(message), str(refused.value)


def test_csv_flags_fill_blank_cells_and_refuse_contradictions() -> None:
    text = QUOTES.replace(",own,", ",,").replace("2026-11-20", "").replace("2026-11-01", "")
    sheet = pi.Sheet(source="x", retrieved_on=dt.date(2026, 12, 1), provider="own", valid_from=dt.date(2026, 11, 25))
    filled = pi.from_csv(text, dataclasses.replace(sheet, **_known()))
    assert {(p.provider, p.valid_from) for p in filled.prices} == {("own", dt.date(2026, 11, 25))}

    with pytest.raises(pi.PriceImportError, match="line 2: field 'provider': 'own' contradicts --provider aws"):
        pi.from_csv(QUOTES, dataclasses.replace(sheet, provider="aws"))


def test_the_documented_formats_are_the_code_s() -> None:
    """docs/price-books.md: its CSV example imports, its mapping table is SKYPILOT_GPU_MODELS, its
    required columns are PriceSeed's."""
    doc = (SEEDS.parent / "docs" / "price-books.md").read_text(encoding="utf-8")
    example = doc.split("```csv\n")[1].split("```")[0]
    assert len(pi.from_csv(example, pi.Sheet(source="x", retrieved_on=dt.date(2026, 12, 1), **_known())).prices) == 2
    table = doc.split("| SkyPilot name | GPU model |")[1].split("\n\n")[0]
    documented = {
        name.strip("` "): key.strip("` |")
        for line in table.splitlines()[2:]
        for names, key in [line.strip("| ").split(" | ")]
        for name in names.split(", ")
    }
    assert documented == dict(pi.SKYPILOT_GPU_MODELS)
    required = doc.split("| column | |")[1].split("| required")[0].split("\n")[-1]
    assert {c.strip("` |") for c in required.split(",")} == {
        n for n, f in PriceSeed.model_fields.items() if f.is_required()
    }


# ---- the command line -------------------------------------------------------------------------------


@pytest.fixture
def seeds_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the reference seeds, the CLI's default seed directory."""
    copy = tmp_path / "seeds"
    shutil.copytree(SEEDS, copy)
    monkeypatch.setenv("SEEDS_PATH", str(copy))
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'never-created.db'}")
    return copy


def import_sample(capsys: pytest.CaptureFixture[str], out: Path, *extra: str) -> tuple[int, str, str]:
    args = ["--provider", "aws", "--valid-from", "2026-12-10", "--source", CATALOG, "--retrieved-on", "2026-12-02"]
    return cli(capsys, "prices", "import", "--format", "skypilot", *args, "--out", str(out), *extra, str(SAMPLE))


def test_import_writes_a_seed_file_and_lists_the_rows_to_close(seeds_dir: Path, capsys, tmp_path: Path) -> None:
    out = seeds_dir / "47-aws-2026-12.yaml"

    code, stdout, stderr = import_sample(capsys, out)

    assert code == 0, stderr
    assert stderr.splitlines() == [
        "unknown accelerator A100 (no GPU model key) on line 4: skipped, not guessed",
        "unknown accelerator Trainium (no GPU model key) on line 18: skipped, not guessed",
    ]
    lines = stdout.splitlines()
    assert lines[0] == f"wrote {out}: 22 prices (11 on_demand, 11 spot) from 17 rows"
    assert "skipped (no accelerator): lines 2, 3" in lines
    assert f"before `seeds load`, close these 20 rows of {seeds_dir} (valid_to: the new valid_from):" in lines
    closing = [line for line in lines if line.startswith(f"  {seeds_dir}/41-offers-hyperscalers.yaml: ")]
    assert len(closing) == 20 and all(line.endswith("valid_to: 2026-12-10") for line in closing)
    assert lines[-1].startswith(
        f"seeds check of {seeds_dir} with {out.name}: not valid yet: {seeds_dir}/41-offers-hyperscalers.yaml: "
    )
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Written by `compute-advisor prices import --format skypilot --provider aws --valid-from")
    assert [p.name for p in seeds_dir.iterdir() if p.name.startswith(".")] == []  # no temporary file left
    assert len(yaml.safe_load(text)["prices"]) == 22


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--provider", "nope"], "error: --provider: unknown provider 'nope'"),
        (["--out-name", "47.yml.txt"], "error: --out: "),
        (["--sheet", "broken"], "error: {sheet}: line 3: column Price: 'x' is not a number"),
        (["--sheet", "empty-of-gpus"], "error: {sheet}: no price rows in 2 rows read"),
        (["--sheet", "latin-1"], "error: {sheet}: not UTF-8 text"),
    ],
)
def test_import_refusals_exit_2_and_write_nothing(seeds_dir: Path, capsys, tmp_path: Path, args, message) -> None:
    sheets = {
        "broken": catalog("p5,H100,8,,,,55,,us-east-1,z,x", "p5,H100,8,,,,x,,us-east-1,y,x"),
        "empty-of-gpus": catalog("c1,,,8,7,,0.52,,us-east-1,z,x", "trn1,Trainium,16,,,,21.5,,us-east-1,z,x"),
        "latin-1": None,
    }
    options = dict(zip(args[::2], args[1::2], strict=True))
    sheet = SAMPLE
    if "--sheet" in options:
        sheet = tmp_path / f"{options['--sheet']}.csv"
        content = sheets[options["--sheet"]]
        sheet.write_bytes(content.encode() if content else "p5,Gerät,é".encode("latin-1"))
    out = tmp_path / options.get("--out-name", "out.yaml")
    flags = ["--provider", options.get("--provider", "aws"), "--valid-from", "2026-12-10", "--out", str(out)]

    code, stdout, stderr = cli(capsys, "prices", "import", "--format", "skypilot", *flags, str(sheet))

    assert code == 2
    assert stdout == ""
    assert stderr.splitlines()[-2].startswith(message.format(sheet=sheet)), stderr
    assert stderr.splitlines()[-1] == "nothing was written"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["seeds", *(f"{n}.csv" for n in options.values() if n in sheets)]
    )


def test_skypilot_rows_are_offers_of_the_option_whose_plugin_declares_the_format(
    seeds_dir: Path, capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the rented option's plugin declares the format (OptionSpec.price_formats); app/ names no option
    out = tmp_path / "out.yaml"
    assert import_sample(capsys, out)[0] == 0
    assert {p["option"] for p in yaml.safe_load(out.read_text(encoding="utf-8"))["prices"]} == {"rented_gpu_instances"}

    # --option names the option; one no plugin provides is refused
    code, _, err = import_sample(capsys, out, "--force", "--option", "rented_moon_instances")
    assert code == 2 and "error: --option: no loaded option 'rented_moon_instances' (the options are" in err, err

    # no loaded plugin declares the format: the admin is asked to name the option
    loaded = prices_cli.loaded_options()
    undeclared = {
        k: dataclasses.replace(o, spec=dataclasses.replace(o.spec, price_formats=())) for k, o in loaded.items()
    }
    monkeypatch.setattr(prices_cli, "loaded_options", lambda: undeclared)
    code, _, err = import_sample(capsys, out, "--force")
    assert code == 2, err
    assert "no loaded option declares the skypilot format: name the option its rows are offers of with --option" in err


def test_import_usage_errors_and_an_existing_file(seeds_dir: Path, capsys, tmp_path: Path) -> None:
    out = tmp_path / "out.yaml"
    code, _, err = cli(capsys, "prices", "import", "--format", "skypilot", "--out", str(out), str(SAMPLE))
    assert (code, "--format skypilot needs --provider and --valid-from" in err) == (2, True)
    code, _, err = import_sample(capsys, out, "--valid-from", "2026-02-30")
    assert code == 2 and "'2026-02-30' does not match the format '%Y-%m-%d'" in err
    code, _, err = cli(
        capsys, "prices", "import", "--format", "csv", "--residency", "dedicated", "--out", str(out), str(SAMPLE)
    )
    assert (code, "--option, --source-quality and --residency are columns of a csv sheet" in err) == (2, True)
    assert not out.exists()

    out.write_text("keep me\n", encoding="utf-8")
    code, _, err = import_sample(capsys, out)
    assert (code, err.splitlines()[0]) == (2, f"error: {out} exists (--force replaces it)")
    assert out.read_text(encoding="utf-8") == "keep me\n"
    assert import_sample(capsys, out, "--force")[0] == 0
    assert out.read_text(encoding="utf-8").startswith("# Written by")


def _close(seeds_dir: Path, new: list[PriceSeed]) -> int:
    """Close, in the copy of seeds/41, every row the new rows follow (the admin's review step)."""
    file = seeds_dir / "41-offers-hyperscalers.yaml"
    doc = yaml.safe_load(file.read_text(encoding="utf-8"))
    starts = {tuple(getattr(p, k) for k in pi.PERIOD_KEY): p.valid_from for p in new}
    closed = 0
    for row in doc["prices"]:
        start = starts.get(tuple(row[k] for k in pi.PERIOD_KEY))
        if start is not None and row["valid_to"] is None and row["valid_from"] < start:
            row["valid_to"] = start
            closed += 1
    file.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=160), encoding="utf-8")
    return closed


@pytest.mark.slow
def test_sample_catalog_to_seed_file_to_seeds_load_to_offers(
    seeds_dir: Path, databases: Databases, backend: str, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    url = databases.migrated(backend)
    monkeypatch.setenv("DATABASE_URL", url)
    out = seeds_dir / "47-aws-2026-12.yaml"
    assert import_sample(capsys, out)[0] == 0
    assert cli(capsys, "knowledge", "version")[0] == 1  # nothing reached the database
    new = [PriceSeed.model_validate(r) for r in yaml.safe_load(out.read_text(encoding="utf-8"))["prices"]]

    assert _close(seeds_dir, new) == 20
    code, stdout, stderr = cli(capsys, "seeds", "check")
    assert code == 0, stderr
    code, stdout, stderr = cli(capsys, "seeds", "load", "--verbose", "--note", "aws catalog 2026-12")
    assert code == 0, stderr
    assert (
        "+ prices rented_gpu_instances/aws/instance_hour/p5.48xlarge/h100_sxm/spot/us-east-1/USD/2026-12-10" in stdout
    )

    with make_client(url) as client:
        after = client.get("/v1/offers", params={"provider": "aws", "region": "us-east-1", "as_of": "2026-12-10"})
        before = client.get("/v1/offers", params={"provider": "aws", "region": "us-east-1", "as_of": "2026-12-09"})
    assert after.status_code == before.status_code == 200
    now = {(o["subject"], o["plan"]): o for o in after.json()["items"]}
    then = {(o["subject"], o["plan"]): o for o in before.json()["items"]}
    p5 = now["p5.48xlarge", "spot"]
    assert (p5["low"], p5["high"], p5["valid_from"], p5["gpu_model"]) == (19.2531, 19.2531, "2026-12-10", "h100_sxm")
    assert p5["source"] == f"{CATALOG}, row p5.48xlarge us-east-1 SpotPrice"
    assert then["p5.48xlarge", "spot"]["low"] == 17.6289  # the hand-written row, closed on 2026-12-10
    assert now["p6-b200.48xlarge", "on_demand"]["valid_from"] == "2026-12-10"
    assert now["p5.4xlarge", "on_demand"]["valid_from"] == then["p5.4xlarge", "on_demand"]["valid_from"]  # untouched


def test_a_csv_sheet_imports_and_loads(seeds_dir: Path, databases: Databases, monkeypatch, capsys, tmp_path) -> None:
    url = databases.migrated("sqlite")
    monkeypatch.setenv("DATABASE_URL", url)
    sheet = tmp_path / "quotes.csv"
    sheet.write_text(QUOTES, encoding="utf-8")
    out = seeds_dir / "48-quotes.yaml"

    code, stdout, stderr = cli(capsys, "prices", "import", "--format", "csv", "--out", str(out), str(sheet))

    assert code == 0, stderr
    assert stdout.splitlines()[-1] == f"seeds check of {seeds_dir} with {out.name}: valid"
    assert cli(capsys, "seeds", "load")[0] == 0
    with make_client(url) as client:
        rows = client.get("/v1/prices", params={"provider": "own", "region": "CN-BJ"}).json()["items"]
    assert [(r["item"], r["low"], r["high"], r["source"]) for r in rows] == [
        ("colocation", 980.0, 1150.0, "Colocation offer, Beijing, 2026-11")
    ]


# ---- prices stale -----------------------------------------------------------------------------------


def _row(subject: str, valid_from: dt.date, retrieved_on: dt.date | None, **more: Any) -> dict[str, Any]:
    return {
        "option": "rented_gpu_instances",
        "provider": "lambda",
        "item": "instance_hour",
        "subject": subject,
        "gpu_model": "h100_sxm",
        "plan": "on_demand",
        "unit": "per_server_hour",
        "gpus_per_unit": 8,
        "low": 20,
        "high": 20,
        "currency": "USD",
        "region": "JP",  # a region of the hierarchy no lambda row uses
        "valid_from": valid_from,
        "retrieved_on": retrieved_on,
        "source": "test",
        "source_quality": "assumption",
        **more,
    }


def test_prices_stale_lists_what_the_api_lists(
    seeds_dir: Path, databases: Databases, backend: str, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    today = dt.datetime.now(dt.UTC).date()
    ago = lambda days: today - dt.timedelta(days=days)  # noqa: E731
    rows = [
        _row("old", ago(400), ago(200)),  # read 200 days ago: stale
        _row("refreshed", ago(400), ago(400), valid_to=ago(10)),  # an old row, but the newest is fresh
        _row("refreshed", ago(10), ago(10)),
        _row("undated", ago(300), None),  # never read: its valid_from counts
        _row("fresh", ago(5), ago(5)),
    ]
    (seeds_dir / "49-stale-test.yaml").write_text(yaml.safe_dump({"prices": rows}, sort_keys=False), encoding="utf-8")
    url = databases.migrated(backend)
    monkeypatch.setenv("DATABASE_URL", url)
    assert cli(capsys, "prices", "stale", "--days", "90")[:2] == (
        1,
        "no knowledge version: run `compute-advisor seeds load`\n",
    )
    assert cli(capsys, "seeds", "load")[0] == 0

    code, stdout, _ = cli(capsys, "prices", "stale", "--days", "90")

    assert code == 1  # stale offers fail the command (exchange rates: tests/test_storage_fx_stale.py)
    header, *table, summary = stdout.splitlines()
    assert header.split() == [
        "age_days",
        "read_on",
        "valid_from",
        "provider",
        "region",
        "plan",
        "gpu_model",
        "item",
        "subject",
    ]
    listed = {(c[3], c[4], c[5], c[6], c[7], " ".join(c[8:])) for c in (line.split() for line in table)}
    mine = {s for (p, r, *_, s) in listed if (p, r) == ("lambda", "JP")}
    assert mine == {"old", "undated"}
    assert [line.split()[:2] for line in table if line.endswith(" old")] == [["200", str(ago(200))]]
    with make_client(url) as client:
        api = client.get("/v1/offers", params={"stale_days": 90, "limit": 500}).json()
    assert api["total"] == len(table) <= 500
    assert {
        (o["provider"], o["region"], o["plan"], o["gpu_model"], o["item"], o["subject"]) for o in api["items"]
    } == listed
    assert summary.startswith(f"{len(table)} of ") and f"older than 90 days on {today}" in summary

    code, stdout, _ = cli(capsys, "prices", "stale", "--days", "90", "--as-of", "2000-01-01")
    assert code == 0 and stdout.startswith("no offer is older than 90 days on")
    code, stdout, _ = cli(capsys, "prices", "stale", "--days", "1", "--as-of", str(today + dt.timedelta(days=3650)))
    total = stdout.splitlines()[-1].split()
    assert total[0] == total[2]  # "N of N offers": every offer is old ten years on
    assert cli(capsys, "prices", "stale", "--days", "0")[0] == 2
