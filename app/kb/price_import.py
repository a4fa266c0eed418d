"""Price sheets into price seeds: a SkyPilot catalog (``catalogs/v8/<cloud>/vms.csv``) or a hand-kept CSV
price sheet becomes ``prices`` records written exactly like ``seeds/41-offers-hyperscalers.yaml``.

Pure: text in, validated ``PriceSeed`` records and YAML text out; ``compute-advisor prices import``
reads and writes the files. A malformed sheet raises ``PriceImportError`` naming its line and nothing
is produced; a row that is no priceable GPU offer is skipped and counted; an accelerator without a GPU
model key is reported with its lines — never guessed; what the file does not state (``Imported.unstated``)
is taken from the rows it replaces by ``app.kb.price_refresh``. The formats: docs/price-books.md.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import ValidationError

from app.kb import csv_text
from app.kb.price_refresh import CARRIED, PERIOD_KEY
from app.kb.price_yaml import FIELD_ORDER, STARRED, WHEN_SET, to_yaml
from app.kb.seeds import PriceSeed, validation_problems

#: SkyPilot accelerator names → GPU model keys of the hardware catalog. Every other name is reported as
#: unknown: A100 is the 40 GB part, which the catalog has no key for; Trainium, Gaudi, T4… are no GPU we price.
SKYPILOT_GPU_MODELS: Mapping[str, str] = {
    "H100": "h100_sxm",
    "H100-SXM": "h100_sxm",
    "H100-MEGA": "h100_sxm",  # GCP a3-megagpu: H100 SXM with more network bandwidth
    "H200": "h200_sxm",
    "H200-SXM": "h200_sxm",
    "B200": "b200",
    "A100-80GB": "a100_80gb",
    "A100-80GB-SXM": "a100_80gb",
    "L40S": "l40s",
    "RTX4090": "rtx_4090",
}
#: a key for an SXM part is refused to a row whose instance type or GpuInfo says it is another form factor
NOT_SXM = ("pcie", "nvl")
SKYPILOT_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")
#: what every SkyPilot row is: an instance of a rented VM, priced per instance-hour in US dollars (its option:
#: the loaded one that declares the format, ``OptionSpec.price_formats``, or ``--option``)
SKYPILOT_FORMAT = "skypilot"
SKYPILOT_ROW = {
    "item": "instance_hour",
    "unit": "per_server_hour",
    "currency": "USD",
}
#: what a SkyPilot catalog does not say of an instance: taken from the rows it replaces (``app.kb.price_refresh``);
#: residency too, unless ``--residency`` states it
SKYPILOT_UNSTATED = frozenset(CARRIED) - {"gpus_per_unit"}
#: what a SkyPilot catalog says that must agree with the rows it replaces (catalogs err: an instance type's
#: GPUs do not change)
SKYPILOT_CHECKED = frozenset({"gpus_per_unit"})
#: a rented instance's residency where nothing says otherwise
DEFAULT_RESIDENCY = "public_multi_tenant"
#: the columns held to six decimals (the database's NUMERIC scale)
SCALE = Decimal("0.000001")


class PriceImportError(ValueError):
    """A price sheet is malformed; the message names the line (and the column or field)."""


@dataclass(frozen=True)
class Sheet:
    """What the admin says about a price sheet, and what the seeds it joins know."""

    #: where the figures come from (a catalog and its commit, a quote's reference); rows add their own detail
    source: str
    retrieved_on: dt.date
    provider: str | None = None
    valid_from: dt.date | None = None
    #: the option every SkyPilot row is an offer of
    option: str | None = None
    source_quality: str = "verified"
    #: every SkyPilot row's residency; None: the replaced row's, else ``DEFAULT_RESIDENCY``
    residency: str | None = None
    #: the provider and GPU model keys of the seeds; empty: not checked
    providers: frozenset[str] = frozenset()
    gpu_models: frozenset[str] = frozenset()


@dataclass
class Imported:
    """The price seeds made from a sheet, and what was left out, by line (first line of the file = 1)."""

    prices: list[PriceSeed]
    rows_read: int
    #: accelerator name (and why it has no key) → lines
    unknown: dict[str, list[int]] = field(default_factory=dict)
    #: reason → lines
    skipped: dict[str, list[int]] = field(default_factory=dict)
    #: the line each price starts on (the first line of its instance type and region, for a catalog)
    lines: list[int] = field(default_factory=list)
    #: the fields of a price row the file does not state (to take from the rows it replaces)
    unstated: frozenset[str] = frozenset()
    #: the fields the file states that must agree with the rows it replaces
    checked: frozenset[str] = frozenset()


def _rows(
    text: str, required: Iterable[str], known: Iterable[str] | None = None
) -> Iterator[tuple[int, dict[str, str]]]:
    """The records of a CSV text with the line each starts on; the header must hold ``required``
    (and, when ``known`` is given, nothing else); a record must have as many cells as the header."""
    lines = csv_text.records(text, lambda line, exc: PriceImportError(f"line {line}: {exc}"))
    first = next(lines, None)
    if first is None:
        raise PriceImportError("line 1: the file is empty (a header line is needed)")
    header = [h.strip() for h in first[1]]
    missing = [c for c in required if c not in header]
    if missing:
        raise PriceImportError(f"line 1: missing column{'s' * (len(missing) > 1)} {', '.join(missing)}")
    if known is not None and (extra := [h for h in header if h not in set(known)]):
        raise PriceImportError(f"line 1: unknown column '{extra[0]}' (the columns are the fields of a price row)")
    if len(set(header)) != len(header):
        raise PriceImportError(
            f"line 1: a column appears twice ({', '.join(sorted({h for h in header if header.count(h) > 1}))})"
        )
    for line, cells in lines:
        if cells:
            if len(cells) != len(header):
                raise PriceImportError(f"line {line}: {len(cells)} cells, the header has {len(header)}")
            yield line, {h: c.strip() for h, c in zip(header, cells, strict=True)}


def _number(value: str, line: int, column: str) -> Decimal:
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise PriceImportError(f"line {line}: column {column}: '{value}' is not a number") from None
    if not number.is_finite() or number < 0:
        raise PriceImportError(f"line {line}: column {column}: '{value}' is not a non-negative number")
    return number


def _validated(values: dict[str, Any], line: int) -> PriceSeed:
    try:
        return PriceSeed.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(map(str, validation_problems(exc, PriceSeed.model_fields)))
        raise PriceImportError(f"line {line}: {problems}") from exc


def _lines(lines: Sequence[int]) -> str:
    return f"line{'s' * (len(lines) > 1)} {', '.join(map(str, lines))}"


def _plain(value: Decimal) -> str:
    return format(value.normalize(), "f")


@dataclass
class _Instance:
    """One instance type in one region: every line (availability zone) of the catalog that prices it."""

    instance: str
    region: str
    gpu_model: str
    gpus: int
    first_line: int
    #: (line, availability zone, price)
    prices: list[tuple[int, str | None, Decimal]] = field(default_factory=list)
    #: (line, availability zone, spot price, the same line's on-demand price)
    spots: list[tuple[int, str | None, Decimal, Decimal | None]] = field(default_factory=list)


def from_skypilot(text: str, sheet: Sheet) -> Imported:
    """Price seeds from a SkyPilot catalog: one on-demand and (where SpotPrice is below on demand) one
    spot row per GPU instance type and region, availability zones collapsed (low = the cheapest zone,
    high = the dearest). Columns may come in any order; AvailabilityZone, SpotPrice and GpuInfo are optional."""
    if sheet.provider is None or sheet.valid_from is None or sheet.option is None:
        raise PriceImportError("a SkyPilot catalog needs the option, provider and valid_from of its rows")
    unstated = SKYPILOT_UNSTATED - ({"residency"} if sheet.residency is not None else set())
    result = Imported(prices=[], rows_read=0, unstated=unstated, checked=SKYPILOT_CHECKED)
    groups: dict[tuple[str, str], _Instance] = {}
    for line, row in _rows(text, SKYPILOT_COLUMNS):
        result.rows_read += 1
        name, instance, region = row["AcceleratorName"], row["InstanceType"], row["Region"]
        if not region or not (instance or name):
            raise PriceImportError(f"line {line}: column {'Region' if not region else 'InstanceType'} is empty")
        if not name:
            result.skipped.setdefault("no accelerator", []).append(line)
            continue
        if not instance:  # Google Cloud's catalog prices a GPU apart from the VM it is attached to
            result.skipped.setdefault("an accelerator priced apart from any instance", []).append(line)
            continue
        key = SKYPILOT_GPU_MODELS.get(name)
        said = f"{instance} {row.get('GpuInfo', '')}".lower()
        if key is not None and key.endswith("_sxm") and any(word in said for word in NOT_SXM):
            result.unknown.setdefault(f"{name} (not SXM, per {instance} or GpuInfo)", []).append(line)
            continue
        if key is None or (sheet.gpu_models and key not in sheet.gpu_models):
            why = "no GPU model key" if key is None else f"maps to {key}, which the seeds lack"
            result.unknown.setdefault(f"{name} ({why})", []).append(line)
            continue
        count = _number(row["AcceleratorCount"], line, "AcceleratorCount")
        if count == 0:
            raise PriceImportError(f"line {line}: column AcceleratorCount: {name} on no GPU")
        if count != count.to_integral_value():
            result.skipped.setdefault("a fraction of a GPU", []).append(line)
            continue
        price = _number(row["Price"], line, "Price") if row["Price"] else None
        spot = _number(row["SpotPrice"], line, "SpotPrice") if row.get("SpotPrice") else None
        if price is None and spot is None:
            result.skipped.setdefault("no price", []).append(line)
            continue
        group = groups.setdefault((instance, region), _Instance(instance, region, key, int(count), line))
        if (group.gpu_model, group.gpus) != (key, int(count)):
            raise PriceImportError(
                f"line {line}: {instance} in {region} has {int(count)} × {name}, line {group.first_line} another GPU"
            )
        zone = row.get("AvailabilityZone") or None
        if price is not None:
            group.prices.append((line, zone, price))
        if spot is not None:
            group.spots.append((line, zone, spot, price))
    for group in sorted(groups.values(), key=lambda g: (g.instance, g.region)):
        rows = _instance_rows(group, sheet, result)
        result.prices += rows
        result.lines += [group.first_line] * len(rows)
    return result


def _instance_rows(group: _Instance, sheet: Sheet, result: Imported) -> list[PriceSeed]:
    """The on-demand and the spot row of one instance type in one region (zones collapsed)."""
    base = {
        **SKYPILOT_ROW,
        "option": sheet.option,
        "provider": sheet.provider,
        "subject": group.instance,
        "gpu_model": group.gpu_model,
        "gpus_per_unit": group.gpus,
        "region": group.region,
        "valid_from": sheet.valid_from,
        "residency": sheet.residency or DEFAULT_RESIDENCY,
        "source_quality": sheet.source_quality,
        "retrieved_on": sheet.retrieved_on,
    }
    label = f"{group.instance} {group.region}"
    out = [_row(base, "on_demand", group.prices, f"{sheet.source}, {{rows}} {label}", "Catalog {where}.")]
    offered = [(line, zone, spot) for line, zone, spot, price in group.spots if price is None or spot < price]
    same = [(line, zone, spot) for line, zone, spot, price in group.spots if price is not None and spot >= price]
    if same:
        result.skipped.setdefault("spot price not below on demand", []).extend(line for line, _, _ in same)
    left_out = f" Spot = on demand (no discount) {_where(same)}: left out." if same else ""
    out.append(
        _row(
            base,
            "spot",
            offered,
            f"{sheet.source}, {{rows}} {label} SpotPrice",
            f"Spot price at the catalog scrape, {{where}}.{left_out} Spot is volatile.",
        )
    )
    return [row for row in out if row is not None]


def _where(quotes: Sequence[tuple[int, str | None, Decimal]]) -> str:
    """``line 10 (zone use1-az1)``, ``lines 10, 11 (zones use1-az1, use1-az2)``."""
    lines, zones = [q[0] for q in quotes], [q[1] for q in quotes if q[1]]
    return _lines(lines) + (f" (zone{'s' * (len(zones) > 1)} {', '.join(zones)})" if zones else "")


def _row(
    base: dict[str, Any], plan: str, quotes: Sequence[tuple[int, str | None, Decimal]], source: str, notes: str
) -> PriceSeed | None:
    """One price row from the quotes of its zones (None without any): low the cheapest, high the dearest."""
    if not quotes:
        return None
    prices = [q[2] for q in quotes]
    low, high = min(prices), max(prices)
    rounded = [p.quantize(SCALE).normalize() for p in (low, high)]
    gpus = base["gpus_per_unit"]
    per_gpu = "–".join(dict.fromkeys(_plain((p / gpus).quantize(Decimal("0.0001"))) for p in rounded))
    notes = (
        notes.replace("{where}", _where(quotes)) + f" valid_from {base['valid_from']} as given at import (the catalog "
    )
    notes += f"does not date its rows). {per_gpu} USD per GPU-hour (÷{gpus}, derived)."
    if low != high:
        notes += " Zones differ: low is the cheapest, high the dearest."
    if rounded != [low, high]:  # Decimal equality: 55.040000 == 55.04
        notes += f" Rounded to 6 decimals from {_plain(low)}–{_plain(high)}."
    rows = "row" if len(quotes) == 1 else "rows"
    values = {**base, "plan": plan, "low": rounded[0], "high": rounded[1], "source": source.replace("{rows}", rows)}
    return _validated({**values, "notes": notes}, quotes[0][0])


def from_csv(text: str, sheet: Sheet) -> Imported:
    """Price seeds from a hand-kept CSV sheet whose columns are the fields of a price row (1:1). An empty
    cell is null; a blank provider, valid_from or retrieved_on takes the sheet's (``--provider``,
    ``--valid-from``, ``--retrieved-on`` or today), and a cell that contradicts a given flag is refused."""
    given = {"provider": sheet.provider, "valid_from": sheet.valid_from}
    required = [n for n, f in PriceSeed.model_fields.items() if f.is_required() and given.get(n) is None]
    result = Imported(prices=[], rows_read=0)
    seen: dict[tuple[Any, ...], int] = {}
    for line, row in _rows(text, required, FIELD_ORDER):
        result.rows_read += 1
        result.unstated = frozenset(CARRIED) - set(row)  # the columns the sheet lacks
        values: dict[str, Any] = {k: v for k, v in row.items() if v != ""}
        for name, flag in given.items():
            if flag is not None and values.setdefault(name, str(flag)) != str(flag):
                option = f"--{name.replace('_', '-')}"
                raise PriceImportError(f"line {line}: field '{name}': '{values[name]}' contradicts {option} {flag}")
        values.setdefault("retrieved_on", sheet.retrieved_on)
        seed = _validated(values, line)
        if sheet.providers and seed.provider not in sheet.providers:
            raise PriceImportError(
                f"line {line}: field 'provider': unknown provider '{seed.provider}' (add it to providers)"
            )
        if sheet.gpu_models and seed.gpu_model != "*" and seed.gpu_model not in sheet.gpu_models:
            raise PriceImportError(f"line {line}: field 'gpu_model': unknown GPU model '{seed.gpu_model}'")
        key = (*(getattr(seed, k) for k in PERIOD_KEY), seed.valid_from)
        if key in seen:
            raise PriceImportError(f"line {line}: the same price row (offer and valid_from) as line {seen[key]}")
        seen[key] = line
        result.prices.append(seed)
        result.lines.append(line)
    return result


__all__ = ["FIELD_ORDER", "STARRED", "WHEN_SET", "to_yaml"]
