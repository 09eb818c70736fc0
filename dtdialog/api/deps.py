"""Shared request helpers: the app's engine service, text limits and the API-key check."""

from __future__ import annotations

import hmac
from importlib.metadata import PackageNotFoundError, version

from fastapi import Request

from dtdialog.api.errors import ApiError
from dtdialog.api.service import EngineService
from dtdialog.api.settings import ApiSettings


def api_version() -> str:
    """Return the installed dtdialog version, or "unknown" when it is not installed."""
    try:
        return version("dtdialog")
    except PackageNotFoundError:
        return "unknown"


def get_service(request: Request) -> EngineService:
    """Return the engine service of the app serving ``request``."""
    return request.app.state.service


def get_settings(request: Request) -> ApiSettings:
    """Return the settings of the app serving ``request``."""
    return request.app.state.service.settings


def check_text(text: str, settings: ApiSettings, *, field: str = "text", limit: int | None = None) -> str:
    """Return ``text`` cleaned for the engine; 413 when longer than ``limit`` (default ``max_text_chars``), 422 when empty or unusable."""
    limit = settings.max_text_chars if limit is None else limit
    if len(text) > limit:
        raise ApiError(413, "text_too_long", f"{field} has {len(text)} characters; the limit is {limit}")
    refuse_surrogates(text, field=field)
    from parsers.text_input import clean_text

    cleaned = clean_text(text, max_chars=limit)
    if not cleaned.strip():
        raise ApiError(422, "empty_text", f"{field} is empty")
    return cleaned


def message_limit(service: EngineService) -> int:
    """Return the limit of a customer's message (a turn, a search): the engine's ``max_input_chars``, never above
    ``max_text_chars``, so the API accepts no message the engine would only answer with "too long".

    Loads the engine: call it on the engine thread.
    """
    return min(service.settings.max_text_chars, service.manager().config.max_input_chars)


def refuse_surrogates(text: str, *, field: str) -> None:
    """Raise 422 ``invalid_unicode`` when ``text`` holds a lone UTF-16 surrogate (JSON allows "\\ud800"; UTF-8 cannot store it)."""
    bad = next((ch for ch in text if "\ud800" <= ch <= "\udfff"), None)
    if bad is not None:
        raise ApiError(422, "invalid_unicode", f"{field} contains a lone surrogate U+{ord(bad):04X}; send valid Unicode text")


def require_api_key(request: Request) -> None:
    """Let the request through when no key is configured or ``X-API-Key`` matches; 401 when missing, 403 when wrong."""
    expected = get_settings(request).api_key
    if not expected:
        return
    given = request.headers.get("x-api-key")
    if not given:
        raise ApiError(401, "api_key_required", "this endpoint needs an X-API-Key header",
                       headers={"WWW-Authenticate": "X-API-Key"})
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise ApiError(403, "api_key_invalid", "the X-API-Key header does not match the configured key")
