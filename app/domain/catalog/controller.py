"""Read-only catalog of the knowledge base, served from the in-memory snapshot (thin handlers)."""

from __future__ import annotations

import datetime as dt
from functools import partial
from typing import Annotated, Any

from litestar import Controller, Request, Response
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException
from litestar.openapi.spec import Example
from litestar.params import Parameter, QueryParameter

from app.core.vocab import AvailabilityKind, AvailabilityScope
from app.domain.catalog import schemas as s
from app.domain.catalog.service import CatalogService, OfferQuery
from app.domain.shared.represent import CSV, Formats, Representation
from app.domain.shared.routes import PAGING, Page, reading
from app.i18n import Lang, language
from app.kb.repositories import KnowledgeVersionRepository
from app.web.caching import conditional_get_middleware
from app.web.negotiation import rows_csv
from app.web.spreadsheets import offers_workbook

Catalog = NamedDependency[CatalogService]
GpuKey = Annotated[
    str, Parameter(max_length=40, description="A key from /v1/gpus.", examples=[Example(value="h100_sxm")])
]
OptionFilter = Annotated[str | None, Parameter(max_length=40, description="Option key, or * for general rows.")]
OFFERS = Formats(file="offers")
#: every catalog read: the scope it needs and the problems it may answer
_read = partial(reading, scope="catalog:read")


class CatalogController(Controller):
    path = "/v1"
    tags = ["catalog"]
    #: ETag, If-None-Match → 304 and Cache-Control for every catalog read
    middleware = [conditional_get_middleware]
    #: ``page``: a list's ``limit`` and ``offset``
    dependencies = PAGING

    @_read("/options", operation_id="listOptions", summary="The deployment options the loaded plugins provide")
    async def list_options(self, request: Request[Any, Any, Any], catalog: Catalog) -> s.OptionList:
        return catalog.options(language(request.scope))

    @_read("/gpus", operation_id="listGpus", summary="GPU models with their specifications and sources")
    async def list_gpus(self, catalog: Catalog, page: Page) -> s.GpuList:
        return catalog.gpus(page)

    @_read("/gpus/{key:str}", operation_id="getGpu", summary="One GPU model")
    async def get_gpu(self, catalog: Catalog, key: GpuKey) -> s.GpuRead:
        gpu = catalog.gpu(key)
        if gpu is None:
            raise NotFoundException(f"no GPU model '{key}'")
        return gpu

    @_read("/servers", operation_id="listServers", summary="Server SKUs")
    async def list_servers(self, catalog: Catalog, page: Page) -> s.ServerList:
        return catalog.servers(page)

    @_read("/prices", operation_id="listPrices", summary="Price items, filtered; as_of keeps those valid that day")
    async def list_prices(
        self,
        catalog: Catalog,
        option: OptionFilter = None,
        provider: Annotated[str | None, Parameter(max_length=60)] = None,
        region: Annotated[str | None, Parameter(max_length=40)] = None,
        item: Annotated[str | None, Parameter(max_length=40)] = None,
        as_of: Annotated[dt.date | None, Parameter(description="Only prices valid on this date.")] = None,
        *,
        page: Page,
    ) -> s.PriceList:
        return catalog.prices(page, option=option, provider=provider, region=region, item=item, as_of=as_of)

    @_read(
        "/offers",
        operation_id="listOffers",
        summary="Offers: instance-hours, platform GPU-hours, servers and reservation discounts, filtered; "
        "CSV with Accept: text/csv",
    )
    async def list_offers(
        self,
        request: Request[Any, Any, Any],
        catalog: Catalog,
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
        *,
        page: Page,
    ) -> Response[s.OfferList]:
        shown = Representation(request, OFFERS)
        today = catalog.advisor.today()
        query = OfferQuery(option, gpu_model, provider, region, plan, as_of, stale_days, today)
        return shown.answer(catalog.offers(page, query), _offers, day=as_of or today)

    @_read(
        "/providers",
        operation_id="listProviders",
        summary="Providers of the offers: clouds, GPU clouds, platforms, hardware channels",
    )
    async def list_providers(
        self,
        request: Request[Any, Any, Any],
        catalog: Catalog,
        kind: Annotated[str | None, Parameter(max_length=20)] = None,
        *,
        page: Page,
    ) -> s.ProviderList:
        return catalog.providers(page, kind=kind, lang=language(request.scope))

    @_read(
        "/regions",
        operation_id="listRegions",
        summary="The region hierarchy: provider regions in countries, subdivisions, countries, continents, global",
    )
    async def list_regions(
        self,
        catalog: Catalog,
        kind: Annotated[
            str | None,
            Parameter(max_length=20, description="provider_region, subdivision, country, continent or global."),
        ] = None,
        parent: Annotated[
            str | None, Parameter(max_length=40, description="Only the regions directly under this one.")
        ] = None,
        *,
        page: Page,
    ) -> s.RegionList:
        return catalog.regions(page, kind=kind, parent=parent)

    @_read(
        "/availability-rules",
        operation_id="listAvailabilityRules",
        summary="Export and import rules: GPU models unavailable, licensed or discouraged for a buyer or a place, "
        "with sources",
    )
    async def list_availability_rules(
        self,
        catalog: Catalog,
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
        *,
        page: Page,
    ) -> s.AvailabilityRuleList:
        if jurisdiction is not None and not catalog.is_region(jurisdiction):
            # never an empty list: "no rule" must not be read off a misspelt jurisdiction
            raise NotFoundException(f"unknown jurisdiction '{jurisdiction}' (see /v1/regions)")
        return catalog.availability_rules(
            page, gpu_model=gpu_model, jurisdiction=jurisdiction, scope=binds, kind=kind, as_of=as_of
        )

    @_read(
        "/exchange-rates",
        operation_id="listExchangeRates",
        summary="Dated exchange rates to CNY; as_of gives the one in effect that day per currency",
    )
    async def list_exchange_rates(
        self,
        catalog: Catalog,
        as_of: Annotated[dt.date | None, Parameter(description="The rates in effect on this date.")] = None,
        base: Annotated[str | None, Parameter(pattern=r"^[A-Z]{3}$")] = None,
        quote: Annotated[str | None, Parameter(pattern=r"^[A-Z]{3}$")] = None,
        *,
        page: Page,
    ) -> s.ExchangeRateList:
        return catalog.exchange_rates(page, as_of=as_of, base=base, quote=quote)

    @_read("/assumptions", operation_id="listAssumptions", summary="Non-price parameters with sources and rationale")
    async def list_assumptions(self, catalog: Catalog, option: OptionFilter = None, *, page: Page) -> s.AssumptionList:
        return catalog.assumptions(page, option=option)

    @_read("/rules", operation_id="listRules", summary="Scenario rules: conditions, effects and their sources")
    async def list_rules(self, catalog: Catalog, option: OptionFilter = None, *, page: Page) -> s.RuleList:
        return catalog.rules(page, option=option)

    @_read("/knowledge-version", operation_id="getKnowledgeVersion", summary="The knowledge version being served")
    async def knowledge_version(
        self, catalog: Catalog, knowledge_versions: NamedDependency[KnowledgeVersionRepository]
    ) -> s.KnowledgeVersionRead:
        return await catalog.knowledge_version(knowledge_versions)


def _offers(doc: s.OfferList, media: str, lang: Lang) -> bytes:
    """The offer rows as a CSV or an XLSX workbook (``media``)."""
    return rows_csv(doc.items) if media == CSV else offers_workbook(doc.items, lang)
