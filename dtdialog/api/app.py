"""``create_app(settings)``: the FastAPI application of the dtdialog service (API, chat page, static files)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from dtdialog.api import (
    routes_health,
    routes_index,
    routes_parse,
    routes_profile,
    routes_search,
    routes_sessions,
    routes_webhook,
)
from dtdialog.api.deps import api_version
from dtdialog.api.docs_pages import install_docs
from dtdialog.api.errors import BodySizeLimitMiddleware, CatchAllMiddleware, install_error_handlers
from dtdialog.api.hosts import HostAllowListMiddleware
from dtdialog.api.quotas import Quotas
from dtdialog.api.service import EngineService
from dtdialog.api.settings import API_KEY_ENV, ApiSettings

log = logging.getLogger("dtdialog.api")

#: The environment variable that carries the settings to the worker processes (``worker_app``).
WORKER_SETTINGS_ENV = "DTDIALOG_WORKER_SETTINGS"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
STATIC_DIR = Path(__file__).parent / "static"
DESCRIPTION = (
    "Discourse-tree dialogue manager for customer support (Galitsky & Ilvovsky); its wording comes from the index's domain profile (`GET /profile`). "
    "Every error is `{\"error\": {\"code\": ..., \"message\": ...}}`. Index writes and the answer history "
    "need a key configured on the server and sent as `X-API-Key` (403 `index_writes_disabled` when the server has "
    "none); per-client quotas answer 429 with `Retry-After`."
)


#: The chat page runs only its own script file and may not be framed by another site; inline styles stay allowed
#: because the discourse-tree pictures it shows are SVG with style attributes.
PAGE_HEADERS = {
    "Content-Security-Policy": ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                                "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
                                "form-action 'self'; frame-ancestors 'none'"),
    "X-Frame-Options": "DENY",
}


def worker_app() -> FastAPI:
    """Return the app of one worker process of ``dtdialog serve --workers N`` (uvicorn calls it in each worker).

    The settings come as data (``WORKER_SETTINGS_ENV``, written by ``dtdialog serve``), never from argv again.
    """
    from dtdialog.api import connection_guard, log_flood, open_files

    payload = json.loads(os.environ[WORKER_SETTINGS_ENV])
    logging.basicConfig(level=payload["log_level"].upper(), format=LOG_FORMAT)
    log_flood.install()
    settings = ApiSettings.from_worker_data(payload["settings"])
    budget = open_files.connection_budget(settings.max_connections)  # the limit its supervisor raised
    connection_guard.configure(connection_guard.limits_of(settings, budget.max_connections))
    return create_app(settings)


def create_app(settings: ApiSettings | None = None) -> FastAPI:
    """Return the app; the engine (parser, index, sessions) loads on first use, or at start-up with ``settings.preload``
    (before serving) or ``settings.warm_up_in_background`` (while serving)."""
    settings = settings or ApiSettings.from_env()
    service = EngineService(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.preload and not service.loaded:  # `dtdialog serve --preload` loads it before listening
            await service.call(service.warm_up)
        elif settings.warm_up_in_background:  # `dtdialog serve`: the port opens now, /healthz says when it is ready
            service.start_warm_up()
        if not settings.api_key:  # said when serving starts: a start-up that fails prints only its one error line
            log.info("index writes are disabled (no API key): set %s or start `dtdialog serve --api-key-file FILE` "
                     "to enable POST /index/documents, POST /index/rebuild and the answer history", API_KEY_ENV)
        try:
            yield
        finally:
            service.close()

    # /docs and /redoc come from install_docs: FastAPI's own load their assets from a CDN (blank offline)
    app = FastAPI(title="dtdialog", version=api_version(), description=DESCRIPTION, lifespan=lifespan,
                  docs_url=None, redoc_url=None)
    app.state.service = service
    app.state.quotas = Quotas(settings)
    install_error_handlers(app)
    for module in (routes_health, routes_profile, routes_parse, routes_search, routes_sessions, routes_webhook,
                   routes_index):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    install_docs(app)

    @app.get("/", include_in_schema=False)
    async def chat_page() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html", headers=PAGE_HEADERS)

    # Added last = outermost: the catch-all also covers the size limit; a foreign Host is refused before any body is read.
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(HostAllowListMiddleware, allowed=settings.allowed_hosts)
    app.add_middleware(CatchAllMiddleware)
    return app
