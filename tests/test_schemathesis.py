"""Property-based contract test: schemathesis drives every operation of the app in-process.

The app runs on a migrated and seeded SQLite database of its own. Schemathesis 4 runs the app's ASGI
lifespan itself (startup before an operation's first request, shutdown when each test item ends), so
the knowledge snapshot is loaded exactly as in production. Every check is enabled
(``case.call_and_validate()``), with positive and negative inputs. Each thing it found has become an
ordinary regression test in ``test_api_errors.py``.

The schema is loaded from the running app (not from the committed file), so the document under test is
the one the app serves; ``test_openapi.py`` pins the committed copy to it. (The lazy
``schemathesis.pytest.from_fixture`` loader is not used: under pytest 9 it fails on ``Function._nodeid``.)
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import tomllib
from pathlib import Path

import pytest
import schemathesis
from conftest import create_key, load_seeds, migrate
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from app.asgi import create_app
from app.settings import PROJECT_ROOT, Settings

pytestmark = pytest.mark.slow

SCHEMA_PATH = "/docs/openapi.json"  # OpenAPIConfig(path="/docs") in app.asgi
MAX_EXAMPLES = 30


def _seeded_app() -> tuple[object, str]:
    """The app on a seeded database of its own, and an ``admin`` key for it (every operation needs a key)."""
    tmp = Path(tempfile.mkdtemp(prefix="ca_schemathesis_"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    url = f"sqlite:///{tmp / 'seeded.db'}"
    migrate(url)
    load_seeds(url)
    _, key = create_key(url, ["admin"], name="schemathesis")
    return create_app(Settings(database_url=url, knowledge_refresh_seconds=60, rate_limit=None)), key


APP, API_KEY = _seeded_app()


#: The repository's schemathesis.toml (which 413s and 422s are documented, and why: the same file a plain
#: ``schemathesis run`` and ``make fuzz`` read), with this run's seed and the key for the X-API-Key security
#: scheme the document declares (schemathesis' ignored_auth check also sends each operation without it and
#: expects a 401).
CONFIG = SchemathesisConfig.from_dict(
    {
        **tomllib.loads((PROJECT_ROOT / "schemathesis.toml").read_text(encoding="utf-8")),
        "seed": 20250101,
        "auth": {"openapi": {"ApiKey": {"api_key": API_KEY}}},
    }
)

schema = schemathesis.openapi.from_asgi(SCHEMA_PATH, APP, config=CONFIG)


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_api_contract(case: schemathesis.Case) -> None:
    case.call_and_validate()
