"""Served (``python -m app.serve``, one worker): the connection's bounds against raw sockets.

Before them (uvicorn's own httptools protocol): connections that send nothing, or half a head, stayed
open for ever, and enough of them took every file descriptor of the worker (1,100 under the shipped
unit's 1,024; /health/live refused meanwhile); a 200 MB header block was answered 200 and left the
worker 170 MB larger; 300,000 pipelined GETs took it to 833 MB; a trickled body held its request
open for ever; an over-long request line or a malformed request got uvicorn's plain-text 400.

The worker here holds at most ``MAX_CONNECTIONS=50``, waits ``1`` s for a head and ``1`` s between two
chunks of a body, and starts with 256 open files (so that before the bounds, 300 connections
exhausted it). Memory is measured as the worker's largest RSS sampled every 10 ms while the attack
runs, against its RSS before: the bounds are far above what the bounded server grows by, far below
what the unbounded one did.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Databases, Server, create_key

pytestmark = pytest.mark.slow

SETTINGS = {
    "MAX_CONNECTIONS": "50",
    "HEADER_READ_TIMEOUT_SECONDS": "1",
    "BODY_READ_TIMEOUT_SECONDS": "1",
    "BODY_READ_DEADLINE_SECONDS": "4",
}
#: the worker's soft limit on open files at its start (the test's stand-in for a unit's 1,024)
OPEN_FILES = 256
IDLE = 300
HEADER_BLOCK_MB = 64
PIPELINED = 20_000
#: the bounded worker grew by 1 MB (header block) and 5 MB (pipeline); the unbounded one by 154 and 33 MB
RSS_GROWTH_BOUND_MB = 15.0
DEADLINE = 20.0


@pytest.fixture(scope="module")
def server(databases: Databases, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    real_popen = subprocess.Popen

    def few_open_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    def popen(*args: Any, **kwargs: Any) -> Any:  # the server's, with few open files
        kwargs["preexec_fn"] = few_open_files
        return real_popen(*args, **kwargs)

    log = tmp_path_factory.mktemp("bounds") / "server.log"
    with pytest.MonkeyPatch.context() as mp:
        for name, value in SETTINGS.items():
            mp.setenv(name, value)
        mp.setattr(subprocess, "Popen", popen)
        with Server(databases.seeded("sqlite"), log) as served:
            mp.undo()
            yield served


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


class PeakRss:
    """The largest RSS of a process, sampled every 10 ms while the ``with`` block runs."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = self.before = rss_mb(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, rss_mb(self.pid))

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def growth(self) -> float:
        return self.peak - self.before


def connect(server: Server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=DEADLINE)


def read_until_closed(sock: socket.socket, deadline: float = DEADLINE) -> bytes:
    """Everything the server sends until it closes the connection (a reset counts as closed)."""
    sock.settimeout(deadline)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except (ConnectionResetError, BrokenPipeError):
        pass
    return received


def answer(raw: bytes) -> tuple[int, dict[str, str], Any]:
    """(status, headers in lower case, the JSON body) of the first answer in ``raw``."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict((k.strip().lower(), v.strip()) for k, v in (x.split(":", 1) for x in lines[1:]))
    length = int(headers.get("content-length", len(body)))
    return int(lines[0].split()[1]), headers, json.loads(body[:length]) if length else None


def assert_problem(raw: bytes, status: int, slug: str) -> dict[str, Any]:
    got, headers, problem = answer(raw)
    assert got == status, raw[:300]
    assert headers["content-type"] == "application/problem+json", headers
    assert problem["type"] == f"urn:compute-advisor:problem:{slug}" and problem["status"] == status, problem
    assert isinstance(problem, dict)
    return problem


def sending(sock: socket.socket, data: bytes | Callable[[], None]) -> threading.Thread:
    """Send ``data`` from a thread of its own (the test reads meanwhile); a closed connection ends it."""

    def send() -> None:
        try:
            if callable(data):
                data()
            else:
                sock.sendall(data)
        except OSError:
            pass

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def test_idle_connections_neither_take_the_worker_nor_stay_open(server: Server) -> None:
    assert server.proc is not None
    fds_before = len(os.listdir(f"/proc/{server.proc.pid}/fd"))
    idle = []
    try:
        for i in range(IDLE):
            sock = connect(server)
            if i % 2:  # half of a head, then nothing: the slow-loris kind
                sock.sendall(b"GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            idle.append(sock)
        time.sleep(0.2)
        held = len(os.listdir(f"/proc/{server.proc.pid}/fd")) - fds_before
        live = httpx.get(server.base + "/health/live", timeout=10)
        assert live.status_code == 200, live.text
        assert held <= int(SETTINGS["MAX_CONNECTIONS"]) + 5, f"the worker holds {held} more descriptors"
        answers = [read_until_closed(sock) for sock in idle]  # each closed, within the deadline
        timed_out = [a for a in answers if a]
        assert timed_out, "no half-sent head was answered 408"
        for raw in timed_out:
            assert_problem(raw, 408, "request-timeout")
    finally:
        for sock in idle:
            sock.close()
    assert httpx.get(server.base + "/health/live", timeout=10).status_code == 200


def test_a_header_block_over_the_limit_is_431_and_costs_no_memory(server: Server) -> None:
    assert server.proc is not None
    line = b"X-Padding-%07d: " + b"p" * 1000 + b"\r\n"
    block = b"".join(line % i for i in range(HEADER_BLOCK_MB * 1024))
    with PeakRss(server.proc.pid) as rss, connect(server) as sock:
        sender = sending(sock, b"GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n" + block + b"\r\n")
        raw = read_until_closed(sock)
        sender.join(DEADLINE)
    print(f"{HEADER_BLOCK_MB} MB header block: RSS {rss.before:.0f} -> {rss.peak:.0f} MB at most; {raw[:40]!r}")
    problem = assert_problem(raw, 431, "headers-too-large")
    assert "32,768 bytes" in problem["detail"], problem
    assert rss.growth < RSS_GROWTH_BOUND_MB, f"RSS {rss.before:.0f} -> {rss.peak:.0f} MB"


def test_an_over_long_request_line_is_414_problem(server: Server) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /health/live?" + b"q" * 100_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        problem = assert_problem(read_until_closed(sock), 414, "uri-too-long")
    assert "8,192 bytes" in problem["detail"], problem


@pytest.mark.parametrize(
    "request_bytes",
    [b"GARBAGE\r\n\r\n", b"GET /health/live HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n"],
    ids=["method", "header", "version"],
)
def test_a_malformed_request_is_400_problem(server: Server, request_bytes: bytes) -> None:
    with connect(server) as sock:
        sock.sendall(request_bytes)
        assert_problem(read_until_closed(sock), 400, "invalid-request")


def _post_head(key: str, length: int) -> bytes:
    return (
        f"POST /v1/price-comparisons HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def test_a_body_that_pauses_is_cut_with_408(server: Server) -> None:
    _, key = create_key(server.url, ["decisions:run"], name="pausing body")
    with connect(server) as sock:
        sock.sendall(_post_head(key, 2000) + b'{"profile": ')  # then nothing: past the 1 s pause
        problem = assert_problem(read_until_closed(sock), 408, "request-timeout")
    assert "paused" in problem["detail"], problem


def test_a_body_trickled_within_the_pause_is_cut_at_its_deadline(server: Server) -> None:
    _, key = create_key(server.url, ["decisions:run"], name="trickled body")
    stop = threading.Event()
    with connect(server) as sock:
        sock.sendall(_post_head(key, 2000))

        def trickle() -> None:  # a byte every 0.3 s: never a pause of 1 s, never the end either
            while not stop.wait(0.3):
                sock.sendall(b" ")

        sender = sending(sock, trickle)
        try:
            problem = assert_problem(read_until_closed(sock), 408, "request-timeout")
        finally:
            stop.set()
            sender.join(DEADLINE)
    assert "took more than 4 s" in problem["detail"], problem


def test_pipelined_requests_are_all_answered_in_bounded_memory(server: Server) -> None:
    assert server.proc is not None
    one = b"GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    ok = b"HTTP/1.1 200 OK\r\n"
    answered = 0
    with PeakRss(server.proc.pid) as rss, connect(server) as sock:
        sender = sending(sock, one * PIPELINED)
        sock.settimeout(60)
        tail = b""
        while answered < PIPELINED:
            chunk = sock.recv(1 << 20)
            assert chunk, f"closed after {answered} answers"
            seen = tail + chunk
            answered += seen.count(ok)
            tail = seen[-(len(ok) - 1) :] if not seen.endswith(ok) else b""
        sender.join(DEADLINE)
    print(f"{PIPELINED:,} pipelined GETs: RSS {rss.before:.0f} -> {rss.peak:.0f} MB at most")
    assert answered == PIPELINED
    assert rss.growth < RSS_GROWTH_BOUND_MB, f"RSS {rss.before:.0f} -> {rss.peak:.0f} MB"


def test_the_settings_refuse_bounds_that_cannot_hold() -> None:
    from app.serve.connections import Limits
    from app.settings import Settings

    with pytest.raises(ValueError, match="MAX_HEADER_BYTES"):
        Settings.from_env({"MAX_HEADER_BYTES": "4096", "MAX_REQUEST_LINE_BYTES": "8192"})
    with pytest.raises(ValueError, match="SHUTDOWN_TIMEOUT_SECONDS"):
        Settings.from_env({"SHUTDOWN_TIMEOUT_SECONDS": "1"})
    with pytest.raises(ValueError, match="MAX_CONNECTIONS"):
        Settings.from_env({"MAX_CONNECTIONS": "0"})
    limits = Limits.of(Settings.from_env({}))  # the defaults: requests cut at 15 s, uvicorn cancels at 16 s
    assert (limits.request_deadline, limits.graceful_seconds, limits.shutdown_timeout) == (15.0, 16, 20.0)


def test_a_cap_the_open_files_cannot_hold_is_lowered_and_said() -> None:
    """Hard limit 300: MAX_CONNECTIONS=768 cannot be held with 256 descriptors for the worker itself."""
    script = (
        "import logging, resource, sys; logging.basicConfig(stream=sys.stdout, format='%(message)s'); "
        "resource.setrlimit(resource.RLIMIT_NOFILE, (200, 300)); "
        "from app.serve.config import descriptors_for; print(descriptors_for(768)); "
        "print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[-2:] == ["44", "300"], out  # the soft limit raised to the hard one, the cap lowered to fit
    assert "MAX_CONNECTIONS=768 needs 1024 open files" in out[0], out
