"""One JSON error shape for every failure: ``{"error": {"code": ..., "message": ...}}``.

Messages come from ``DTDialogError`` (written to be shown to users) or are
fixed strings here; an unexpected exception never leaks its text, traceback
or file paths: the client gets a generic 500 with an ``error_id`` that is
also written to the server log next to the traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from parsers.errors import (
    ConfigError,
    DTDialogError,
    InputError,
    ModelNotAvailableError,
    StorageBusyError,
    StorageError,
    StorageFullError,
    StorageReadOnlyError,
)

log = logging.getLogger("dtdialog.api")

_STATUS_CODES = {
    400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
    409: "conflict", 413: "payload_too_large", 415: "unsupported_media_type", 422: "validation_error",
    429: "too_many_requests", 500: "internal_error", 503: "unavailable", 507: "insufficient_storage",
}
#: Storage faults are the server's, not the client's: the most specific class first. Nothing was written.
_STORAGE_STATUS: tuple[tuple[type[StorageError], int, str], ...] = (
    (StorageFullError, 507, "storage_full"),
    (StorageBusyError, 503, "storage_busy"),
    (StorageReadOnlyError, 503, "storage_read_only"),
    (StorageError, 503, "storage_unavailable"),
)
#: seconds a client is told to wait before retrying after a 503 from a locked database
RETRY_AFTER_BUSY = "5"


class ApiError(Exception):
    """An error with a status, a stable machine code and a user-facing one-line message."""

    def __init__(self, status: int, code: str, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    """Return the JSON body of an error response."""
    return {"error": {"code": code, "message": message, **extra}}


def error_response(status: int, code: str, message: str, *, headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
    """Return a ``JSONResponse`` in the service's error shape."""
    return JSONResponse(error_body(code, message, **extra), status_code=status, headers=headers)


def _status_of_engine_error(exc: DTDialogError) -> tuple[int, str]:
    # The engine's SessionNotFoundError is matched by name so this module
    # does not need the engine to be importable.
    if type(exc).__name__ == "SessionNotFoundError":
        return 404, "session_not_found"
    for cls, status, code in _STORAGE_STATUS:
        if isinstance(exc, cls):
            return status, code
    if type(exc).__name__ == "IndexBusyError":  # index.index_files: another build holds the index's lock
        return 409, "index_busy"
    if isinstance(exc, ModelNotAvailableError):
        return 503, "model_not_available"
    if isinstance(exc, InputError):
        return 422, "invalid_input"
    if isinstance(exc, ConfigError):
        return 400, "invalid_option"
    return 400, "bad_request"


#: the methods ``allowed_methods`` asks the routes about
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
_PATH = re.compile(r"(?<![\w.:/])(?:/[\w.\-+@~]+)+/([\w.\-+@~]+)")


def scrub_paths(message: str) -> str:
    """Return ``message`` with absolute file paths cut to their last component (no server layout in responses)."""
    return _PATH.sub(r"\1", message)


def _clean_validation_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Keep where and what, drop the echoed input (it can be megabytes) and pydantic's doc URLs.
    return [{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
            for e in errors[:20]]


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers that turn every known error into the JSON error shape."""

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, headers=exc.headers)

    @app.exception_handler(DTDialogError)
    async def _engine_error(request: Request, exc: DTDialogError) -> JSONResponse:
        status, code = _status_of_engine_error(exc)
        message = str(exc).splitlines()[0] if str(exc).strip() else code.replace("_", " ")
        if isinstance(exc, StorageError):
            log.error("storage fault on %s %s: %s", request.method, request.url.path, message)
        headers = {"Retry-After": RETRY_AFTER_BUSY} if isinstance(exc, StorageBusyError) else None
        return error_response(status, code, scrub_paths(message), headers=headers)

    @app.exception_handler(UnicodeEncodeError)
    async def _unicode_error(request: Request, exc: UnicodeEncodeError) -> JSONResponse:
        # only client text can hold what UTF-8 cannot encode (a lone surrogate sent as "\\ud800"); nothing was stored
        return error_response(422, "invalid_unicode", f"the request holds text that is not valid Unicode ({exc.reason})")

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            return error_response(400, "invalid_json", "the request body is not valid JSON")
        if any(e.get("type") in ("model_attributes_type", "dict_type") and tuple(e.get("loc", ())) == ("body",)
               for e in errors):
            return error_response(422, "validation_error", "the request body must be a JSON object "
                                  "(send Content-Type: application/json)")
        details = _clean_validation_errors(errors)
        first = details[0] if details else {"loc": [], "msg": "invalid request"}
        where = ".".join(p for p in first["loc"] if p not in ("body",)) or "request"
        if any(d["type"] == "string_unicode" for d in details):  # a lone surrogate ("\\ud800") in a text field
            return error_response(422, "invalid_unicode", f"{where}: the text is not valid Unicode (a lone surrogate)",
                                  details=details)
        return error_response(422, "validation_error", f"{where}: {first['msg']}", details=details)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _STATUS_CODES.get(exc.status_code, "error")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
        if exc.status_code == 400 and message == "There was an error parsing the body":
            # FastAPI's wording for a body that is not UTF-8 or not decodable at all
            return error_response(400, "invalid_json", "the request body is not valid UTF-8 JSON")
        if exc.status_code == 404 and message == "Not Found":
            message = f"no such endpoint: {request.method} {request.url.path[:200]}"
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:
            headers = {**(headers or {}), "Allow": allowed_methods(request)}
        return error_response(exc.status_code, code, message, headers=headers)


def allowed_methods(request: Request) -> str:
    """Return the ``Allow`` header of ``request``'s path: each method some route of that path takes (Starlette's 405
    names only the first route's, so ``GET`` alone for ``/search``, which takes ``POST`` too)."""
    routes = request.app.router.routes
    allowed = [method for method in _METHODS
               if any(route.matches({**request.scope, "method": method})[0] == Match.FULL for route in routes)]
    return ", ".join(allowed)


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    payload = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})


class CatchAllMiddleware:
    """Turn any exception that escaped the handlers into a generic 500 with an error id; log the details."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except asyncio.CancelledError:
            # shutdown's grace period is over (uvicorn cancels what is still running): say so, not a bare 500
            if not started:
                await _send_json(send, 503, error_body("shutting_down", "the server is shutting down; try again"))
            raise
        except Exception:
            error_id = uuid.uuid4().hex[:12]
            log.exception("unhandled error %s on %s %s", error_id, scope.get("method"), scope.get("path"))
            if not started:
                await _send_json(send, 500, error_body("internal_error", "internal server error; quote the error id when reporting it", error_id=error_id))


class BodySizeLimitMiddleware:
    """Reject request bodies over ``max_bytes`` with 413, by Content-Length up front or while reading a chunked body.

    The body is read (at most ``max_bytes``) before the app runs and replayed to it,
    because a limit error raised from inside FastAPI's body parsing would be turned into a 400.
    """

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        message = f"the request body is larger than the limit of {self.max_bytes} bytes"
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _send_json(send, 400, error_body("bad_request", "invalid Content-Length header"))
                    return
                if declared > self.max_bytes:
                    await _send_json(send, 413, error_body("payload_too_large", message))
                    return
        chunks: list[bytes] = []
        size = 0
        while True:
            msg = await receive()
            if msg["type"] != "http.request":
                # The client went away before sending its body; nothing to answer.
                return
            body = msg.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await _send_json(send, 413, error_body("payload_too_large", message))
                return
            chunks.append(body)
            if not msg.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
