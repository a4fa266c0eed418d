"""Redocly CLI (pinned in clients/typescript/package.json) lints the committed ``openapi/v1.json`` with its
recommended rules and the repository's ``redocly.yaml`` (two rules off, each with its reason): no error,
no warning. Without node or ``npm ci`` in clients/typescript the test is skipped with the reason, unless
``REQUIRE_NODE=1`` (``.ci/run``), where it fails."""

from __future__ import annotations

import json
import os
import subprocess

from conftest import require_node_tool

from app.settings import PROJECT_ROOT


def test_redocly_lint_passes_without_errors_or_warnings() -> None:
    redocly = require_node_tool("redocly")
    done = subprocess.run(
        [str(redocly), "lint", "openapi/v1.json", "--format", "json"],
        cwd=PROJECT_ROOT,  # where redocly.yaml is found
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "REDOCLY_TELEMETRY": "off", "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true"},
        check=False,
    )
    report = json.loads(done.stdout)  # the problems, each with its rule, message and place
    problems = [
        f"{p['severity']} {p['ruleId']}: {p['message']} at {p['location'][0]['pointer']}" for p in report["problems"]
    ]
    assert report["totals"] == {"errors": 0, "warnings": 0, "ignored": 0}, "\n".join(problems) or done.stderr
    assert done.returncode == 0, done.stderr
