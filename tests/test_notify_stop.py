"""A knowledge listener stops at once: a stop is not taken for a lost connection and retried after a pause
(``app.kb.notify.VersionListener``; on Python 3.11 ``asyncio.wait_for`` may swallow the stop's cancellation,
so the loop itself must see that it is stopping)."""

from __future__ import annotations

import asyncio
import types

from conftest import Databases, require_backend

from app.kb import notify


def test_a_stopped_listener_does_not_wait_to_reconnect(databases: Databases, monkeypatch) -> None:
    require_backend("postgresql")
    dsn = notify.listener_dsn(databases.new("postgresql"))
    assert dsn is not None
    paused: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds: float, *args: object) -> object:
        paused.append(seconds)
        return await real_sleep(seconds, *args)

    # the module's own view of asyncio, its pauses recorded; the rest of the event loop untouched
    monkeypatch.setattr(notify, "asyncio", types.SimpleNamespace(**{**vars(asyncio), "sleep": sleep}))

    async def listen_then_stop() -> bool:
        listener = notify.VersionListener(dsn, lambda _version: None, retry_seconds=30.0)
        listener.start()
        for _ in range(500):
            if listener.listening:
                break
            await real_sleep(0.01)
        assert listener.listening, "the listener never connected"
        await listener.stop()
        return listener._task is not None and listener._task.done()

    assert asyncio.run(listen_then_stop())
    assert paused == [], f"the stopped listener paused {paused} s before giving up"
