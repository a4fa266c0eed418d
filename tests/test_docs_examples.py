"""The documentation's commands run as written: every shell block marked runnable (```` ```sh runnable ````)
in README.md and docs/*.md runs against a served instance, and the test fails on a non-zero exit.

Each file's runnable blocks run in order in one ``bash -euo pipefail`` (a block may use what an earlier
one set, as a reader's shell would), in a fresh directory that looks like a checkout after ``make run``:
``.venv``, ``seeds``, ``openapi`` and ``tests`` of this checkout, and ``.dev-api-key`` holding a key with
every scope for the served database, whose URL is in ``DATABASE_URL``. ``localhost:8000`` in a block
means the served instance. ``curl`` fails on an HTTP error status (``--fail-with-body``), so a command
answered 4xx fails too. ``KEY`` is set as the README sets it, for the files that use it without saying.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Databases, create_key, load_seeds, migrate
from test_recovery_served import Server

from app.settings import PROJECT_ROOT
from app.web.auth import SCOPES

RUNNABLE = re.compile(r"^```(?:sh|bash) runnable\n(.*?)^```$", re.MULTILINE | re.DOTALL)
DOCUMENTS = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]
#: what a checkout has after `make run` that the commands read
LINKED = (".venv", "seeds", "openapi", "tests")
PREAMBLE = """\
curl() { command curl --fail-with-body "$@"; }
KEY="X-API-Key: $(cat .dev-api-key)"
"""


def blocks(document: Path) -> list[tuple[int, str]]:
    """The runnable blocks of a document: (line of the opening fence, text)."""
    text = document.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in RUNNABLE.finditer(text)]


def test_the_docs_mark_their_examples_runnable() -> None:
    """The README and the operations and price-book guides hold runnable examples (a typo in a fence
    would silently leave a document unchecked)."""
    found = {doc.name: len(blocks(doc)) for doc in DOCUMENTS}
    assert found["README.md"] >= 3 and found["operations.md"] >= 1 and found["price-books.md"] >= 2, found
    for doc in DOCUMENTS:
        assert "```sh runable" not in doc.read_text(encoding="utf-8"), doc


@pytest.fixture(scope="module")
def served(databases: Databases, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    url = databases.new("sqlite")
    migrate(url)
    load_seeds(url)
    _, key = create_key(url, sorted(SCOPES), name="docs-examples")
    with Server(url, tmp_path_factory.mktemp("served") / "server.log") as server:
        yield server, key


@pytest.mark.parametrize("document", [d for d in DOCUMENTS if blocks(d)], ids=lambda d: d.name)
def test_the_runnable_examples_run(document: Path, served: tuple[Server, str], tmp_path: Path) -> None:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed (apt-get install curl)")
    server, key = served
    for name in LINKED:
        (tmp_path / name).symlink_to(PROJECT_ROOT / name)
    (tmp_path / ".dev-api-key").write_text(key + "\n", encoding="utf-8")
    here = f"127.0.0.1:{server.port}"
    script = PREAMBLE
    for line, text in blocks(document):
        where = f"{document.relative_to(PROJECT_ROOT)}:{line}"
        script += f"echo '>>> {where}' >&2\n" + text.replace("localhost:8000", here).replace("127.0.0.1:8000", here)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env={**os.environ, "DATABASE_URL": server.url, "LOG_LEVEL": "WARNING"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    last = [line for line in done.stderr.splitlines() if line.startswith(">>> ")][-1:]
    assert done.returncode == 0, (
        f"exit status {done.returncode} in the block at {last[0][4:] if last else '?'}:\n"
        f"{done.stderr[-3000:]}\n--- stdout ---\n{done.stdout[-2000:]}"
    )
