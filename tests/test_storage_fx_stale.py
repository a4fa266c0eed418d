"""Storage and egress on the rented and platform sides, exchange rates no older than three months, and
``prices stale`` failing loudly on an old rate (docs/methodology.md "Storage and egress on every side",
docs/price-books.md "Storage, egress and exchange rates"), on SQLite and PostgreSQL.

Hand calculations: a year of storage is GPUs × TB per GPU × price per TB-month × 12 at each end of the
ranges (low with low, high with high); egress is GPUs × TB per GPU × share moved out × price per TB,
once. The figures per TB come from the providers' published prices (CoreWeave AI Object Storage Hot
0.06 USD/GB-month; Amazon S3 Standard 0.021–0.023; Lambda filesystems 0.20 USD/GiB-month; AWS
egress 0.05–0.09 USD/GB)."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import Databases
from seed_snapshot import SEEDS, knowledge_from_seeds
from test_price_import import cli

from app.core.vocab import PIVOT

GPUS = 64
AS_OF = "2026-12-05"
#: the knowledge version's date of this issue: every rate must be at most three months old on it
KNOWLEDGE_DATE = dt.date(2026, 12, 5)


def compare(client: Any, **more: Any) -> dict[str, Any]:
    body = {"gpus": GPUS, "utilization": 0.9, "horizon_years": 3, "currency": "USD", "gpu_model": "h100_sxm"}
    body |= {"as_of": AS_OF, **more}
    r = client.post("/v1/price-comparisons", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def item(answer: dict[str, Any], option: str) -> dict[str, Any]:
    return next(i for i in answer["items"] if i["option"] == option)


def line(entry: dict[str, Any], key: str) -> dict[str, Any] | None:
    return next((li for li in entry["breakdown"] if li["key"] == key), None)


def assumption(client: Any, key: str) -> tuple[float, float, float]:
    r = client.get("/v1/assumptions", params={"option": "*", "limit": 500})
    assert r.status_code == 200, r.text
    row = next(a for a in r.json()["items"] if a["key"] == key)
    return row["low"], row["expected"], row["high"]


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def ends(r: dict[str, Any]) -> tuple[float, float, float]:
    return r["low"], r["expected"], r["high"]


def test_a_rented_comparison_carries_storage_at_the_providers_price(client: Any) -> None:
    tb = assumption(client, "storage_tb_per_gpu")
    assert (tb[0], tb[2]) == (9.8, 15.5)
    entry = item(compare(client, providers=["coreweave"], rental_plan="on_demand"), "rented_gpu_instances")
    storage = line(entry, "storage")
    assert storage is not None, entry["breakdown"]
    # 64 GPUs × 9.8 TB × 60 USD per TB-month × 12 = 451,584 USD a year (low); × 15.5 TB = 714,240 (high)
    assert close(storage["annual"]["low"], 451_584) and close(storage["annual"]["high"], 714_240)
    for got, t in zip(ends(storage["annual"]), tb, strict=True):
        assert close(got, GPUS * t * 60 * 12)
    for got, year in zip(ends(storage["total"]), ends(storage["annual"]), strict=True):
        assert close(got, year * 3)  # the whole horizon, whatever the plan
    assert line(entry, "egress") is None  # CoreWeave bills no egress
    assert "coreweave.com/pricing" in " ".join(s["source"] for s in storage["sources"])


def test_aws_adds_egress_once_and_a_provider_without_a_price_gets_the_lowest_published(client: Any) -> None:
    tb = assumption(client, "storage_tb_per_gpu")
    share = assumption(client, "egress_share")
    entry = item(compare(client, providers=["aws"], rental_plan="on_demand"), "rented_gpu_instances")
    storage, egress = line(entry, "storage"), line(entry, "egress")
    assert storage is not None and egress is not None, entry["breakdown"]
    # S3 Standard 21–23 USD per TB-month: 64 × 9.8 × 21 × 12 = 158,054.4 (low), 64 × 15.5 × 23 × 12 = 273,792 (high)
    assert close(storage["annual"]["low"], 158_054.4) and close(storage["annual"]["high"], 273_792)
    # egress 50–90 USD per TB, once: 64 × 9.8 × 0.03 × 50 = 940.8 (low), 64 × 15.5 × 1.0 × 90 = 89,280 (high)
    assert close(egress["total"]["low"], 940.8) and close(egress["total"]["high"], 89_280)
    assert close(egress["total"]["expected"], GPUS * tb[1] * share[1] * 70)  # 70: the row's mean (50 + 90) ÷ 2
    assert egress["annual"] == {"low": 0.0, "expected": 0.0, "high": 0.0}
    # Nebius publishes no storage price here: the lowest published one (S3's) with the basis saying so
    other = item(compare(client, providers=["nebius"], rental_plan="on_demand"), "rented_gpu_instances")
    floor = line(other, "storage")
    assert floor is not None and "lowest price another provider publishes" in floor["basis"]
    assert close(floor["annual"]["low"], 158_054.4) and line(other, "egress") is None


def test_a_platform_comparison_carries_storage_and_the_cost_includes_it(client: Any) -> None:
    tb = assumption(client, "storage_tb_per_gpu")
    entry = item(compare(client, providers=["lambda"]), "ai_compute_platform")
    storage = line(entry, "storage")
    assert storage is not None, entry["breakdown"]
    # Lambda filesystems: 0.20 USD per GiB-month = 186.26 USD per TB-month; 64 × 9.8 × 186.26 × 12 = 1,401,867.26
    assert close(storage["annual"]["low"], 1_401_867.264)
    for got, t in zip(ends(storage["annual"]), tb, strict=True):
        assert close(got, GPUS * t * 186.26 * 12)
    annual = sum(li["annual"]["expected"] for li in entry["breakdown"] if li["key"] in ("gpu_hours", "storage"))
    assert close(entry["annual_cost"]["expected"], annual)


def test_every_exchange_rate_is_at_most_three_months_old_on_the_knowledge_date() -> None:
    kb = knowledge_from_seeds(SEEDS)
    for currency in sorted({r.base for r in kb.rates} - {PIVOT}):
        newest = max((r for r in kb.rates if r.base == currency), key=lambda r: r.valid_on)
        assert (KNOWLEDGE_DATE - newest.valid_on).days <= 90, (currency, newest.valid_on)


@pytest.fixture
def seeds_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the reference seeds, the CLI's seed directory."""
    copy = tmp_path / "seeds"
    shutil.copytree(SEEDS, copy)
    monkeypatch.setenv("SEEDS_PATH", str(copy))
    return copy


def test_prices_stale_fails_on_an_old_rate_and_passes_on_fresh_data(
    seeds_copy: Path, databases: Databases, backend: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("DATABASE_URL", databases.migrated(backend))
    assert cli(capsys, "seeds", "load")[0] == 0
    # no offer is a hundred years old: only the rates can make the check fail
    code, out, err = cli(capsys, "prices", "stale", "--days", "36500", "--as-of", AS_OF)
    assert code == 0 and out.startswith("no offer is older than 36500 days") and err == "", err
    # 2026-12-07 is 91 days after the newest rates (2026-09-07): a sentence per currency, exit status 1
    code, out, err = cli(capsys, "prices", "stale", "--days", "36500", "--as-of", "2026-12-07")
    assert code == 1, (out, err)
    sentences = err.splitlines()
    assert sentences[:2] == [
        "EUR: the newest exchange rate (7.784 CNY on 2026-09-07) is 91 days old on 2026-12-07, older than 90 days; "
        "add a rate dated 2026-09-08 or later",
        "USD: the newest exchange rate (6.6989 CNY on 2026-09-07) is 91 days old on 2026-12-07, older than 90 days; "
        "add a rate dated 2026-09-08 or later",
    ]
    assert sentences[-1].startswith("stale on 2026-12-07: 0 offers older than 36500 days and 2 exchange rates")
    # the age is an argument
    assert cli(capsys, "prices", "stale", "--days", "36500", "--rate-days", "120", "--as-of", "2026-12-07")[0] == 0
