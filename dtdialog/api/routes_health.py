"""``GET /healthz`` and ``GET /readyz``: cheap checks that never load the engine and never queue behind its work."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request

from dtdialog.api.deps import api_version, get_service
from dtdialog.api.errors import ApiError
from dtdialog.api.models import ErrorResponse, HealthResponse
from dtdialog.api.service import EngineService

router = APIRouter(tags=["health"])
#: seconds the probe waits for the engine's index and session-store locks
LOCK_PROBE_SECONDS = 0.5
#: seconds a client is told to wait before asking again while the engine loads
LOADING_RETRY_AFTER = "2"


async def _health(service: EngineService) -> HealthResponse:
    # the lock probe may wait: off the event loop, and not on the engine thread (it would queue behind the work)
    problem = await asyncio.to_thread(service.readiness, lock_timeout=LOCK_PROBE_SECONDS)
    if problem is not None:
        raise ApiError(503, "not_ready", f"the engine is not ready: {problem}", headers={"Retry-After": "5"})
    return HealthResponse(status="ok", version=api_version(), engine_loaded=service.loaded, ready=service.ready,
                          loading=service.loading, problem=service.warm_up_problem)


@router.get("/healthz", response_model=HealthResponse, responses={503: {"model": ErrorResponse}})
async def healthz(request: Request) -> HealthResponse:
    """Return ok, the version, whether the engine is loaded and whether it is ``ready`` (its start-up load done);
    503 ``not_ready`` when the engine is stuck.

    200 while the engine loads at start-up (``loading``: the process is alive, see ``/readyz`` for taking
    traffic). Stuck: one engine call other than the start-up load has run for longer than
    ``health_stall_seconds``, or the loaded index's or session store's lock cannot be taken within half a second.
    """
    return await _health(get_service(request))


@router.get("/readyz", response_model=HealthResponse, responses={503: {"model": ErrorResponse}})
async def readyz(request: Request) -> HealthResponse:
    """Return what ``/healthz`` returns when the server takes requests without a start-up wait; else 503
    ``loading`` (the engine is still loading, with ``Retry-After``), ``engine_unavailable`` (its load failed) or
    ``not_ready`` (stuck, as ``/healthz``). For load balancers: send traffic only after a 200."""
    service = get_service(request)
    health = await _health(service)
    if health.loading:
        raise ApiError(503, "loading", "the engine is still loading; try again shortly",
                       headers={"Retry-After": LOADING_RETRY_AFTER})
    if not health.ready:
        raise ApiError(503, "engine_unavailable", f"the answer index cannot be loaded: {health.problem}",
                       headers={"Retry-After": "5"})
    return health
