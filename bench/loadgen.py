"""Fallback load generator for ``make bench`` when ``wrk`` is not installed.

Raw asyncio streams (uvloop when importable), HTTP/1.1 keep-alive, a fixed number of connections,
each sending one request after another for a fixed duration. It is itself CPU-bound Python, so on a
small machine it measures less than ``wrk`` would; ``bench/run.py`` says which generator it used.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any


def _request_bytes(method: str, host: str, port: int, path: str, headers: dict[str, str], body: bytes) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}", "Connection: keep-alive"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if body or method in {"POST", "PUT", "PATCH"}:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, int]:
    """Read one response; return (status, bytes read). Only Content-Length framing (what uvicorn sends)."""
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, _, rest = head.partition(b"\r\n")
    status = int(status_line.split(b" ", 2)[1])
    length = 0
    for line in rest.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length:
        await reader.readexactly(length)
    return status, len(head) + length


async def _worker(
    host: str,
    port: int,
    requests: list[bytes],
    deadline: float,
    latencies: list[float],
    codes: dict[str, int],
    errors: list[int],
    first: int = 0,
) -> int:
    total_bytes = 0
    writer: asyncio.StreamWriter | None = None
    reader: asyncio.StreamReader | None = None
    i = first  # connections start at different bodies, so none answers another's from the memo
    while time.perf_counter() < deadline:
        try:
            if writer is None or reader is None:
                reader, writer = await asyncio.open_connection(host, port)
            start = time.perf_counter()
            writer.write(requests[i % len(requests)])
            i += 1
            status, n = await asyncio.wait_for(_read_response(reader), timeout=10)
            latencies.append(time.perf_counter() - start)
            codes[str(status)] = codes.get(str(status), 0) + 1
            total_bytes += n
            if status >= 400:
                errors[0] += 1
        except (TimeoutError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            errors[0] += 1
            if writer is not None:
                writer.close()
            writer = reader = None
    if writer is not None:
        writer.close()
    return total_bytes


async def _run(
    host: str,
    port: int,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes | list[bytes],
    connections: int,
    duration: float,
) -> dict[str, Any]:
    bodies = body if isinstance(body, list) else [body]
    requests = [_request_bytes(method, host, port, path, headers, b) for b in bodies]
    latencies: list[float] = []
    codes: dict[str, int] = {}
    errors = [0]
    started = time.perf_counter()
    deadline = started + duration
    sizes = await asyncio.gather(
        *(
            _worker(host, port, requests, deadline, latencies, codes, errors, k * len(requests) // connections)
            for k in range(connections)
        )
    )
    elapsed = time.perf_counter() - started
    latencies.sort()

    def pct(q: float) -> float:
        if not latencies:
            return float("nan")
        return latencies[min(len(latencies) - 1, int(q / 100 * len(latencies)))] * 1000

    return {
        "requests": len(latencies),
        "duration_s": elapsed,
        "rps": len(latencies) / elapsed if elapsed else 0.0,
        "p50_ms": pct(50),
        "p99_ms": pct(99),
        "max_ms": latencies[-1] * 1000 if latencies else float("nan"),
        "errors": errors[0],
        "codes": codes,
        "bytes": sum(sizes),
    }


def run(
    host: str,
    port: int,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes | list[bytes],
    connections: int,
    duration: float,
) -> dict[str, Any]:
    """Drive ``method path`` with ``connections`` keep-alive connections for ``duration`` seconds;
    several bodies are cycled through, one per request, by each connection."""
    coro = _run(host, port, method, path, headers, body, connections, duration)
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)
