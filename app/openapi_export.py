"""Write the running app's OpenAPI document: ``python -m app.openapi_export openapi/v1.json``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from app.asgi import create_app
from app.settings import Settings


def openapi_document() -> dict[str, Any]:
    """The document as the app serves it at /docs/openapi.json (no database is opened)."""
    app = create_app(Settings(database_url="sqlite:///:memory:"))
    return app.openapi_schema.to_schema()


def render() -> str:
    return json.dumps(openapi_document(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    target = Path(argv[1] if len(argv) > 1 else "openapi/v1.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(), encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
