"""Served: eight clients sending 2.3 MB bodies of 200,000 keys in a loop leave a single worker answering
``/health/live`` at once, and its memory where it was — the bodies are refused before they are parsed
(app/web/bodies.py: over the route's size limit, from the Content-Length).

Before the limits each such body took 1.7–4.3 s of the worker's only thread and a 20 MB problem;
8 in parallel stalled /health/live for 14 s (p99 12.4 s) and took the worker from 185 to 669 MB.
The bounds below are far above what a refused body costs (microseconds), so that a loaded machine
still passes; they fail by orders of magnitude when a body is parsed.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
from conftest import Server, create_key

ATTACKERS = 8
PROBES = 300
P99_BOUND_MS = 100.0
RSS_GROWTH_BOUND_MB = 50.0
#: the attackers: threads of a process of their own (the probe's latency is the server's, not the GIL's),
#: each sending the issue's body over a raw connection, reading the answer's status line, again
ATTACK = """
import json, socket, sys, threading
port, key = int(sys.argv[1]), sys.argv[2]
stop = threading.Event()
body = json.dumps({f"k{i}": i for i in range(200_000)}).encode()
head = (f"POST /v1/price-comparisons HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nX-API-Key: {key}\\r\\n"
        f"Content-Type: application/json\\r\\nContent-Length: {len(body)}\\r\\n\\r\\n").encode()
statuses = []
def attack():
    while not stop.is_set():
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            try:
                s.sendall(head + body)
            except OSError:  # answered and closed before the body was all sent
                pass
            try:
                statuses.append(s.recv(64).split(b" ")[1].decode())
            except (OSError, IndexError):
                statuses.append("closed")
threads = [threading.Thread(target=attack) for _ in range(8)]
print("started", flush=True)
for t in threads: t.start()
sys.stdin.readline()  # the test's word to stop
stop.set()
for t in threads: t.join()
print(json.dumps(statuses), flush=True)
"""


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_bodies_refused_in_parallel_leave_liveness_answering(served: Server) -> None:
    assert served.proc is not None
    _, key = create_key(served.url, ["decisions:run"], name="body-flood")
    with httpx.Client(base_url=served.base, timeout=30) as probe:
        for _ in range(20):  # warm: the probe's connection and the worker's first answers
            probe.get("/health/live")
        before = rss_mb(served.proc.pid)
        attackers = subprocess.Popen(
            [sys.executable, "-c", ATTACK, str(served.port), key],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert attackers.stdout is not None and attackers.stdout.readline().strip() == "started"
            time.sleep(0.5)  # the flood is on
            latencies = []
            for _ in range(PROBES):
                start = time.perf_counter()
                assert probe.get("/health/live").status_code == 200
                latencies.append((time.perf_counter() - start) * 1000)
                time.sleep(0.005)
            after = rss_mb(served.proc.pid)
        finally:
            out, _ = attackers.communicate("stop\n", timeout=120)
    p99 = statistics.quantiles(latencies, n=100)[98]
    statuses = json.loads(out.strip().splitlines()[-1]) if out.strip() else []
    refused = [a for a in statuses if a == "413"]
    print(
        f"p99 {p99:.1f} ms, median {statistics.median(latencies):.1f} ms, RSS {before:.0f} -> {after:.0f} MB, "
        f"{len(refused)} bodies refused of {len(statuses)}"
    )
    assert len(refused) >= ATTACKERS and set(statuses) <= {"413", "closed"}, sorted(set(statuses))
    assert p99 < P99_BOUND_MS, f"/health/live p99 {p99:.1f} ms while {len(refused)} bodies were refused"
    assert after - before < RSS_GROWTH_BOUND_MB, f"RSS {before:.0f} -> {after:.0f} MB"
