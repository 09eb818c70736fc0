"""``GET /healthz``: a cheap liveness check that never loads the engine."""

from __future__ import annotations

from fastapi import APIRouter, Request

from dtdialog.api.deps import api_version, get_service
from dtdialog.api.models import HealthResponse

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthResponse)
async def healthz(request: Request) -> HealthResponse:
    """Return ok, the version and whether the engine (index, selector) is loaded yet."""
    return HealthResponse(status="ok", version=api_version(), engine_loaded=get_service(request).loaded)
