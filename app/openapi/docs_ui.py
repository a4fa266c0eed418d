"""The API documentation page, offline: Swagger UI served from the files the ``swagger-ui-bundle-v2``
package installs (``/docs/assets/…``), so ``/docs`` works on a network without internet — the page
names no other host (Litestar's defaults load Swagger UI, Scalar and a favicon from a CDN).

The page holds no inline script or style (Litestar's embeds the document and starts Swagger UI in an
inline script): ``swagger-init.js`` and ``docs.css`` (``docs_static/``) start it with the document
from ``/docs/openapi.json``, so the page's Content-Security-Policy (``app.web.security``) allows this
origin's files only."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from litestar import Request
from litestar.datastructures import CacheControlHeader
from litestar.openapi.plugins import OpenAPIRenderPlugin, SwaggerRenderPlugin
from litestar.router import Router
from litestar.static_files import create_static_files_router
from swagger_ui_bundle import swagger_ui_path

#: where the Swagger UI files are served (under /docs: open to everyone, like the page)
ASSETS_PATH = "/docs/assets"
ASSETS_DIR = Path(str(swagger_ui_path))
#: the page's own script and style sheet
OWN_DIR = Path(__file__).parent / "docs_static"
#: the files the page loads
ASSET_FILES = (
    "swagger-ui-bundle.js",
    "swagger-ui-standalone-preset.js",
    "swagger-ui.css",
    "favicon-32x32.png",
    "swagger-init.js",
    "docs.css",
)


class SwaggerPage(SwaggerRenderPlugin):
    """Swagger UI's page with nothing inline: its scripts and style sheets are files of this service."""

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        title = escape(str(openapi_schema["info"]["title"]))
        return f"""<!DOCTYPE html>
<html>
  <head>
    <title>{title}</title>
    {self.favicon}
    <meta charset="utf-8"/>
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <link href="{self.css_url}" rel="stylesheet">
    <link href="{ASSETS_PATH}/docs.css" rel="stylesheet">
    <script src="{self.js_url}"></script>
    <script src="{self.standalone_preset_js_url}"></script>
    <script src="{ASSETS_PATH}/swagger-init.js"></script>
  </head>
  <body>
    <div id="swagger-container"></div>
  </body>
</html>
""".encode()


def render_plugins() -> list[OpenAPIRenderPlugin]:
    """Swagger UI at ``/docs`` (and ``/docs/swagger``), every script, style sheet and icon from this service."""
    return [
        SwaggerPage(
            path=["/", "/swagger"],
            js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
            css_url=f"{ASSETS_PATH}/swagger-ui.css",
            standalone_preset_js_url=f"{ASSETS_PATH}/swagger-ui-standalone-preset.js",
            favicon=f"<link rel='icon' type='image/png' href='{ASSETS_PATH}/favicon-32x32.png'>",
        )
    ]


def assets_router() -> Router:
    """The Swagger UI files, cached for a day by browsers (they change only with the package)."""
    return create_static_files_router(
        path=ASSETS_PATH,
        directories=[ASSETS_DIR, OWN_DIR],
        include_in_schema=False,
        name="docs-assets",
        cache_control=CacheControlHeader(max_age=86_400),
    )
