"""``GET /explorer``: a hand-written page (HTML, JS, CSS in ``static/``) that asks for an API key,
keeps it in the browser's session storage and calls the API with it as ``X-API-Key``. The page and
its files are open (``app.web.public``); everything it shows comes from the API.

The page's words are the ``[explorer]`` codes of the message catalogs, both languages inlined into
the page with the vocabularies of the profile's fields and the bounds of its numbers (the request
models' own constraints, which the OpenAPI document states too), so the page needs no request to start.
The quote form's columns (a private price row) take theirs from the seed files' price row, which the
price book's rows are validated as.
"""

from __future__ import annotations

import json
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import get_args

import annotated_types
from litestar import Controller, MediaType, Response, get
from litestar.datastructures import CacheControlHeader
from litestar.di import NamedDependency
from litestar.router import Router
from litestar.static_files import create_static_files_router
from pydantic import BaseModel

from app.core.vocab import (
    BILLINGS,
    INTERCONNECTS,
    RESIDENCIES,
    SOURCE_QUALITIES,
    Currency,
    DataSecurity,
    OpsTeam,
    Precision,
    PriceUnit,
)
from app.domain.capacity.schemas import OwnedCreate
from app.domain.catalog.service import CatalogService
from app.domain.planning.schemas import TrainingPlanCreate
from app.domain.shared.demand import GrowthCreate, PhaseCreate
from app.domain.shared.schemas import ProfileCreate, Weights
from app.i18n import DEFAULT_LANG, LANGUAGES, catalog
from app.kb.seeds.records import PriceSeed

STATIC = Path(__file__).parent / "static"
ASSETS_PATH = "/explorer/assets"
#: what a page's inlined JSON must not contain as is (it would end the script element)
_SCRIPT_END = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def number_bounds(model: type[BaseModel]) -> dict[str, dict[str, float | str]]:
    """``min``, ``max`` and ``step`` of each number field of ``model``, from its constraints (``ge``,
    ``le``; ``step`` 1 for an integer, ``any`` else): the bounds the API checks, as an input states them."""
    found: dict[str, dict[str, float | str]] = {}
    for name, info in model.model_fields.items():
        kinds = set(get_args(info.annotation)) or {info.annotation}
        if not kinds & {int, float}:
            continue
        bounds: dict[str, float | str] = {"step": 1 if float not in kinds else "any"}
        for constraint in info.metadata:
            if isinstance(constraint, annotated_types.Ge):
                bounds["min"] = constraint.ge  # type: ignore[assignment]
            elif isinstance(constraint, annotated_types.Le):
                bounds["max"] = constraint.le  # type: ignore[assignment]
        found[name] = bounds
    return found


def row_bounds(model: type[BaseModel]) -> dict[str, dict[str, float | str]]:
    """``min``, ``max`` and ``step`` of each number column of a seed record (``Decimal`` too; an integer's
    ``gt`` is its ``min`` + 1), as an input states them."""
    found: dict[str, dict[str, float | str]] = {}
    for name, info in model.model_fields.items():
        kinds = set(get_args(info.annotation)) or {info.annotation}
        if not kinds & {int, float, Decimal}:
            continue
        whole = int in kinds
        bounds: dict[str, float | str] = {"step": 1 if whole else "any"}
        for constraint in info.metadata:
            if isinstance(constraint, annotated_types.Ge):
                bounds["min"] = float(constraint.ge)  # type: ignore[arg-type]
            elif isinstance(constraint, annotated_types.Gt):
                bounds["min"] = float(constraint.gt) + (1 if whole else 0)  # type: ignore[arg-type]
            elif isinstance(constraint, annotated_types.Le):
                bounds["max"] = float(constraint.le)  # type: ignore[arg-type]
        found[name] = bounds
    return found


def boot_data(rental_plans: tuple[str, ...]) -> dict[str, object]:
    """What the page starts with: its messages in every language, the profile's vocabularies (the
    plans those the loaded options declare), and the bounds of every number it asks for."""
    return {
        "languages": list(LANGUAGES),
        "default_language": DEFAULT_LANG,
        "messages": {
            lang: {k[len("explorer.") :]: v for k, v in catalog(lang).items() if k.startswith("explorer.")}
            # the options' names, shared with the API's answers (option.<key>.name)
            | {
                k[: -len(".name")]: v
                for k, v in catalog(lang).items()
                if k.startswith("option.") and k.endswith(".name")
            }
            # how a capacity plan's segment is had, shared with its chart (chart.capacity.acquired.<way>)
            | {
                k[len("chart.capacity.") :]: v
                for k, v in catalog(lang).items()
                if k.startswith("chart.capacity.acquired.")
            }
            for lang in LANGUAGES
        },
        "vocab": {
            "ops_team": list(get_args(OpsTeam)),
            "data_security": list(get_args(DataSecurity)),
            "rental_plan": list(rental_plans),
            "currency": list(get_args(Currency)),
            "precision": list(get_args(Precision)),
            # a quote's columns (the seed files' price row)
            "price_unit": list(get_args(PriceUnit)),
            "interconnect": list(INTERCONNECTS),
            "residency": list(RESIDENCIES),
            "source_quality": list(SOURCE_QUALITIES),
            "billing": list(BILLINGS),
        },
        "bounds": {
            "profile": number_bounds(ProfileCreate),
            "weights": number_bounds(Weights),
            "phase": number_bounds(PhaseCreate),
            "growth": number_bounds(GrowthCreate),
            "owned": number_bounds(OwnedCreate),
            "training": number_bounds(TrainingPlanCreate),
            "quote": row_bounds(PriceSeed),
        },
        "assets": ASSETS_PATH,
    }


@cache
def page(rental_plans: tuple[str, ...]) -> str:
    """The page, its boot data inlined (built once per process and set of plans)."""
    boot = json.dumps(boot_data(rental_plans), ensure_ascii=False, separators=(",", ":")).translate(_SCRIPT_END)
    return (STATIC / "explorer.html").read_text(encoding="utf-8").replace("__BOOT__", boot)


class ExplorerController(Controller):
    path = "/explorer"
    include_in_schema = False

    @get("/", media_type=MediaType.HTML, cache_control=CacheControlHeader(no_cache=True))
    async def explorer(self, catalog: NamedDependency[CatalogService]) -> Response[str]:
        return Response(page(catalog.advisor.rental_plans()), media_type=MediaType.HTML)


def assets_router() -> Router:
    """The page's script and style sheet."""
    return create_static_files_router(
        path=ASSETS_PATH,
        directories=[STATIC],
        include_in_schema=False,
        name="explorer-assets",
        cache_control=CacheControlHeader(no_cache=True),
    )
