"""The API documentation page, offline: Swagger UI served from the files the ``swagger-ui-bundle-v2``
package installs (``/docs/assets/…``), so ``/docs`` works on a network without internet — the page
names no other host (Litestar's defaults load Swagger UI, Scalar and a favicon from a CDN)."""

from __future__ import annotations

from pathlib import Path

from litestar.datastructures import CacheControlHeader
from litestar.openapi.plugins import OpenAPIRenderPlugin, SwaggerRenderPlugin
from litestar.router import Router
from litestar.static_files import create_static_files_router
from swagger_ui_bundle import swagger_ui_path

#: where the Swagger UI files are served (under /docs: open to everyone, like the page)
ASSETS_PATH = "/docs/assets"
ASSETS_DIR = Path(str(swagger_ui_path))
#: the files the page loads
ASSET_FILES = ("swagger-ui-bundle.js", "swagger-ui-standalone-preset.js", "swagger-ui.css", "favicon-32x32.png")


def render_plugins() -> list[OpenAPIRenderPlugin]:
    """Swagger UI at ``/docs`` (and ``/docs/swagger``), every script, style sheet and icon from this service."""
    return [
        SwaggerRenderPlugin(
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
        directories=[ASSETS_DIR],
        include_in_schema=False,
        name="docs-assets",
        cache_control=CacheControlHeader(max_age=86_400),
    )
