"""A TypeScript client generated from the committed ``openapi/v1.json`` (openapi-typescript, openapi-fetch,
TypeScript 5.9: clients/typescript/) type-checks and calls a served instance: a recommendation, its
read-back, a comparison in USD on H100 (JSON and CSV), a 404 and a 422 problem.

It fails when the document becomes hostile to TypeScript users: ``tsc --noEmit`` refuses the README's own
request body once a field with a default is typed required, a success typed as a union, a header typed as
always present that is not. Without node or ``npm ci`` in clients/typescript the test is skipped with the
reason, unless ``REQUIRE_NODE=1`` (``.ci/run``), where it fails.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import NODE_TOOLS, Databases, create_key, require_node_tool
from test_recovery_served import Server


def _run(argv: list[str], **env: str) -> str:
    done = subprocess.run(
        argv, cwd=NODE_TOOLS, capture_output=True, text=True, timeout=300, env={**os.environ, **env}, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(argv)} failed:\n{output}"
    return output


@pytest.fixture(scope="module")
def compiled() -> Path:
    """The client generated from the committed document, checked by ``tsc --noEmit`` and compiled."""
    bin_dir = require_node_tool("openapi-typescript").parent
    _run([str(bin_dir / "openapi-typescript"), "../../openapi/v1.json", "--output", "src/v1.d.ts"])
    _run([str(bin_dir / "tsc"), "--noEmit"])  # a type error names the file and line
    _run([str(bin_dir / "tsc")])
    return NODE_TOOLS / "build" / "smoke.js"


@pytest.fixture(scope="module")
def served(databases: Databases, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    url = databases.seeded("sqlite")
    _, key = create_key(url, ["catalog:read", "decisions:run", "recommendations:write"], name="typescript-client")
    with Server(url, tmp_path_factory.mktemp("served") / "server.log") as server:
        yield server, key


def test_the_typescript_client_type_checks_and_calls_a_served_instance(
    compiled: Path, served: tuple[Server, str]
) -> None:
    server, key = served
    output = _run(["node", str(compiled)], COMPUTE_ADVISOR_URL=server.base, API_KEY=key)
    assert "404 and 422 problems as documented" in output, output
