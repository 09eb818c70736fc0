"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) served with their assets from this server, so they work offline.

FastAPI's own pages load the assets from a CDN: behind a firewall or on a laptop without network they are blank.
The ``fastapi-offline`` package (the ``api`` extra) bundles Swagger UI's and ReDoc's builds; they are mounted
under ``ASSETS_URL`` and the pages point there.
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

#: where the bundled Swagger UI and ReDoc files are served
ASSETS_URL = "/docs-assets"
ASSETS_DIR = Path(fastapi_offline.__file__).parent / "static"
DOCS_URL = "/docs"
REDOC_URL = "/redoc"
#: the pages may load nothing from another host: ReDoc's bundle still asks a CDN for its footer logo, and Swagger UI
#: may ask an online validator for a badge; refused here, the browser never sends those requests. Inline script
#: and style: both pages start their bundle from an inline script; blob: workers: ReDoc's search.
DOCS_CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'")


def _local_only(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = DOCS_CSP
    return page


def install_docs(app: FastAPI) -> None:
    """Serve ``/docs`` and ``/redoc`` from local assets; ``app`` must be made with ``docs_url=None, redoc_url=None``."""
    app.mount(ASSETS_URL, StaticFiles(directory=ASSETS_DIR), name="docs-assets")
    redirect_url = app.swagger_ui_oauth2_redirect_url or "/docs/oauth2-redirect"

    def assets(request: Request) -> str:
        return request.scope.get("root_path", "") + ASSETS_URL

    @app.get(DOCS_URL, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _local_only(get_swagger_ui_html(
            openapi_url=root + (app.openapi_url or "/openapi.json"), title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=root + redirect_url, swagger_js_url=f"{assets(request)}/swagger-ui-bundle.js",
            swagger_css_url=f"{assets(request)}/swagger-ui.css", swagger_favicon_url=f"{assets(request)}/favicon.png",
            swagger_ui_parameters=app.swagger_ui_parameters))

    @app.get(redirect_url, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(REDOC_URL, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        # with_google_fonts=False: the fonts would be the one thing still fetched from another host
        return _local_only(get_redoc_html(openapi_url=root + (app.openapi_url or "/openapi.json"), title=f"{app.title} - ReDoc",
                              redoc_js_url=f"{assets(request)}/redoc.standalone.js",
                              redoc_favicon_url=f"{assets(request)}/favicon.png", with_google_fonts=False))
