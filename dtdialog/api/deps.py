"""Shared request helpers: the app's engine service, text limits and the API-key checks."""

from __future__ import annotations

import hashlib
import hmac
from importlib.metadata import PackageNotFoundError, version

from fastapi import Request

from dtdialog.api.errors import ApiError
from dtdialog.api.service import EngineService
from dtdialog.api.settings import API_KEY_ENV, ApiSettings


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
    return min(service.settings.max_text_chars, service.manager().config.dialogue.max_input_chars)


def refuse_surrogates(text: str, *, field: str) -> None:
    """Raise 422 ``invalid_unicode`` when ``text`` holds a lone UTF-16 surrogate (JSON allows "\\ud800"; UTF-8 cannot store it)."""
    bad = next((ch for ch in text if "\ud800" <= ch <= "\udfff"), None)
    if bad is not None:
        raise ApiError(422, "invalid_unicode", f"{field} contains a lone surrogate U+{ord(bad):04X}; send valid Unicode text")


def key_matches(given: str, expected: str) -> bool:
    """Return True when ``given`` is the key ``expected``, in time independent of where they differ.

    Both sides are hashed first so that ``hmac.compare_digest`` compares equal-length values and the
    time taken reveals neither the key's characters nor its length.
    """
    return hmac.compare_digest(hashlib.sha256(given.encode("utf-8", "surrogatepass")).digest(),
                               hashlib.sha256(expected.encode("utf-8", "surrogatepass")).digest())


def _check_key(request: Request, expected: str) -> None:
    given = request.headers.get("x-api-key")
    if not given:
        raise ApiError(401, "api_key_required", "this endpoint needs an X-API-Key header",
                       headers={"WWW-Authenticate": "X-API-Key"})
    if not key_matches(given, expected):
        raise ApiError(403, "api_key_invalid", "the X-API-Key header does not match the configured key")


def require_api_key(request: Request) -> None:
    """For reads: let the request through when no key is configured or ``X-API-Key`` matches; 401 missing, 403 wrong."""
    expected = get_settings(request).api_key
    if expected:
        _check_key(request, expected)


def require_index_admin(request: Request) -> None:
    """For index writes and the answer history: 403 ``index_writes_disabled`` unless a key is configured and sent."""
    expected = get_settings(request).api_key
    if not expected:
        raise ApiError(403, "index_writes_disabled", "index management is disabled on this server: start it with "
                       f"{API_KEY_ENV} set or with `dtdialog serve --api-key-file FILE`, and send the key as X-API-Key")
    _check_key(request, expected)


def guard_index(request: Request) -> None:
    """The index router's guard: reads (GET, HEAD) as ``require_api_key``, every other method as ``require_index_admin``."""
    if request.method in ("GET", "HEAD"):
        require_api_key(request)
    else:
        require_index_admin(request)
