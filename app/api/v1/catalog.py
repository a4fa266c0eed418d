"""Read-only catalog of the knowledge base, served from the in-memory snapshot."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from typing import Annotated, Any, TypeVar

from litestar import Controller, get
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncSession

from app.api import schemas as s
from app.api.caching import conditional_get_middleware
from app.api.errors import COMMON_PROBLEMS
from app.kb import snapshot
from app.services import Advisor, KnowledgeUnavailable

T = TypeVar("T")
Limit = Annotated[int, Parameter(ge=1, le=500, description="Items per page.")]
Offset = Annotated[int, Parameter(ge=0, le=1_000_000, description="Items to skip.")]
OptionFilter = Annotated[str | None, Parameter(max_length=40, description="Option key, or * for general rows.")]


def _shallow(row: Any) -> dict[str, Any]:
    """A snapshot row's fields (``dataclasses.asdict`` would deep-copy every value)."""
    return {f.name: getattr(row, f.name) for f in dataclasses.fields(row)}


def _page(items: Sequence[T], limit: int, offset: int) -> list[T]:
    return list(items[offset : offset + limit])


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
    async def list_options(self, advisor: NamedDependency[Advisor]) -> s.OptionList:
        return s.OptionList(advisor.options())

    @get(
        "/gpus",
        operation_id="listGpus",
        opt={"scope": "catalog:read"},
        summary="GPU models with their specifications and sources",
        responses=COMMON_PROBLEMS,
    )
    async def list_gpus(self, advisor: NamedDependency[Advisor], limit: Limit = 100, offset: Offset = 0) -> s.GpuList:
        kb = advisor.knowledge()
        rows = [s.GpuRead(**_shallow(g)) for g in kb.gpus.values()]
        return s.GpuList(kb.version, len(rows), limit, offset, _page(rows, limit, offset))

    @get(
        "/gpus/{key:str}",
        operation_id="getGpu",
        opt={"scope": "catalog:read"},
        summary="One GPU model",
        responses=COMMON_PROBLEMS,
    )
    async def get_gpu(
        self, advisor: NamedDependency[Advisor], key: Annotated[str, Parameter(max_length=40)]
    ) -> s.GpuRead:
        gpu = advisor.knowledge().gpus.get(key)
        if gpu is None:
            raise NotFoundException(f"no GPU model '{key}'")
        return s.GpuRead(**_shallow(gpu))

    @get(
        "/servers",
        operation_id="listServers",
        opt={"scope": "catalog:read"},
        summary="Server SKUs",
        responses=COMMON_PROBLEMS,
    )
    async def list_servers(
        self, advisor: NamedDependency[Advisor], limit: Limit = 100, offset: Offset = 0
    ) -> s.ServerList:
        kb = advisor.knowledge()
        rows = [s.ServerRead(**_shallow(x)) for x in kb.servers.values()]
        return s.ServerList(kb.version, len(rows), limit, offset, _page(rows, limit, offset))

    @get(
        "/prices",
        operation_id="listPrices",
        opt={"scope": "catalog:read"},
        summary="Price items, filtered; as_of keeps those valid that day",
        responses=COMMON_PROBLEMS,
    )
    async def list_prices(
        self,
        advisor: NamedDependency[Advisor],
        option: OptionFilter = None,
        provider: Annotated[str | None, Parameter(max_length=60)] = None,
        region: Annotated[str | None, Parameter(max_length=40)] = None,
        item: Annotated[str | None, Parameter(max_length=40)] = None,
        as_of: Annotated[dt.date | None, Parameter(description="Only prices valid on this date.")] = None,
        limit: Limit = 100,
        offset: Offset = 0,
    ) -> s.PriceList:
        kb = advisor.knowledge()
        rows = [
            s.PriceRead(
                p.id,
                p.option,
                p.provider,
                p.item,
                p.subject,
                p.unit,
                p.value.low,
                p.value.expected,
                p.value.high,
                p.currency,
                p.region,
                p.valid_from,
                p.valid_to,
                p.source,
                p.source_quality,
                p.notes,
            )
            for p in kb.prices
            if (option is None or p.option == option)
            and (provider is None or p.provider == provider)
            and (region is None or p.region == region)
            and (item is None or p.item == item)
            and (as_of is None or p.valid_on(as_of))
        ]
        return s.PriceList(kb.version, len(rows), limit, offset, _page(rows, limit, offset))

    @get(
        "/assumptions",
        operation_id="listAssumptions",
        opt={"scope": "catalog:read"},
        summary="Non-price parameters with sources and rationale",
        responses=COMMON_PROBLEMS,
    )
    async def list_assumptions(
        self,
        advisor: NamedDependency[Advisor],
        option: OptionFilter = None,
        limit: Limit = 100,
        offset: Offset = 0,
    ) -> s.AssumptionList:
        kb = advisor.knowledge()
        rows = [
            s.AssumptionRead(
                a.option,
                a.key,
                a.unit,
                a.value.low,
                a.value.expected,
                a.value.high,
                a.source,
                a.source_quality,
                a.rationale,
            )
            for a in kb.assumptions.values()
            if option is None or a.option == option
        ]
        return s.AssumptionList(kb.version, len(rows), limit, offset, _page(rows, limit, offset))

    @get(
        "/rules",
        operation_id="listRules",
        opt={"scope": "catalog:read"},
        summary="Scenario rules: conditions, effects and their sources",
        responses=COMMON_PROBLEMS,
    )
    async def list_rules(
        self,
        advisor: NamedDependency[Advisor],
        option: OptionFilter = None,
        limit: Limit = 100,
        offset: Offset = 0,
    ) -> s.RuleList:
        kb = advisor.knowledge()
        rows = [
            s.RuleRead(
                r.key,
                r.option,
                r.description,
                r.match,
                [s.ConditionRead(c.field, c.op, c.value) for c in r.conditions],
                r.effect,
                r.points,
                r.reason,
                r.rationale,
                r.source,
                r.source_quality,
            )
            for r in kb.rules
            if option is None or r.option == option
        ]
        return s.RuleList(kb.version, len(rows), limit, offset, _page(rows, limit, offset))

    @get(
        "/knowledge-version",
        operation_id="getKnowledgeVersion",
        opt={"scope": "catalog:read"},
        summary="The knowledge version being served",
        responses=COMMON_PROBLEMS,
    )
    async def knowledge_version(
        self, advisor: NamedDependency[Advisor], db_session: NamedDependency[AsyncSession]
    ) -> s.KnowledgeVersionRead:
        kb = advisor.knowledge()
        row = await snapshot.version_by_label(db_session, kb.version)
        if row is None:
            raise KnowledgeUnavailable(f"knowledge version {kb.version} is not in the database")
        # SQLite hands timestamps back naive; they are stored in UTC, and the document promises RFC 3339
        created = row.created_at if row.created_at.tzinfo else row.created_at.replace(tzinfo=dt.UTC)
        return s.KnowledgeVersionRead(row.label, row.content_hash, created, row.note, row.summary)
