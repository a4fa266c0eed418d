"""Readiness: the database answers, its migrations are at the head, a knowledge version is loaded; and
what the service can no longer do while it stays ready (a full disk, a read-only database)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from app.core.knowledge import Knowledge
from app.kb.repositories import KnowledgeVersionRepository, migration_revision
from app.kb.storage_state import StorageState
from app.kb.store import KnowledgeStore
from app.web.dependencies import Dependencies

#: a database slower than this is not ready
READY_TIMEOUT_SECONDS = 3.0


async def readiness(
    versions: KnowledgeVersionRepository,
    store: KnowledgeStore,
    kb: Knowledge | None,
    head: str | None,
    known: frozenset[str] = frozenset(),
    dependencies: Dependencies | None = None,
    *,
    storage: StorageState | None = None,
) -> tuple[bool, dict[str, Any]]:
    """Whether the service is ready, and each check's finding.

    The migration check passes at ``head``, and also at a revision none of this code's migrations
    (``known``) names: a newer release migrated the database first and this one serves on beside it
    during a rolling upgrade (``"ahead": true``). A known revision short of the head fails it.

    ``dependencies`` (``app.web.dependencies``) adds each dependency's state — ``up``, or ``down`` with
    the reason and the fallback in use. A Redis that is down does not make the service unready: the
    limits fall back to per-worker counts (taking every replica out of rotation would be worse).

    ``storage`` (``app.kb.storage_state``) adds ``storage``: ``ok``, ``full`` (a write failed for a full
    disk) or ``read-only`` (for a read-only database), and with it since when and the error. Neither
    makes the service unready either: every replica shares the one database, so a load balancer would
    take them all out of rotation, while reads, comparisons and evaluations — all but storing — still
    answer. The state comes from failed writes and is cleared by a write that works (never by a
    successful read), so it does not flap with the knowledge poll.
    """
    checks: dict[str, Any] = {}
    try:
        async with asyncio.timeout(READY_TIMEOUT_SECONDS):
            current = await migration_revision(versions)
        checks["database"] = "ok"
        ahead = current is not None and current != head and bool(known) and current not in known
        checks["migration"] = {"current": current, "head": head, "ok": current == head or ahead}
        if ahead:
            checks["migration"]["ahead"] = True
    except Exception as exc:
        store.mark_unreachable(exc)
        checks["database"] = f"unreachable: {type(exc).__name__}"
        checks["migration"] = {"current": None, "head": head, "ok": False}
    checks["knowledge_version"] = kb.version if kb else None
    checks["worker_pid"] = os.getpid()  # which worker answered: each keeps its own snapshot
    # "cached": answers come from the snapshot in memory, the database could not be re-read since
    checks["knowledge_source"] = None if kb is None else "cached" if store.degraded else "database"
    checks["knowledge_read_at"] = store.last_read_at.isoformat().replace("+00:00", "Z") if store.last_read_at else None
    if dependencies is not None:
        checks["dependencies"] = dependencies.states()
    if storage is not None:
        checks["storage"] = storage.state
        if storage.state != "ok":
            since = storage.since.isoformat().replace("+00:00", "Z") if storage.since else None
            checks["storage_detail"] = {
                "since": since,
                "error": storage.last_error,
                "probe_seconds": storage.probe_seconds,
            }
    ok = checks["database"] == "ok" and checks["migration"]["ok"] and kb is not None
    return ok, checks


# what readiness tells a caller without a valid API key: whether each check passes, not which worker
# answered, which revisions the database holds or why it failed
def public_checks(checks: dict[str, Any]) -> dict[str, Any]:
    """``checks`` without their details: ``database`` ok or unreachable, ``migration`` ok or not, the
    knowledge version served (every answer names it) and where it comes from, the storage state."""
    migration = checks.get("migration")
    database = checks.get("database")
    return {
        "database": "ok" if database == "ok" else "unreachable",
        "migration": {"ok": bool(migration.get("ok")) if isinstance(migration, dict) else False},
        "knowledge_version": checks.get("knowledge_version"),
        "knowledge_source": checks.get("knowledge_source"),
    } | ({"storage": checks["storage"]} if "storage" in checks else {})
