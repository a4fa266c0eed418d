"""Reading seed files: every YAML file of a directory validated record by record, then the references
between records checked (servers to GPU models; prices to providers, servers, GPU models and regions;
the region hierarchy ending at global; availability rules to GPU models and jurisdictions; validity
periods that do not overlap). Nothing here touches the database."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from app.core.vocab import GLOBAL
from app.kb.seeds.problems import SeedError, SeedProblem, validation_problems
from app.kb.seeds.records import (
    NATURAL_KEYS,
    SECTIONS,
    SEED_MODELS,
    AvailabilityRuleSeed,
    PriceSeed,
    SeedSet,
    ServerSeed,
    natural_key,
)
from app.kb.seeds.region_records import RegionSeed

#: a price row tied to no region
ANY_REGION = "*"
#: the kind of region each kind lies in (a provider region in its country)
PARENT_KINDS = {
    "provider_region": "country",
    "subdivision": "country",
    "country": "continent",
    "continent": "global",
    "bloc": "global",
}
#: what an availability rule may name as its jurisdiction (never global, a continent or a provider's region)
JURISDICTION_KINDS = frozenset({"country", "bloc"})


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a date that is no day of the calendar (``2026-13-05``) stays the
    text it is written as: the record's validation then names its file, line and field, where PyYAML
    would raise a bare ``ValueError`` naming none."""


def _timestamp(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)
    except ValueError:
        return loader.construct_scalar(node)


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)


def seed_files(path: Path) -> list[Path]:
    """The seed files ``read_seeds`` reads at ``path``, in the order it reads them."""
    return sorted(path.glob("*.yaml")) + sorted(path.glob("*.yml")) if path.is_dir() else [path]


def read_seeds(path: Path) -> SeedSet:
    """Read and validate ``path`` (a directory of ``*.yaml`` files, or one file). Every record of every file
    is validated, then (when all are valid) the references between them; a ``SeedError`` lists every
    problem found, each with its file, line, record and field."""
    files = seed_files(path)
    if not files:
        raise SeedError(SeedProblem("no seed files (*.yaml) found", file=str(path)))
    seeds = SeedSet()
    problems: list[SeedProblem] = []
    for file in files:
        problems += _read_file(file, seeds)
    if problems:
        raise SeedError(*problems)
    problems = _check_references(seeds)
    if problems:
        raise SeedError(*problems)
    return seeds


def _parse(file: Path) -> tuple[Any, yaml.Node | None] | SeedProblem:
    """A file's document and its node tree (for the lines), or what keeps it from being read."""
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        return SeedProblem(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=str(file), line=line)
    except OSError as exc:
        return SeedProblem(f"cannot be read: {exc.strerror or exc}", file=str(file))
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        return (loader.construct_document(root) if root is not None else None), root
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        said = ", ".join(str(x) for x in (exc.context, exc.problem) if x)
        at = f", column {mark.column + 1}" if mark is not None else ""
        return SeedProblem(f"not YAML: {said}{at}", file=str(file), line=mark.line + 1 if mark else None)
    except (yaml.YAMLError, ValueError) as exc:
        return SeedProblem(f"not YAML: {exc}", file=str(file))
    finally:
        loader.dispose()


def _read_file(file: Path, seeds: SeedSet) -> list[SeedProblem]:
    """Validate every record of one file into ``seeds``; the problems found."""
    parsed = _parse(file)
    if isinstance(parsed, SeedProblem):
        return [parsed]
    doc, root = parsed
    if doc is None:
        return []
    if not isinstance(doc, dict) or not isinstance(root, yaml.MappingNode):
        line = root.start_mark.line + 1 if root is not None else None
        return [SeedProblem(f"a seed file is a mapping of sections ({', '.join(SECTIONS)})", file=str(file), line=line)]
    nodes = {str(key.value): value for key, value in root.value}
    keys = {str(key.value): key.start_mark.line + 1 for key, value in root.value}
    problems: list[SeedProblem] = []
    for section, items in doc.items():
        at = SeedProblem("", file=str(file), line=keys.get(str(section)), section=str(section))
        if section not in SECTIONS:
            problems.append(replace(at, message=f"unknown section; the sections are {', '.join(SECTIONS)}"))
            continue
        if not isinstance(items, list):
            problems.append(replace(at, message="a section is a list of records, each starting with '- '"))
            continue
        node = nodes.get(section)
        lines = [item.start_mark.line + 1 for item in node.value] if isinstance(node, yaml.SequenceNode) else []
        for index, item in enumerate(items):
            line = lines[index] if index < len(lines) else None
            where: dict[str, Any] = {"file": str(file), "line": line, "section": section}
            where["record"] = _record_label(section, index, item)
            model = SEED_MODELS[section]
            try:
                record = model.model_validate(item)
            except ValidationError as exc:
                problems += validation_problems(exc, model.model_fields, **where)
                continue
            key = natural_key(section, record.model_dump())
            if (section, key) in seeds.files:
                first = seeds.files[section, key] + seeds.line(section, key).replace(" (", ", ").rstrip(")")
                fields = ", ".join(NATURAL_KEYS[section])
                problems.append(SeedProblem(f"duplicates the record of {first} (the same {fields})", **where))
                continue
            # a price of several regions is one row per region once loaded: each is found at the record's line
            loaded = [key, *(natural_key(section, one.model_dump()) for one in _each_region(record))]
            for each in dict.fromkeys(loaded):
                seeds.files[section, each] = str(file)
                if line:
                    seeds.lines[section, each] = line
            seeds.records[section].append(record)
    return problems


def _places(p: PriceSeed) -> list[str]:
    """The regions a price row names: its list, else its one region."""
    return list(p.regions) if p.regions else [p.region or ANY_REGION]


def _each_region(record: Any) -> list[Any]:
    """A price record as loaded, one row per region (``PriceSeed.each_region``); any other record as it is."""
    return record.each_region() if isinstance(record, PriceSeed) else [record]


def _record_label(section: str, index: int, item: Any) -> str:
    if isinstance(item, dict):
        parts = [str(item.get(k)) for k in NATURAL_KEYS[section] if item.get(k) is not None]
        if parts:
            return f"#{index + 1} ({'/'.join(parts)})"
    return f"#{index + 1}"


def _at(seeds: SeedSet, section: str, key: tuple[Any, ...], record: str) -> dict[str, Any]:
    """A record's location, as a ``SeedProblem`` takes it."""
    return {**seeds.locate(section, key), "section": section, "record": record}


def _check_references(seeds: SeedSet) -> list[SeedProblem]:
    """What the records say of each other: every key they name exists, periods do not overlap."""
    problems: list[SeedProblem] = []
    gpus = {r.key for r in seeds.records["gpu_models"]}  # type: ignore[attr-defined]
    servers = {r.key for r in seeds.records["servers"]}  # type: ignore[attr-defined]
    for s in seeds.records["servers"]:
        assert isinstance(s, ServerSeed)
        if s.gpu_model_key is not None and s.gpu_model_key not in gpus:
            at = _at(seeds, "servers", (s.key,), s.key)
            problems.append(SeedProblem(f"unknown GPU model '{s.gpu_model_key}'", field=("gpu_model_key",), **at))
    providers = {r.key for r in seeds.records["providers"]}  # type: ignore[attr-defined]
    regions = _check_regions(seeds, providers, problems)
    server_gpu = {r.key: r.gpu_model_key for r in seeds.records["servers"]}  # type: ignore[attr-defined]
    periods: dict[tuple[Any, ...], list[PriceSeed]] = {}
    for p in seeds.records["prices"]:
        assert isinstance(p, PriceSeed)
        at = _at(seeds, "prices", natural_key("prices", p.model_dump()), f"{p.option}/{p.item}/{p.subject}")
        if providers and p.provider not in providers:
            problems.append(
                SeedProblem(f"unknown provider '{p.provider}' (add it to providers)", field=("provider",), **at)
            )
        elif gpus and p.gpu_model != "*" and p.gpu_model not in gpus:
            problems.append(SeedProblem(f"unknown GPU model '{p.gpu_model}'", field=("gpu_model",), **at))
        elif regions and (unknown := [r for r in _places(p) if r != ANY_REGION and r not in regions]):
            name = "regions" if p.regions else "region"
            problems.append(SeedProblem(f"unknown region '{unknown[0]}' (add it to regions)", field=(name,), **at))
        elif regions and any(regions[r].kind == "bloc" for r in _places(p) if r in regions):
            problems.append(
                SeedProblem(
                    "a bloc is no place hardware is in: name the regions the price holds in",
                    field=("regions" if p.regions else "region",),
                    **at,
                )
            )
        elif p.item == "server_hardware" and p.subject not in servers:
            problems.append(SeedProblem(f"unknown server '{p.subject}'", field=("subject",), **at))
        elif p.item == "server_hardware" and (server_gpu[p.subject] or "*") != p.gpu_model:
            holds = server_gpu[p.subject] or "no named GPU"
            problems.append(SeedProblem(f"the server {p.subject} holds {holds}", field=("gpu_model",), **at))
        for one in p.each_region():  # a price of several regions: its periods per region
            periods.setdefault(
                (one.option, one.provider, one.item, one.subject, one.gpu_model, one.plan, one.region, one.currency),
                [],
            ).append(one)
    for key, rows in periods.items():
        rows.sort(key=lambda r: r.valid_from)
        for before, after in itertools.pairwise(rows):
            if before.valid_to is None or before.valid_to > after.valid_from:
                problems.append(_overlap(seeds, "prices", "/".join(key), before.model_dump(), after.model_dump()))
    return problems


def _overlap(seeds: SeedSet, section: str, record: str, before: dict[str, Any], after: dict[str, Any]) -> SeedProblem:
    """Two periods of one offer (or one availability rule) that overlap, located at the earlier."""
    later = seeds.locate(section, natural_key(section, after))
    there = f" at {later['file']}, line {later['line']}" if later["file"] and later["line"] else ""
    return SeedProblem(
        f"the period from {before['valid_from']} overlaps the one from {after['valid_from']}{there}: "
        f"close it with valid_to: {after['valid_from']}",
        field=("valid_to",),
        **_at(seeds, section, natural_key(section, before), record),
    )


def _check_regions(seeds: SeedSet, providers: set[str], problems: list[SeedProblem]) -> dict[str, RegionSeed]:
    """The regions by key, each known to lie in a region of the kind above it, its chain of parents
    ending at ``global``; and every availability rule's GPU model and jurisdiction known, its periods
    not overlapping. What is wrong is added to ``problems``."""
    regions: dict[str, RegionSeed] = {}
    for r in seeds.records["regions"]:
        assert isinstance(r, RegionSeed)
        regions[r.key] = r

    def at(r: RegionSeed, field: str) -> dict[str, Any]:
        return {**_at(seeds, "regions", (r.key,), r.key), "field": (field,)}

    broken = set()
    for r in regions.values():
        if r.provider is not None and providers and r.provider not in providers:
            problems.append(SeedProblem(f"unknown provider '{r.provider}' (add it to providers)", **at(r, "provider")))
        if r.parent is not None and r.parent not in regions:
            problems.append(SeedProblem(f"unknown region '{r.parent}' (add it to regions)", **at(r, "parent")))
            broken.add(r.key)
    cycles: set[str] = set()
    for r in regions.values():
        chain = [r.key]
        while (up := regions[chain[-1]].parent) is not None and up not in chain and up in regions:
            chain.append(up)
        if broken & set(chain):
            continue  # its chain runs into an unknown region, said above
        if chain[-1] != GLOBAL:
            if up is not None and up not in cycles and up == r.key:  # once per cycle, not per region above it
                cycles.update(chain)
                shown = " → ".join([*chain, up])
                problems.append(SeedProblem(f"the chain {shown} does not end at {GLOBAL}", **at(r, "parent")))
            continue
        parent = regions[r.parent] if r.parent is not None else None
        if parent is not None and parent.kind != PARENT_KINDS[r.kind]:
            problems.append(
                SeedProblem(
                    f"a {r.kind} lies in a {PARENT_KINDS[r.kind]}, '{parent.key}' is a {parent.kind}",
                    **at(r, "parent"),
                )
            )
    for r in regions.values():  # a bloc's members are countries (each keeps its one chain of parents)
        strangers = [k for k in r.members or () if k not in regions or regions[k].kind != "country"]
        if strangers:
            problems.append(SeedProblem(f"'{strangers[0]}' is no country of the regions", **at(r, "members")))
    gpus = {g.key for g in seeds.records["gpu_models"]}  # type: ignore[attr-defined]
    periods: dict[tuple[str, str], list[AvailabilityRuleSeed]] = {}
    for a in seeds.records["availability_rules"]:
        assert isinstance(a, AvailabilityRuleSeed)
        where = _at(seeds, "availability_rules", natural_key("availability_rules", a.model_dump()), "")
        where["record"] = f"{a.gpu_model}/{a.jurisdiction}/{a.valid_from}"
        if gpus and a.gpu_model not in gpus:
            problems.append(SeedProblem(f"unknown GPU model '{a.gpu_model}'", field=("gpu_model",), **where))
        elif regions and a.jurisdiction not in regions:
            problems.append(
                SeedProblem(f"unknown region '{a.jurisdiction}' (add it to regions)", field=("jurisdiction",), **where)
            )
        elif regions and (kind := regions[a.jurisdiction].kind) not in JURISDICTION_KINDS:
            text = f"'{a.jurisdiction}' is a {kind}, not a jurisdiction: a rule names a country or bloc"
            problems.append(SeedProblem(text, field=("jurisdiction",), **where))
        periods.setdefault((a.gpu_model, f"{a.jurisdiction}/{a.kind}"), []).append(a)
    for (gpu, place), rules in periods.items():
        rules.sort(key=lambda r: r.valid_from)
        for before, after in itertools.pairwise(rules):
            if before.valid_to is None or before.valid_to > after.valid_from:
                problems.append(
                    _overlap(seeds, "availability_rules", f"{gpu}/{place}", before.model_dump(), after.model_dump())
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
