"""The documentation's commands run as written: every shell block marked runnable (```` ```sh runnable ````)
in README.md and docs/*.md runs against a served instance, and the test fails on a non-zero exit.

Each file's runnable blocks run in order in one ``bash -euo pipefail`` (a block may use what an earlier
one set, as a reader's shell would), in a fresh directory that looks like a checkout after ``make run``:
``.venv``, ``seeds``, ``openapi`` and ``tests`` of this checkout, and ``.dev-api-key`` holding a key with
every scope for the served database, whose URL is in ``DATABASE_URL``. ``PORT`` is the served instance's
port, which the README's blocks reach as ``$BASE`` (``http://127.0.0.1:${PORT:-8000}``, as after ``make
run``); ``localhost:8000`` in another document's block means the served instance too. ``curl`` fails on an
HTTP error status (``--fail-with-body``), so a command answered 4xx fails too. ``KEY`` is set as the README
sets it, for the files that use it without saying.

Nothing a block writes may land in the checkout: the directory the blocks run in must hold afterwards
exactly what it held before (files go under ``mktemp -d``, which ``TMPDIR`` puts in the test's own
directory). The README's blocks name no fixed address and write files only under its ``$OUT``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Databases, create_key
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


#: where a command writes a file: a redirection, or an option naming the file or directory it writes
WRITES = re.compile(r"(?:(?<=\s)>{1,2}(?![=&])|\s-o|--out(?:put-path|put)?)\s*=?\s*(\S+)")


def test_the_readme_examples_need_only_make_run() -> None:
    """The README's runnable blocks reach the service as ``$BASE`` (set once, from ``PORT``), not at a
    fixed address, and write only under ``$OUT``, a temporary directory: never into the checkout."""
    readme = "\n".join(text for _, text in blocks(PROJECT_ROOT / "README.md"))
    assert "BASE=http://127.0.0.1:${PORT:-8000}" in readme and "OUT=$(mktemp -d)" in readme
    assert not re.search(r"(?:localhost|127\.0\.0\.1):\d+", readme.replace("127.0.0.1:${PORT", "")), readme
    targets = WRITES.findall(readme)
    assert targets, "the README's examples write no file: check the pattern"
    outside = [t for t in targets if not t.strip("\"'").startswith(("$OUT", "/dev/null"))]
    assert not outside, f"README examples writing outside $OUT: {outside}"


def test_the_docs_mark_their_examples_runnable() -> None:
    """The README and the operations and price-book guides hold runnable examples (a typo in a fence
    would silently leave a document unchecked)."""
    found = {doc.name: len(blocks(doc)) for doc in DOCUMENTS}
    assert found["README.md"] >= 3 and found["operations.md"] >= 1 and found["price-books.md"] >= 2, found
    for doc in DOCUMENTS:
        assert "```sh runable" not in doc.read_text(encoding="utf-8"), doc


@pytest.fixture(scope="module")
def served(databases: Databases, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    url = databases.seeded("sqlite")
    _, key = create_key(url, sorted(SCOPES), name="docs-examples")
    with Server(url, tmp_path_factory.mktemp("served") / "server.log") as server:
        yield server, key


@pytest.mark.slow
@pytest.mark.parametrize("document", [d for d in DOCUMENTS if blocks(d)], ids=lambda d: d.name)
def test_the_runnable_examples_run(document: Path, served: tuple[Server, str], tmp_path: Path) -> None:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed (apt-get install curl)")
    server, key = served
    checkout, scratch = tmp_path / "checkout", tmp_path / "tmp"
    checkout.mkdir()
    scratch.mkdir()
    for name in LINKED:
        (checkout / name).symlink_to(PROJECT_ROOT / name)
    (checkout / ".dev-api-key").write_text(key + "\n", encoding="utf-8")
    before = sorted(p.name for p in checkout.iterdir())
    here = f"127.0.0.1:{server.port}"
    script = PREAMBLE
    for line, text in blocks(document):
        where = f"{document.relative_to(PROJECT_ROOT)}:{line}"
        script += f"echo '>>> {where}' >&2\n" + text.replace("localhost:8000", here).replace("127.0.0.1:8000", here)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=checkout,
        env={
            **os.environ,
            "DATABASE_URL": server.url,
            "LOG_LEVEL": "WARNING",
            "PORT": str(server.port),
            "TMPDIR": str(scratch),
        },
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
    # nothing written into the checkout; what the README writes is under its temporary directories
    written = sorted({p.name for p in checkout.iterdir()} - set(before))
    assert not written, f"the examples of {document.name} wrote into the checkout: {written}"
    if document.name == "README.md":
        kept = {p.name for p in scratch.rglob("*") if p.is_file()}
        assert "cost-curves.svg" in kept, kept
