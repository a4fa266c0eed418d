"""``make fuzz``: the schemathesis 4 CLI against a served compute-advisor on a fresh PostgreSQL database.

Deeper than ``tests/test_schemathesis.py`` (in-process, SQLite, 30 examples): the real server (uvicorn,
two workers, ``RATE_LIMIT=off``), PostgreSQL, every check, every phase (examples, coverage, fuzzing,
stateful), ``FUZZ_EXAMPLES`` examples per operation. The database is created, migrated and seeded with
the CLI, an ``admin`` key is created for the run, and on exit (also on failure or Ctrl-C) the server
is stopped and the database dropped.

The expectations are widened exactly as in ``tests/test_schemathesis.py``, both part of the
documented contract: a schema-valid decision request may name something the knowledge base lacks
(422), and an over-long body is refused with 413 before it is parsed.

Environment: ``FUZZ_EXAMPLES`` (100), ``FUZZ_SEED`` (20250101), ``FUZZ_WORKERS`` (schemathesis
workers, 1), ``FUZZ_ARGS`` (more ``schemathesis run`` arguments, split on spaces).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from lib import BIN, run_main, served

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES") or 100)
SEED = int(os.environ.get("FUZZ_SEED") or 20250101)
WORKERS = os.environ.get("FUZZ_WORKERS") or "1"

NEGATIVE = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]
POSITIVE = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]
CONFIG = f"""
[checks.negative_data_rejection]
expected-statuses = {NEGATIVE!r}

[[operations]]
include-path-regex = "^/v1/(price-comparisons|recommendations|evaluations)$"
include-method = "POST"
checks.positive_data_acceptance.expected-statuses = {POSITIVE!r}
"""


def main() -> int:
    return run_main(fuzz, "server stopped, database dropped")


def fuzz() -> int:
    with tempfile.TemporaryDirectory(prefix="compute-advisor-fuzz-") as tmp:
        config = Path(tmp) / "schemathesis.toml"
        config.write_text(CONFIG.replace("'", '"'))
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
