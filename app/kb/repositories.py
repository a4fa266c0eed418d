"""One advanced-alchemy repository per table the service reads or writes at run time; services ask
these instead of writing SQL. (The knowledge snapshot is read in bulk by ``app.kb.snapshot``, the
seed loader plans and applies whole sections in ``app.kb.seeds``, and API keys are created, found
and revoked by ``app.kb.keys``.)"""

from __future__ import annotations

from advanced_alchemy.filters import LimitOffset, OrderBy
from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import text

from app.kb import models as m
from app.kb import service_records as sr


class KnowledgeVersionRepository(SQLAlchemyAsyncRepository[m.KnowledgeVersion]):
    model_type = m.KnowledgeVersion

    async def by_label(self, label: str) -> m.KnowledgeVersion | None:
        """The version a label (``kv<id>-<hash prefix>``) names, if it exists and the hash matches."""
        try:
            version_id = int(label.removeprefix("kv").split("-", 1)[0])
        except ValueError:
            return None
        row = await self.get_one_or_none(id=version_id)
        return row if row is not None and row.label == label else None


class RecommendationRepository(SQLAlchemyAsyncRepository[sr.Recommendation]):
    model_type = sr.Recommendation


class AuditEventRepository(SQLAlchemyAsyncRepository[sr.AuditEvent]):
    model_type = sr.AuditEvent

    async def newest_first(self, window: LimitOffset, action: str | None = None) -> tuple[list[sr.AuditEvent], int]:
        """A page of events, newest first (ties by id), optionally of one action, and their total."""
        order = (window, OrderBy("at", "desc"), OrderBy("id", "desc"))
        if action:
            rows, total = await self.list_and_count(*order, sr.AuditEvent.action == action)
        else:
            rows, total = await self.list_and_count(*order)
        return list(rows), total


async def migration_revision(repository: KnowledgeVersionRepository) -> str | None:
    """The database's Alembic revision (``alembic_version``), read through a repository's session."""
    found = await repository.session.scalar(text("SELECT version_num FROM alembic_version"))
    return None if found is None else str(found)
