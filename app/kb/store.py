"""Keeps the current knowledge snapshot in memory and swaps it when a new version appears.

A background task polls the newest version id (one indexed read) every few seconds; only a new
id triggers a full reload. A failed poll keeps the last snapshot: answers stay available from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.knowledge import Knowledge
from app.kb import snapshot

log = logging.getLogger(__name__)


class KnowledgeStore:
    def __init__(self, session_maker: Callable[[], AsyncSession], refresh_seconds: float) -> None:
        self._session_maker = session_maker
        self.refresh_seconds = refresh_seconds
        self.current: Knowledge | None = None
        self.last_error: str | None = None
        self.last_checked: float | None = None
        self._task: asyncio.Task[None] | None = None

    def get(self) -> Knowledge | None:
        return self.current

    async def refresh(self) -> bool:
        """Load the newest version if it differs from the one in memory. True when it swapped."""
        async with self._session_maker() as session:
            newest = await snapshot.latest_version(session)
            self.last_checked = time.monotonic()
            if newest is None or (self.current is not None and newest.label == self.current.version):
                return False
            loaded = await snapshot.load_knowledge(session)
        self.current = loaded
        log.info("knowledge version %s loaded", loaded.version if loaded else None)
        return True

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.refresh_seconds)
            try:
                await self.refresh()
                self.last_error = None
            except Exception as exc:  # keep serving the last snapshot
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("knowledge refresh failed: %s", self.last_error)

    async def start(self) -> None:
        try:
            await self.refresh()
        except Exception as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.warning("knowledge not loaded at start-up: %s", self.last_error)
        self._task = asyncio.create_task(self._poll(), name="knowledge-refresh")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
