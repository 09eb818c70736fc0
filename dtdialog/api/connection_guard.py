"""Slow and greedy connections (slowloris): a deadline for each request's head and body, and caps on the
connections one client, and the whole process, may hold open.

uvicorn has neither: its keep-alive timer runs only between requests and is reset by every byte, so a client
sending half a request head holds its connection forever, and 1,100 such connections from one address made
the probe's normal requests time out. ASGI middleware sees a request only once its head is complete, so the
guard is a subclass of uvicorn's h11 protocol (``GuardedH11Protocol``, given to ``uvicorn.Config`` as ``http``).
h11 is used even where httptools is installed (uvicorn's "auto" would pick it): the deadlines read h11's
state. Counts are per server process: with ``--workers N`` each worker holds its own.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from dtdialog.api.ip_groups import IPV6_PREFIX, ip_group

log = logging.getLogger("dtdialog.api")

#: ``uvicorn.Config(http=...)`` for a server whose config travels to worker processes by name.
PROTOCOL_NAME = "dtdialog.api.connection_guard:GuardedH11Protocol"
#: Seconds an idle connection is kept between requests (uvicorn's default, said here so it is a decision).
KEEP_ALIVE_S = 5


@dataclass(frozen=True)
class ConnectionLimits:
    """Deadlines (seconds) and connection caps of one server process (``ApiSettings`` gives them)."""

    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections_per_client: int = 32
    max_connections: int = 2048
    ipv6_prefix: int = IPV6_PREFIX


@dataclass
class ConnectionGuard:
    """The open connections of this process, counted per client group (``ip_group``)."""

    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    open: int = 0
    per_client: Counter[str] = field(default_factory=Counter)

    def admit(self, group: str | None) -> tuple[int, str, str] | None:
        """Count a new connection of ``group`` (None: not capped per client, e.g. a trusted proxy); return None,
        or the refusal (status, code, message) when a cap is reached (nothing is counted then)."""
        if group is not None and self.per_client[group] >= self.limits.max_connections_per_client:
            return 429, "too_many_connections", (f"at most {self.limits.max_connections_per_client} connections "
                                                 "from one client at once")
        if self.open >= self.limits.max_connections:
            return 503, "server_busy", "the server holds as many connections as it can; retry shortly"
        self.open += 1
        if group is not None:
            self.per_client[group] += 1
        return None

    def release(self, group: str | None) -> None:
        self.open -= 1
        if group is not None:
            self.per_client[group] -= 1
            if self.per_client[group] <= 0:
                del self.per_client[group]


_guard = ConnectionGuard()


def configure(limits: ConnectionLimits) -> ConnectionGuard:
    """Make ``limits`` this process's (before serving: ``dtdialog serve`` and each of its workers)."""
    global _guard
    _guard = ConnectionGuard(limits)
    return _guard


def limits_of(settings: Any, max_connections: int) -> ConnectionLimits:
    """Return the ``ConnectionLimits`` of ``ApiSettings`` with the total cap the open-file limit allows
    (``open_files.connection_budget``)."""
    return ConnectionLimits(header_timeout=settings.header_timeout, body_timeout=settings.body_timeout,
                            max_connections_per_client=settings.max_connections_per_client,
                            max_connections=max_connections, ipv6_prefix=settings.ipv6_prefix)


def _raw_response(status: int, reason: str, code: str, message: str) -> bytes:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    head = (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n")
    return head.encode("ascii") + body


def _is_trusted_proxy(host: str, config: Any) -> bool:
    # behind a proxy every customer shares the proxy's address: the proxy's connections are not capped per client
    if not config.proxy_headers:
        return False
    trusted = config.forwarded_allow_ips
    names = [n.strip() for n in (trusted.split(",") if isinstance(trusted, str) else trusted or [])]
    if "*" in names:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host in names
    for name in names:
        try:
            if address in ipaddress.ip_network(name, strict=False):
                return True
        except ValueError:
            continue
    return False


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with request deadlines and connection caps (``configure`` sets them).

    A deadline runs while the server waits for a request's head (from the connection's start, or the end of the
    previous response) and then for its body; it stops while the app works. When it passes the connection gets
    408 (unless a response has begun) and is closed.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._guard = _guard
        self._group: str | None = None
        self._counted = False
        self._deadline: asyncio.TimerHandle | None = None
        self._waiting_for: str | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        host = self.client[0] if self.client else None
        if host is not None and not _is_trusted_proxy(host, self.config):
            self._group = ip_group(host, self._guard.limits.ipv6_prefix)
        refusal = self._guard.admit(self._group)
        if refusal is not None:
            status, code, message = refusal
            log.warning("refused a connection from %s: %s", self._group or host, message)
            reason = "Too Many Requests" if status == 429 else "Service Unavailable"
            self.transport.write(_raw_response(status, reason, code, message))
            self.transport.close()
            return
        self._counted = True
        self._rearm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_counting()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._rearm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._rearm()

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self._stop_counting()  # the connection now belongs to the WebSocket protocol
        super().handle_websocket_upgrade(event)

    def _stop_counting(self) -> None:
        self._cancel_deadline()
        if self._counted:
            self._counted = False
            self._guard.release(self._group)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline, self._waiting_for = None, None

    def _awaited(self) -> str | None:
        if not self._counted or self.transport.is_closing():
            return None
        state = self.conn.their_state
        return "head" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None

    def _rearm(self) -> None:
        """Start the deadline of what the server now waits for, unless it already runs (a head or body arriving
        in pieces has one deadline for all of them)."""
        awaited = self._awaited()
        if awaited == self._waiting_for:
            return
        self._cancel_deadline()
        if awaited is not None:
            limits = self._guard.limits
            seconds = limits.header_timeout if awaited == "head" else limits.body_timeout
            self._deadline = self.loop.call_later(seconds, self._expired, awaited, seconds)
            self._waiting_for = awaited

    def _expired(self, awaited: str, seconds: float) -> None:
        self._deadline, self._waiting_for = None, None
        if self.transport.is_closing():
            return
        log.info("closed a connection from %s: its request %s did not arrive within %g s",
                 self._group or (self.client[0] if self.client else "?"), awaited, seconds)
        if awaited == "head" or self.cycle is None or not self.cycle.response_started:
            message = f"the request {awaited} did not arrive within {seconds:g} s"
            self.transport.write(_raw_response(408, "Request Timeout", "request_timeout", message))
        self.transport.close()
