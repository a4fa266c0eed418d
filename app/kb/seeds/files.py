"""Reading seed files: every YAML file of a directory validated record by record, then the references
between records checked (servers to GPU models, prices to providers, servers and GPU models, validity
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
    PriceSeed,
    SeedError,
    SeedSet,
    ServerSeed,
    natural_key,
)


def read_seeds(path: Path) -> SeedSet:
    """Read and validate ``path`` (a directory of ``*.yaml`` files, or one file)."""
    files = sorted(path.glob("*.yaml")) + sorted(path.glob("*.yml")) if path.is_dir() else [path]
    if not files:
        raise SeedError(f"{path}: no seed files (*.yaml) found")
    seeds = SeedSet()
    where: dict[tuple[str, tuple[Any, ...]], str] = {}
    for file in files:
        try:
            doc = yaml.safe_load(file.read_text(encoding="utf-8"))
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
                label = _record_label(section, index, item)
                try:
                    record = SEED_MODELS[section].model_validate(item)
                except ValidationError as exc:
                    problems = "; ".join(_problem(e) for e in exc.errors())
                    raise SeedError(f"{file}: {section} {label}: {problems}") from exc
                key = natural_key(section, record.model_dump())
                if (section, key) in where:
                    raise SeedError(f"{file}: {section} {label}: duplicates a record of {where[section, key]}")
                where[section, key] = seeds.files[section, key] = str(file)
                seeds.records[section].append(record)
    _check_references(seeds)
    return seeds


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
    server_gpu = {r.key: r.gpu_model_key for r in seeds.records["servers"]}  # type: ignore[attr-defined]
    periods: dict[tuple[Any, ...], list[PriceSeed]] = {}
    for p in seeds.records["prices"]:
        assert isinstance(p, PriceSeed)
        where = f"{seeds.where('prices', natural_key('prices', p.model_dump()))}prices {p.option}/{p.item}/{p.subject}"
        if providers and p.provider not in providers:
            raise SeedError(f"{where}: field 'provider': unknown provider '{p.provider}' (add it to providers)")
        if gpus and p.gpu_model != "*" and p.gpu_model not in gpus:
            raise SeedError(f"{where}: field 'gpu_model': unknown GPU model '{p.gpu_model}'")
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
