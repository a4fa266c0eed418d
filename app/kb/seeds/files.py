"""Reading seed files: every YAML file of a directory validated record by record, then the references
between records checked (servers to GPU models; prices to providers, servers, GPU models and regions;
the region hierarchy ending at global; availability rules to GPU models and jurisdictions; validity
periods that do not overlap). Nothing here touches the database."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from app.kb.seeds.records import (
    NATURAL_KEYS,
    SECTIONS,
    SEED_MODELS,
    AvailabilityRuleSeed,
    PriceSeed,
    RegionSeed,
    SeedError,
    SeedSet,
    ServerSeed,
    natural_key,
)
from app.sdk.vocab import GLOBAL

#: a price row tied to no region
ANY_REGION = "*"
#: the kind of region each kind lies in (a provider region in its country)
PARENT_KINDS = {
    "provider_region": "country",
    "subdivision": "country",
    "country": "continent",
    "continent": "global",
}


def read_seeds(path: Path) -> SeedSet:
    """Read and validate ``path`` (a directory of ``*.yaml`` files, or one file)."""
    files = sorted(path.glob("*.yaml")) + sorted(path.glob("*.yml")) if path.is_dir() else [path]
    if not files:
        raise SeedError(f"{path}: no seed files (*.yaml) found")
    seeds = SeedSet()
    where: dict[tuple[str, tuple[Any, ...]], str] = {}
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
            doc = yaml.safe_load(text)
            lines = _item_lines(text)
        except (OSError, yaml.YAMLError) as exc:
            raise SeedError(f"{file}: cannot be read as YAML: {exc}") from exc
        if doc is None:
            continue
        if not isinstance(doc, dict) or not set(doc) <= set(SECTIONS):
            raise SeedError(f"{file}: top level must be a mapping with sections {', '.join(SECTIONS)}")
        for section, items in doc.items():
            if not isinstance(items, list):
                raise SeedError(f"{file}: section '{section}' must be a list")
            for index, item in enumerate(items):
                line = lines.get(section, [])[index] if index < len(lines.get(section, [])) else None
                label = _record_label(section, index, item)
                at = f" (line {line})" if line else ""
                try:
                    record = SEED_MODELS[section].model_validate(item)
                except ValidationError as exc:
                    problems = "; ".join(_problem(e) for e in exc.errors())
                    raise SeedError(f"{file}: {section} {label}: {problems}{at}") from exc
                key = natural_key(section, record.model_dump())
                if (section, key) in where:
                    raise SeedError(f"{file}: {section} {label}: duplicates a record of {where[section, key]}{at}")
                where[section, key] = seeds.files[section, key] = str(file)
                if line:
                    seeds.lines[section, key] = line
                seeds.records[section].append(record)
    _check_references(seeds)
    return seeds


def _item_lines(text: str) -> dict[str, list[int]]:
    """The line (1-based) each record of each section starts on."""
    root = yaml.compose(text)
    found: dict[str, list[int]] = {}
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if isinstance(value, yaml.SequenceNode):
                found[str(key.value)] = [item.start_mark.line + 1 for item in value.value]
    return found


def _problem(error: Any) -> str:
    """One validation error as ``field '<name>': <message>``; a record-level check names its field itself."""
    loc = ".".join(str(p) for p in error["loc"])
    if loc:
        return f"field '{loc}': {error['msg']}"
    return str(error["msg"]).removeprefix("Value error, ")


def _record_label(section: str, index: int, item: Any) -> str:
    if isinstance(item, dict):
        parts = [str(item.get(k)) for k in NATURAL_KEYS[section] if item.get(k) is not None]
        if parts:
            return f"#{index + 1} ({'/'.join(parts)})"
    return f"#{index + 1}"


def _check_references(seeds: SeedSet) -> None:
    gpus = {r.key for r in seeds.records["gpu_models"]}  # type: ignore[attr-defined]
    servers = {r.key for r in seeds.records["servers"]}  # type: ignore[attr-defined]
    for s in seeds.records["servers"]:
        assert isinstance(s, ServerSeed)
        if s.gpu_model_key is not None and s.gpu_model_key not in gpus:
            raise SeedError(
                f"{seeds.where('servers', (s.key,))}servers {s.key}: field 'gpu_model_key': "
                f"unknown GPU model '{s.gpu_model_key}'"
            )
    providers = {r.key for r in seeds.records["providers"]}  # type: ignore[attr-defined]
    regions = _check_regions(seeds, providers)
    server_gpu = {r.key: r.gpu_model_key for r in seeds.records["servers"]}  # type: ignore[attr-defined]
    periods: dict[tuple[Any, ...], list[PriceSeed]] = {}
    for p in seeds.records["prices"]:
        assert isinstance(p, PriceSeed)
        where = f"{seeds.where('prices', natural_key('prices', p.model_dump()))}prices {p.option}/{p.item}/{p.subject}"
        if providers and p.provider not in providers:
            raise SeedError(f"{where}: field 'provider': unknown provider '{p.provider}' (add it to providers)")
        if gpus and p.gpu_model != "*" and p.gpu_model not in gpus:
            raise SeedError(f"{where}: field 'gpu_model': unknown GPU model '{p.gpu_model}'")
        if regions and p.region != ANY_REGION and p.region not in regions:
            line = seeds.line("prices", natural_key("prices", p.model_dump()))
            raise SeedError(f"{where}{line}: field 'region': unknown region '{p.region}' (add it to regions)")
        if p.item == "server_hardware":
            if p.subject not in servers:
                raise SeedError(f"{where}: field 'subject': unknown server '{p.subject}'")
            if (server_gpu[p.subject] or "*") != p.gpu_model:
                holds = server_gpu[p.subject] or "no named GPU"
                raise SeedError(f"{where}: field 'gpu_model': the server {p.subject} holds {holds}")
        periods.setdefault(
            (p.option, p.provider, p.item, p.subject, p.gpu_model, p.plan, p.region, p.currency), []
        ).append(p)
    for key, rows in periods.items():
        rows.sort(key=lambda r: r.valid_from)
        for before, after in itertools.pairwise(rows):
            if before.valid_to is None or before.valid_to > after.valid_from:
                raise SeedError(
                    f"{seeds.where('prices', natural_key('prices', before.model_dump()))}"
                    f"prices {'/'.join(key)}: field 'valid_to': the period from {before.valid_from} "
                    f"overlaps the one from {after.valid_from} (close it with valid_to: {after.valid_from})"
                )


def _check_regions(seeds: SeedSet, providers: set[str]) -> dict[str, RegionSeed]:
    """The regions by key, each known to lie in a region of the kind above it, its chain of parents
    ending at ``global``; and every availability rule's GPU model and jurisdiction known, its periods
    not overlapping."""
    regions: dict[str, RegionSeed] = {}
    for r in seeds.records["regions"]:
        assert isinstance(r, RegionSeed)
        regions[r.key] = r

    def at(r: RegionSeed) -> str:
        return f"{seeds.where('regions', (r.key,))}regions {r.key}{seeds.line('regions', (r.key,))}"

    for r in regions.values():
        if r.provider is not None and providers and r.provider not in providers:
            raise SeedError(f"{at(r)}: field 'provider': unknown provider '{r.provider}' (add it to providers)")
        if r.parent is None:
            continue
        if r.parent not in regions:
            raise SeedError(f"{at(r)}: field 'parent': unknown region '{r.parent}' (add it to regions)")
    for r in regions.values():
        chain = [r.key]
        while (up := regions[chain[-1]].parent) is not None and up not in chain:
            chain.append(up)
        if chain[-1] != GLOBAL:
            shown = " → ".join([*chain, up] if up is not None else chain)
            raise SeedError(f"{at(r)}: field 'parent': the chain {shown} does not end at {GLOBAL}")
        parent = regions[r.parent] if r.parent is not None else None
        if parent is not None and parent.kind != PARENT_KINDS[r.kind]:
            raise SeedError(
                f"{at(r)}: field 'parent': a {r.kind} lies in a {PARENT_KINDS[r.kind]}, "
                f"'{parent.key}' is a {parent.kind}"
            )
    gpus = {g.key for g in seeds.records["gpu_models"]}  # type: ignore[attr-defined]
    periods: dict[tuple[str, str], list[AvailabilityRuleSeed]] = {}
    for a in seeds.records["availability_rules"]:
        assert isinstance(a, AvailabilityRuleSeed)
        key = natural_key("availability_rules", a.model_dump())
        where = (
            f"{seeds.where('availability_rules', key)}availability_rules {a.gpu_model}/{a.jurisdiction}/"
            f"{a.valid_from}{seeds.line('availability_rules', key)}"
        )
        if gpus and a.gpu_model not in gpus:
            raise SeedError(f"{where}: field 'gpu_model': unknown GPU model '{a.gpu_model}'")
        if regions and a.jurisdiction not in regions:
            raise SeedError(f"{where}: field 'jurisdiction': unknown region '{a.jurisdiction}' (add it to regions)")
        periods.setdefault((a.gpu_model, a.jurisdiction), []).append(a)
    for (gpu, place), rules in periods.items():
        rules.sort(key=lambda r: r.valid_from)
        for before, after in itertools.pairwise(rules):
            if before.valid_to is None or before.valid_to > after.valid_from:
                key = natural_key("availability_rules", before.model_dump())
                raise SeedError(
                    f"{seeds.where('availability_rules', key)}availability_rules {gpu}/{place}"
                    f"{seeds.line('availability_rules', key)}: field 'valid_to': the period from "
                    f"{before.valid_from} overlaps the one from {after.valid_from} "
                    f"(close it with valid_to: {after.valid_from})"
                )
    return regions


def region_depths(parents: dict[str, str | None]) -> dict[str, int]:
    """How far each region lies below the root of its chain (0 for global), given each region's parent:
    regions are written parents first and retired children first."""
    depths: dict[str, int] = {}
    for key in parents:
        depth, up = 0, parents[key]
        while up is not None and depth <= len(parents):  # bounded: a cycle is refused elsewhere
            depth, up = depth + 1, parents.get(up)
        depths[key] = depth
    return depths
