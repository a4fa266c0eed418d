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
from pathlib import Path

import pytest
import schemathesis
from conftest import create_key, load_seeds, migrate
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig
from schemathesis.config._checks import (
    NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES as NEGATIVE_DEFAULT,
)
from schemathesis.config._checks import (
    POSITIVE_DATA_ACCEPTANCE_EXPECTED_STATUSES as POSITIVE_DEFAULT,
)

from app.asgi import create_app
from app.settings import Settings

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


#: Two deliberate widenings of schemathesis' default expectations, both part of the documented contract:
#: - a schema-valid decision request may name something the knowledge base lacks (a GPU model key, a currency,
#:   an as_of date before any price) and then gets a documented 422 problem, not a 2xx;
#: - an over-long ``profiles`` array is refused with 413 when the body exceeds MAX_BODY_BYTES before it is parsed.
CONFIG = SchemathesisConfig.from_dict(
    {
        "seed": 20250101,
        # the key for the X-API-Key security scheme the document declares; schemathesis' ignored_auth check
        # also sends each operation without it and expects a 401
        "auth": {"openapi": {"ApiKey": {"api_key": API_KEY}}},
        "checks": {"negative_data_rejection": {"expected-statuses": [*NEGATIVE_DEFAULT, "413"]}},
        "operations": [
            {
                "include-path-regex": "^/v1/(price-comparisons|recommendations|evaluations)$",
                "include-method": "POST",
                "checks": {"positive_data_acceptance": {"expected-statuses": [*POSITIVE_DEFAULT, "422"]}},
            }
        ],
    }
)

schema = schemathesis.openapi.from_asgi(SCHEMA_PATH, APP, config=CONFIG)


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_api_contract(case: schemathesis.Case) -> None:
    case.call_and_validate()
