"""Read-only catalog of the knowledge base, served from the in-memory snapshot (thin handlers)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from litestar import Controller, Request, Response, get
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException
from litestar.openapi.spec import Example
from litestar.params import Parameter, QueryParameter

from app.core.vocab import AvailabilityKind, AvailabilityScope
from app.domain.catalog import schemas as s
from app.domain.catalog.service import CatalogService, OfferQuery
from app.domain.shared.represent import CSV, Formats, Representation
from app.i18n import Lang, language
from app.kb.repositories import KnowledgeVersionRepository
from app.web.caching import conditional_get_middleware
from app.web.negotiation import rows_csv
from app.web.pagination import DEFAULT_LIMIT, Limit, Offset, window
from app.web.problems import COMMON_PROBLEMS
from app.web.spreadsheets import offers_workbook

OptionFilter = Annotated[str | None, Parameter(max_length=40, description="Option key, or * for general rows.")]
OFFERS = Formats(file="offers")


class CatalogController(Controller):
    path = "/v1"
    tags = ["catalog"]
    #: ETag, If-None-Match → 304 and Cache-Control for every catalog read
    middleware = [conditional_get_middleware]

    @get(
        "/options",
        operation_id="listOptions",
        opt={"scope": "catalog:read"},
        summary="The deployment options the loaded plugins provide",
        responses=COMMON_PROBLEMS,
    )
    async def list_options(
        self, request: Request[Any, Any, Any], catalog: NamedDependency[CatalogService]
    ) -> s.OptionList:
        return catalog.options(language(request.scope))

    @get(
        "/gpus",
        operation_id="listGpus",
        opt={"scope": "catalog:read"},
        summary="GPU models with their specifications and sources",
        responses=COMMON_PROBLEMS,
    )
    async def list_gpus(
        self, catalog: NamedDependency[CatalogService], limit: Limit = DEFAULT_LIMIT, offset: Offset = 0
    ) -> s.GpuList:
        return catalog.gpus(window(limit, offset))

    @get(
        "/gpus/{key:str}",
        operation_id="getGpu",
        opt={"scope": "catalog:read"},
        summary="One GPU model",
        responses=COMMON_PROBLEMS,
    )
    async def get_gpu(
        self,
        catalog: NamedDependency[CatalogService],
        key: Annotated[
            str, Parameter(max_length=40, description="A key from /v1/gpus.", examples=[Example(value="h100_sxm")])
        ],
    ) -> s.GpuRead:
        gpu = catalog.gpu(key)
        if gpu is None:
            raise NotFoundException(f"no GPU model '{key}'")
        return gpu

    @get(
        "/servers",
        operation_id="listServers",
        opt={"scope": "catalog:read"},
        summary="Server SKUs",
        responses=COMMON_PROBLEMS,
    )
    async def list_servers(
        self, catalog: NamedDependency[CatalogService], limit: Limit = DEFAULT_LIMIT, offset: Offset = 0
    ) -> s.ServerList:
        return catalog.servers(window(limit, offset))

    @get(
        "/prices",
        operation_id="listPrices",
        opt={"scope": "catalog:read"},
        summary="Price items, filtered; as_of keeps those valid that day",
        responses=COMMON_PROBLEMS,
    )
    async def list_prices(
        self,
        catalog: NamedDependency[CatalogService],
        option: OptionFilter = None,
        provider: Annotated[str | None, Parameter(max_length=60)] = None,
        region: Annotated[str | None, Parameter(max_length=40)] = None,
        item: Annotated[str | None, Parameter(max_length=40)] = None,
        as_of: Annotated[dt.date | None, Parameter(description="Only prices valid on this date.")] = None,
        limit: Limit = DEFAULT_LIMIT,
        offset: Offset = 0,
    ) -> s.PriceList:
        return catalog.prices(
            window(limit, offset), option=option, provider=provider, region=region, item=item, as_of=as_of
        )

    @get(
        "/offers",
        operation_id="listOffers",
        opt={"scope": "catalog:read"},
        summary="Offers: instance-hours, platform GPU-hours, servers and reservation discounts, filtered; "
        "CSV with Accept: text/csv",
        responses=COMMON_PROBLEMS,
    )
    async def list_offers(
        self,
        request: Request[Any, Any, Any],
        catalog: NamedDependency[CatalogService],
        option: OptionFilter = None,
        gpu_model: Annotated[str | None, Parameter(max_length=40, description="A key from /v1/gpus.")] = None,
        provider: Annotated[str | None, Parameter(max_length=60, description="A key from /v1/providers.")] = None,
        region: Annotated[str | None, Parameter(max_length=40)] = None,
        plan: Annotated[str | None, Parameter(max_length=24)] = None,
        as_of: Annotated[dt.date | None, Parameter(description="Only offers valid on this date.")] = None,
        stale_days: Annotated[
            int | None,
            Parameter(ge=1, le=36_500, description="Only offers whose newest row is older than this many days."),
        ] = None,
        limit: Limit = DEFAULT_LIMIT,
        offset: Offset = 0,
    ) -> Response[s.OfferList]:
        shown = Representation(request, OFFERS)
        today = catalog.advisor.today()
        query = OfferQuery(option, gpu_model, provider, region, plan, as_of, stale_days, today)
        return shown.answer(catalog.offers(window(limit, offset), query), _offers, day=as_of or today)

    @get(
        "/providers",
        operation_id="listProviders",
        opt={"scope": "catalog:read"},
        summary="Providers of the offers: clouds, GPU clouds, platforms, hardware channels",
        responses=COMMON_PROBLEMS,
    )
    async def list_providers(
        self,
        request: Request[Any, Any, Any],
        catalog: NamedDependency[CatalogService],
        kind: Annotated[str | None, Parameter(max_length=20)] = None,
        limit: Limit = DEFAULT_LIMIT,
        offset: Offset = 0,
    ) -> s.ProviderList:
        return catalog.providers(window(limit, offset), kind=kind, lang=language(request.scope))

    @get(
        "/regions",
        operation_id="listRegions",
        opt={"scope": "catalog:read"},
        summary="The region hierarchy: provider regions in countries, subdivisions, countries, continents, global",
        responses=COMMON_PROBLEMS,
    )
    async def list_regions(
        self,
        catalog: NamedDependency[CatalogService],
        kind: Annotated[
            str | None,
            Parameter(max_length=20, description="provider_region, subdivision, country, continent or global."),
        ] = None,
        parent: Annotated[
            str | None, Parameter(max_length=40, description="Only the regions directly under this one.")
        ] = None,
        limit: Limit = DEFAULT_LIMIT,
        offset: Offset = 0,
    ) -> s.RegionList:
        return catalog.regions(window(limit, offset), kind=kind, parent=parent)

    @get(
        "/availability-rules",
        operation_id="listAvailabilityRules",
        opt={"scope": "catalog:read"},
        summary="Export and import rules: GPU models unavailable, licensed or discouraged for a buyer or a place, "
        "with sources",
        responses=COMMON_PROBLEMS,
    )
    async def list_availability_rules(
        self,
        catalog: NamedDependency[CatalogService],
        gpu_model: Annotated[str | None, Parameter(max_length=40, description="A key from /v1/gpus.")] = None,
        jurisdiction: Annotated[
            str | None,
            Parameter(
                max_length=40,
                description="A key from /v1/regions: the rules that apply there (its own, those of every "
                "region it lies in and of the blocs it belongs to); global lies in no jurisdiction.",
            ),
        ] = None,
        binds: Annotated[
            AvailabilityScope | None,
            QueryParameter(
                name="scope",  # ``scope`` itself is the request's ASGI scope in a handler's signature
                description="Only rules that bind the buyer (buyer) or the place the hardware is (location).",
            ),
        ] = None,
        kind: Annotated[
            AvailabilityKind | None,
            Parameter(description="Only export rules (the supplier's country) or import rules (the buyer's)."),
        ] = None,
        as_of: Annotated[dt.date | None, Parameter(description="Only rules in force on this date.")] = None,
        limit: Limit = DEFAULT_LIMIT,
        offset: Offset = 0,
    ) -> s.AvailabilityRuleList:
        if jurisdiction is not None and not catalog.is_region(jurisdiction):
            # never an empty list: "no rule" must not be read off a misspelt jurisdiction
            raise NotFoundException(f"unknown jurisdiction '{jurisdiction}' (see /v1/regions)")
        return catalog.availability_rules(
            window(limit, offset), gpu_model=gpu_model, jurisdiction=jurisdiction, scope=binds, kind=kind, as_of=as_of
        )

    @get(
        "/exchange-rates",
        operation_id="listExchangeRates",
        opt={"scope": "catalog:read"},
        summary="Dated exchange rates to CNY; as_of gives the one in effect that day per currency",
        responses=COMMON_PROBLEMS,
    )
    async def list_exchange_rates(
        self,
        catalog: NamedDependency[CatalogService],
        as_of: Annotated[dt.date | None, Parameter(description="The rates in effect on this date.")] = None,
        base: Annotated[str | None, Parameter(pattern=r"^[A-Z]{3}$")] = None,
        quote: Annotated[str | None, Parameter(pattern=r"^[A-Z]{3}$")] = None,
        limit: Limit = DEFAULT_LIMIT,
        offset: Offset = 0,
    ) -> s.ExchangeRateList:
        return catalog.exchange_rates(window(limit, offset), as_of=as_of, base=base, quote=quote)

    @get(
        "/assumptions",
        operation_id="listAssumptions",
        opt={"scope": "catalog:read"},
        summary="Non-price parameters with sources and rationale",
        responses=COMMON_PROBLEMS,
    )
    async def list_assumptions(
        self,
        catalog: NamedDependency[CatalogService],
        option: OptionFilter = None,
        limit: Limit = DEFAULT_LIMIT,
        offset: Offset = 0,
    ) -> s.AssumptionList:
        return catalog.assumptions(window(limit, offset), option=option)

    @get(
        "/rules",
        operation_id="listRules",
        opt={"scope": "catalog:read"},
        summary="Scenario rules: conditions, effects and their sources",
        responses=COMMON_PROBLEMS,
    )
    async def list_rules(
        self,
        catalog: NamedDependency[CatalogService],
        option: OptionFilter = None,
        limit: Limit = DEFAULT_LIMIT,
        offset: Offset = 0,
    ) -> s.RuleList:
        return catalog.rules(window(limit, offset), option=option)

    @get(
        "/knowledge-version",
        operation_id="getKnowledgeVersion",
        opt={"scope": "catalog:read"},
        summary="The knowledge version being served",
        responses=COMMON_PROBLEMS,
    )
    async def knowledge_version(
        self,
        catalog: NamedDependency[CatalogService],
        knowledge_versions: NamedDependency[KnowledgeVersionRepository],
    ) -> s.KnowledgeVersionRead:
        return await catalog.knowledge_version(knowledge_versions)


def _offers(doc: s.OfferList, media: str, lang: Lang) -> bytes:
    """The offer rows as a CSV or an XLSX workbook (``media``)."""
    return rows_csv(doc.items) if media == CSV else offers_workbook(doc.items, lang)
