"""The listening sockets of ``dtdialog serve --workers N``: one per worker, all in one ``SO_REUSEPORT`` group.

Why not uvicorn's one shared socket: every worker waits on it, and asyncio accepts all the connections waiting
when it wakes, so whichever worker wakes first takes a whole burst. Measured with ``eval.load_test`` (50 sessions,
2 workers): one worker held 38 of the 50 connections for the whole run, its customers waited twice as long as
the other's, and the other worker sat partly idle. With a socket of its own per worker, the kernel spreads new
connections over the group by their addresses, whichever worker is awake (Linux; elsewhere ``supported`` is False).

The supervisor keeps a socket bound but not listening: it holds the port (another server cannot take it
unnoticed) and a port in use is one error line before any worker starts. A worker makes its own listening socket
when the supervisor hands it over (``WorkerListener`` is pickled into the spawned process). Where the kernel does
not spread a group's connections, the workers share uvicorn's socket as before.
"""

from __future__ import annotations

import errno
import socket
import sys
from dataclasses import dataclass

from parsers.errors import ConfigError


def supported() -> bool:
    """Return True where a port's ``SO_REUSEPORT`` group spreads connections over its sockets: Linux. BSD and
    macOS accept the option but hand a port's connections to one socket of the group."""
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _bound(host: str, port: int, *, reuse_addr: bool = True, reuse_port: bool = True) -> socket.socket:
    sock = socket.socket(_family(host), socket.SOCK_STREAM)
    try:
        if reuse_addr:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    return sock


def reserve(host: str, port: int) -> socket.socket:
    """Return a socket bound to ``host:port`` in the group, not listening (the supervisor's hold on the port);
    a port in use or an address that cannot be bound is a ``ConfigError``.

    The port is first bound without ``SO_REUSEPORT``: a second server of the same user would otherwise join the
    group of one already running, and the two would share its connections without a word. The hold itself has no
    ``SO_REUSEADDR``, so that first bind of a second server fails on it too, before any worker of the first listens
    (Linux lets two sockets with ``SO_REUSEADDR`` share a port while neither listens). Only where the port still
    has connections in TIME_WAIT from a server that did not use ``SO_REUSEPORT`` does the hold need both options.
    """
    try:
        _bound(host, port, reuse_port=False).close()  # the probe: fails where anything else holds the port
        try:
            return _bound(host, port, reuse_addr=False)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            return _bound(host, port)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def single_listener(host: str, port: int, backlog: int) -> socket.socket:
    """Return a listening socket on ``host:port`` for a one-process server, bound before the engine loads; a port
    in use or an address that cannot be bound is a ``ConfigError`` (uvicorn's own bind fails after start-up, in
    eight lines and exit code 3)."""
    try:
        sock = _bound(host, port, reuse_port=False)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(backlog)
    return sock


def listening_socket(host: str, port: int, backlog: int) -> socket.socket:
    """Return a listening socket of the group on ``host:port`` (made in a worker)."""
    sock = _bound(host, port)
    sock.listen(backlog)
    sock.set_inheritable(True)
    return sock


@dataclass(frozen=True)
class WorkerListener:
    """Stands for one worker's listening socket in uvicorn's supervisor: unpickled in the worker, it is a new
    listening socket of the group there (``listening_socket``), so each worker gets its own."""

    host: str
    port: int
    backlog: int

    def __reduce__(self):
        return listening_socket, (self.host, self.port, self.backlog)
