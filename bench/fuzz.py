"""``make fuzz``: the schemathesis 4 CLI against a served compute-advisor on a fresh PostgreSQL database.

Deeper than ``tests/test_schemathesis.py`` (in-process, SQLite, 30 examples): the real server (uvicorn,
two workers, ``RATE_LIMIT=off``), PostgreSQL, every check, every phase (examples, coverage, fuzzing,
stateful), ``FUZZ_EXAMPLES`` examples per operation. The database is created, migrated and seeded with
the CLI, an ``admin`` key is created for the run, and on exit (also on failure or Ctrl-C) the server
is stopped and the database dropped.

The expectations are widened by the repository's ``schemathesis.toml`` (which says which 422s and 413s
are documented and why), the same file a plain ``schemathesis run`` and ``tests/test_schemathesis.py``
read.

Then the header fuzz test (``tests/test_header_fuzz.py``) at depth: every hostile value on every route
with its documented body, and ``FUZZ_EXAMPLES`` × 10 generated header values (seed ``FUZZ_SEED``).

Environment: ``FUZZ_EXAMPLES`` (100), ``FUZZ_SEED`` (20250101), ``FUZZ_WORKERS`` (schemathesis
workers, 1), ``FUZZ_ARGS`` (more ``schemathesis run`` arguments, split on spaces).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from lib import BIN, ROOT, run_main, served

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES") or 100)
SEED = int(os.environ.get("FUZZ_SEED") or 20250101)
WORKERS = os.environ.get("FUZZ_WORKERS") or "1"


def main() -> int:
    rc = run_main(fuzz, "server stopped, database dropped")
    return rc or headers()


def headers() -> int:
    """The header fuzz test, deep: every hostile value on every route, many generated values."""
    env = {**os.environ, "HEADER_FUZZ_EXAMPLES": str(EXAMPLES * 10), "HEADER_FUZZ_SEED": str(SEED)}
    print(f"header fuzz: {EXAMPLES * 10} generated values, seed {SEED}", flush=True)
    argv = [str(BIN / "pytest"), "-q", "-n", "0", "-p", "no:cacheprovider", "tests/test_header_fuzz.py"]
    return subprocess.run(argv, cwd=ROOT, env=env).returncode


def fuzz() -> int:
    with tempfile.TemporaryDirectory(prefix="compute-advisor-fuzz-") as tmp:
        config = ROOT / "schemathesis.toml"  # which 422s and 413s are documented, and why
        with served("fuzz", workers=2) as srv:
            argv = [
                str(BIN / "schemathesis"),
                "--config-file",
                str(config),
                "run",
                f"{srv.base_url}/docs/openapi.json",
                "--url",
                srv.base_url,
                "--checks",
                "all",
                "-H",
                f"X-API-Key: {srv.key}",
                "--max-examples",
                str(EXAMPLES),
                "--seed",
                str(SEED),
                "--workers",
                WORKERS,
                "--generation-database",
                "none",
                "--suppress-health-check",
                "all",
                "--request-timeout",
                "60",
                "--no-color",
                *(os.environ.get("FUZZ_ARGS") or "").split(),
            ]
            print(
                f"schemathesis against {srv.base_url} (2 uvicorn workers, PostgreSQL, RATE_LIMIT=off), "
                f"{EXAMPLES} examples per operation, seed {SEED}",
                flush=True,
            )
            rc = subprocess.run(argv, cwd=tmp).returncode
            if rc != 0:
                tail = srv.log.read_text(errors="replace")[-6000:]
                print(f"--- server log (tail) ---\n{tail}", file=sys.stderr)
            return rc


if __name__ == "__main__":
    sys.exit(main())
