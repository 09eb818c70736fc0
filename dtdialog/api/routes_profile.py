"""``GET /profile``: the wording of the served bot (its domain profile), which the chat page shows."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request

from dtdialog.api.deps import get_service
from dtdialog.api.models import ProfileResponse

router = APIRouter(tags=["profile"])


@router.get("/profile", response_model=ProfileResponse)
async def profile(request: Request) -> ProfileResponse:
    """Return the bot's name, domain, page title, greeting, example question and language.

    Never loads the engine: before it is loaded the profile is read from the index file (or the settings).
    """
    service = get_service(request)
    # reading the index file's build information touches the disk: off the event loop
    found = await asyncio.to_thread(service.profile)
    return ProfileResponse(**found.page())
