"""``GET /healthz`` (liveness: is this process working) and ``GET /readyz`` (readiness: could a turn be answered now).

Neither loads the engine, and neither queues behind its work. Only ``/readyz`` touches the session store and the
index: a lock another process holds, or a damaged file, is a reason to send no traffic here, never one to restart
this process (which would not help and drops the turns in flight).
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request

from dtdialog.api.deps import api_version, get_service
from dtdialog.api.errors import ApiError, scrub_paths
from dtdialog.api.models import ErrorResponse, HealthResponse
from dtdialog.api.service import EngineService

router = APIRouter(tags=["health"])
#: seconds a client is told to wait before asking again while the engine loads
LOADING_RETRY_AFTER = "2"
#: seconds a client is told to wait before asking again when the engine is stuck or its storage is not usable
NOT_READY_RETRY_AFTER = "5"


def _not_ready(problem: str) -> ApiError:
    return ApiError(503, "not_ready", f"the engine is not ready: {scrub_paths(problem)}",
                    headers={"Retry-After": NOT_READY_RETRY_AFTER})


def _alive(service: EngineService) -> HealthResponse:
    """Return the liveness body; raise 503 ``not_ready`` when an engine call is stuck."""
    stalled = service.stall_problem()
    if stalled is not None:
        raise _not_ready(stalled)
    return HealthResponse(status="ok", version=api_version(), engine_loaded=service.loaded, ready=service.ready,
                          loading=service.loading, problem=service.warm_up_problem)


@router.get("/healthz", response_model=HealthResponse, responses={503: {"model": ErrorResponse}})
async def healthz(request: Request) -> HealthResponse:
    """Liveness: return ok, the version, whether the engine is loaded, and whether its start-up load is done
    (``ready``, ``loading``, ``problem``); 503 ``not_ready`` only when one engine call other than the start-up load
    has run for longer than ``health_stall_seconds`` (a stuck engine: restarting the process helps).

    It never touches the session store or the index, and says nothing about them: a lock or a damaged file is
    ``/readyz``'s 503, not a reason to restart a working process.
    """
    return _alive(get_service(request))


@router.get("/readyz", response_model=HealthResponse, responses={503: {"model": ErrorResponse}})
async def readyz(request: Request) -> HealthResponse:
    """Readiness: return what ``/healthz`` returns when a turn could be answered now; else 503 ``loading`` (the
    engine is still loading, with ``Retry-After``), ``engine_unavailable`` (its start-up load failed; it is tried
    again every few seconds while this is asked) or ``not_ready`` (the engine is stuck, or the session store or the
    index cannot be used: locked by another process, or unreadable; the message names which).

    The session store and the index are tried within about a second; the answer is reused for a second. For load
    balancers: send traffic only after a 200."""
    service = get_service(request)
    health = _alive(service)
    if health.loading:
        raise ApiError(503, "loading", "the engine is still loading; try again shortly",
                       headers={"Retry-After": LOADING_RETRY_AFTER})
    if not health.ready:
        service.retry_warm_up()
        raise ApiError(503, "engine_unavailable", f"the answer index cannot be loaded: {health.problem}",
                       headers={"Retry-After": NOT_READY_RETRY_AFTER})
    fresh, problem = service.readiness.recent()
    if not fresh:
        # the probe may wait for a lock: off the event loop, and not on an engine thread (it would queue behind work)
        problem = await asyncio.to_thread(service.readiness.check)
    if problem is not None:
        raise _not_ready(problem)
    return health.model_copy(update={"problem": None})
