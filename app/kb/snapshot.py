"""Read one knowledge version from SQL into the immutable in-memory snapshot."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.knowledge import Assumption, Condition, GpuSpec, Knowledge, Price, Rule, Server
from app.core.ranges import Range
from app.kb import models as m


def _range(low: object, expected: object, high: object) -> Range:
    return Range.of(float(low), float(high), None if expected is None else float(expected))  # type: ignore[arg-type]


def _opt(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


async def latest_version(session: AsyncSession) -> m.KnowledgeVersion | None:
    """The newest knowledge version: one indexed read, cheap enough to poll."""
    newest = await session.scalar(select(func.max(m.KnowledgeVersion.id)))
    return None if newest is None else await session.get(m.KnowledgeVersion, newest)


async def load_knowledge(session: AsyncSession) -> Knowledge | None:
    """The whole knowledge base as of its newest version, or ``None`` when none was ever loaded."""
    version = await latest_version(session)
    if version is None:
        return None
    gpus = {
        g.key: GpuSpec(
            g.key,
            g.vendor,
            g.name,
            float(g.memory_gb),
            _opt(g.memory_bandwidth_gbps),
            float(g.bf16_dense_tflops),
            _opt(g.fp8_dense_tflops),
            g.interconnect,
            _opt(g.interconnect_gbps),
            g.tdp_w,
            g.source,
            g.source_quality,
            g.notes,
        )
        for g in (await session.scalars(select(m.GpuModel).order_by(m.GpuModel.key))).all()
    }
    servers = {
        s.key: Server(
            s.key,
            s.name,
            s.gpu_model_key,
            s.gpus_per_server,
            _opt(s.power_kw),
            s.reference,
            s.source,
            s.source_quality,
            s.notes,
        )
        for s in (await session.scalars(select(m.ServerSku).order_by(m.ServerSku.key))).all()
    }
    prices = tuple(
        Price(
            p.id,
            p.option,
            p.provider,
            p.item,
            p.subject,
            p.unit,
            _range(p.low, p.expected, p.high),
            p.currency,
            p.region,
            p.valid_from,
            p.valid_to,
            p.source,
            p.source_quality,
            p.notes,
        )
        for p in (
            await session.scalars(
                select(m.PriceItem).order_by(m.PriceItem.option, m.PriceItem.item, m.PriceItem.valid_from.desc())
            )
        ).all()
    )
    assumptions = {
        (a.option, a.key): Assumption(
            a.id,
            a.option,
            a.key,
            a.unit,
            _range(a.low, a.expected, a.high),
            a.source,
            a.source_quality,
            a.rationale,
        )
        for a in (await session.scalars(select(m.Assumption).order_by(m.Assumption.option, m.Assumption.key))).all()
    }
    rules = tuple(
        Rule(
            r.key,
            r.option,
            r.description,
            r.match,
            tuple(Condition(c["field"], c["op"], c["value"]) for c in r.conditions),
            r.effect,
            _opt(r.points),
            r.reason,
            r.rationale,
            r.source,
            r.source_quality,
        )
        for r in (await session.scalars(select(m.ScenarioRule).order_by(m.ScenarioRule.key))).all()
    )
    return Knowledge(version.label, version.created_at, gpus, servers, prices, assumptions, rules)


async def version_by_label(session: AsyncSession, label: str) -> m.KnowledgeVersion | None:
    try:
        version_id = int(label.removeprefix("kv").split("-", 1)[0])
    except ValueError:
        return None
    row = await session.get(m.KnowledgeVersion, version_id)
    return row if row is not None and row.label == label else None
