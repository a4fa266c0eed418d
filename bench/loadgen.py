"""Asyncio load generation over raw HTTP/1.1 keep-alive connections.

``run`` is ``make bench``'s load generator when ``wrk`` is not installed: a fixed number of
connections, each sending one request after another for a fixed duration. It is itself CPU-bound
Python, so on a small machine it measures less than ``wrk`` would; ``bench/run.py`` says which
generator it used. ``connection`` is the loop both ``run`` and ``bench/loadtest.py`` drive their
connections with; ``probe`` is one paced connection, the liveness probe of ``make bench``'s
heavy-load row. Requests are built and answers read by ``lib.request_bytes`` and
``lib.read_response``, the same code as the blocking ``lib.request``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from lib import HOST, TRANSPORT_ERRORS, Response, read_response, request_bytes

T = TypeVar("T")
Tag = TypeVar("Tag")


async def connection(
    port: int,
    next_request: Callable[[], tuple[Tag, bytes] | None],
    record: Callable[[Tag, float, Response | None], None],
    timeout: float,
) -> None:
    """One keep-alive connection sending requests one after another until ``next_request`` gives none.

    ``next_request`` gives a tag and the bytes to send; ``record`` gets the tag back with the latency
    in seconds and the answer, or ``None`` after a transport error (the connection is then opened
    again for the next request).
    """
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    while (item := next_request()) is not None:
        tag, data = item
        try:
            if reader is None or writer is None:
                reader, writer = await asyncio.open_connection(HOST, port)
            start = time.perf_counter()
            writer.write(data)
            response = await asyncio.wait_for(read_response(reader), timeout=timeout)
        except TRANSPORT_ERRORS:
            record(tag, 0.0, None)
            if writer is not None:
                writer.close()
            reader = writer = None
            continue
        record(tag, time.perf_counter() - start, response)
    if writer is not None:
        writer.close()


def percentile_ms(latencies: list[float], q: float) -> float:
    """The q-th percentile of sorted latencies in seconds, in milliseconds (nan when there are none)."""
    if not latencies:
        return float("nan")
    return latencies[min(len(latencies) - 1, int(q / 100 * len(latencies)))] * 1000


def run_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on uvloop when it is installed (as the servers do), else on asyncio's loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


def run(
    port: int,
    method: str,
    path: str,
    headers: dict[str, str],
    bodies: list[bytes],
    connections: int,
    duration: float,
    start: int = 0,
) -> dict[str, Any]:
    """Drive ``method path`` on ``HOST:port`` with ``connections`` keep-alive connections for
    ``duration`` seconds; several bodies are cycled through, one per request, by each connection
    (the connections spread over them from body ``start`` on)."""
    requests = [request_bytes(method, path, port, headers, body) for body in bodies or [b""]]
    latencies: list[float] = []
    codes: dict[str, int] = {}
    errors = 0
    size = 0
    deadline = 0.0  # set when the loop runs

    def sender(first: int) -> Callable[[], tuple[None, bytes] | None]:
        # connections start at different bodies, so that none is answered from another's memo entry
        i = first

        def next_request() -> tuple[None, bytes] | None:
            nonlocal i
            if time.perf_counter() >= deadline:
                return None
            data = requests[i % len(requests)]
            i += 1
            return None, data

        return next_request

    def record(_: None, latency: float, response: Response | None) -> None:
        nonlocal errors, size
        if response is None:
            errors += 1
            return
        latencies.append(latency)
        codes[str(response.status)] = codes.get(str(response.status), 0) + 1
        size += response.size
        if response.status >= 400:
            errors += 1

    async def drive() -> float:
        nonlocal deadline
        started = time.perf_counter()
        deadline = started + duration
        senders = [sender(start + k * len(requests) // connections) for k in range(connections)]
        await asyncio.gather(*(connection(port, next_request, record, 10) for next_request in senders))
        return time.perf_counter() - started

    elapsed = run_loop(drive())
    latencies.sort()
    return {
        "requests": len(latencies),
        "duration_s": elapsed,
        "rps": len(latencies) / elapsed if elapsed else 0.0,
        "p50_ms": percentile_ms(latencies, 50),
        "p99_ms": percentile_ms(latencies, 99),
        "max_ms": latencies[-1] * 1000 if latencies else float("nan"),
        "errors": errors,
        "codes": codes,
        "bytes": size,
    }


def probe(port: int, data: bytes, interval: float, keep_going: Callable[[], bool], timeout: float = 30) -> list[float]:
    """Send ``data`` on one keep-alive connection, one request at a time with ``interval`` seconds between
    an answer and the next request, while ``keep_going()``: what a liveness probe sees. The latencies in
    seconds, in the order sent; a request that failed or did not answer 200 is ``nan``."""
    latencies: list[float] = []

    async def go() -> None:
        reader: asyncio.StreamReader | None = None
        writer: asyncio.StreamWriter | None = None
        while keep_going():
            try:
                if reader is None or writer is None:
                    reader, writer = await asyncio.open_connection(HOST, port)
                start = time.perf_counter()
                writer.write(data)
                response = await asyncio.wait_for(read_response(reader), timeout=timeout)
            except TRANSPORT_ERRORS:
                latencies.append(float("nan"))
                if writer is not None:
                    writer.close()
                reader = writer = None
            else:
                latencies.append(time.perf_counter() - start if response.status == 200 else float("nan"))
            await asyncio.sleep(interval)
        if writer is not None:
            writer.close()

    run_loop(go())
    return latencies
