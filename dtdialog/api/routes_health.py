"""``GET /healthz``: a cheap readiness check that never loads the engine and never queues behind its work."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request

from dtdialog.api.deps import api_version, get_service
from dtdialog.api.errors import ApiError
from dtdialog.api.models import ErrorResponse, HealthResponse

router = APIRouter(tags=["health"])
#: seconds the probe waits for the engine's index and session-store locks
LOCK_PROBE_SECONDS = 0.5


@router.get("/healthz", response_model=HealthResponse, responses={503: {"model": ErrorResponse}})
async def healthz(request: Request) -> HealthResponse:
    """Return ok, the version and whether the engine is loaded; 503 ``not_ready`` when the engine is stuck.

    Stuck: one engine call has run for longer than ``health_stall_seconds``, or the loaded index's or session
    store's lock cannot be taken within half a second.
    """
    service = get_service(request)
    # the lock probe may wait: off the event loop, and not on the engine thread (it would queue behind the work)
    problem = await asyncio.to_thread(service.readiness, lock_timeout=LOCK_PROBE_SECONDS)
    if problem is not None:
        raise ApiError(503, "not_ready", f"the engine is not ready: {problem}", headers={"Retry-After": "5"})
    return HealthResponse(status="ok", version=api_version(), engine_loaded=service.loaded)
