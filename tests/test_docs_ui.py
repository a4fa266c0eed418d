"""The documentation page works offline: everything it loads is served by the service itself."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from conftest import make_client

from app.openapi import docs_ui

ATTRIBUTE = re.compile(r"""\b(?:src|href)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)


def _page_head(html: str) -> str:
    """The page without the OpenAPI document it embeds (whose descriptions may cite web pages)."""
    return html.split("spec:", 1)[0]


def test_docs_page_names_no_other_host_and_its_assets_are_served(databases: Any) -> None:
    url = databases.new("sqlite")
    with make_client(url, api_key=None) as c:  # the documentation needs no key
        for path in ("/docs", "/docs/swagger"):
            r = c.get(path)
            assert r.status_code == 200, path
            assert r.headers["content-type"].startswith("text/html")
            head = _page_head(r.text)
            assert "swagger-init.js" in r.text and "SwaggerUIBundle" in c.get("/docs/assets/swagger-init.js").text
            refs = ATTRIBUTE.findall(head)
            assert len(refs) >= 4, refs  # the bundle, the preset, the style sheet, the icon
            for ref in refs:
                parts = urlsplit(ref)
                assert not parts.scheme and not parts.netloc, f"{path} loads {ref} from another host"
            assert not re.search(r"https?://", head), "a URL of another host in the page"
            for ref in refs:
                asset = c.get(ref)
                assert asset.status_code == 200, ref
                assert len(asset.content) > 100, ref
        for name in docs_ui.ASSET_FILES:
            assert c.get(f"{docs_ui.ASSETS_PATH}/{name}").status_code == 200, name
        js = c.get(f"{docs_ui.ASSETS_PATH}/swagger-ui-bundle.js")
        assert "javascript" in js.headers["content-type"]
        # Swagger UI 5 renders OpenAPI 3.1, the version of the document
        assert c.get("/docs/openapi.json").json()["openapi"].startswith("3.1")
        assert "swagger-ui-5." in str(docs_ui.ASSETS_DIR)
