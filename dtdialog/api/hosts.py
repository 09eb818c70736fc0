"""The Host header allow-list: the guard against DNS rebinding.

A page on an attacker's domain can make a browser resolve that domain to 127.0.0.1 and then talk to
this server "same-origin"; the only trace is the Host header, which still names the attacker's domain.
So a request is answered only when its Host names this server (``ApiSettings.allowed_hosts``, by default
the loopback names). Starlette's ``TrustedHostMiddleware`` does the same but answers in plain text;
this one answers in the API's JSON error shape.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from dtdialog.api.errors import error_response


def host_name(header: str) -> str:
    """Return the host of a Host header without port or IPv6 brackets, lower-cased ("" when there is none)."""
    host = header.strip().lower()
    if host.startswith("["):  # [::1]:8000
        return host[1:host.find("]")] if "]" in host else ""
    if host.count(":") == 1:  # name:port (a bare IPv6 address has several colons)
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def host_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    """Return True when ``host`` matches an entry: the name itself, ``*.domain`` for its sub-domains, or ``*``."""
    if not host:
        return False
    for pattern in allowed:
        if pattern == "*" or host == pattern:
            return True
        if pattern.startswith("*.") and host.endswith(pattern[1:]):
            return True
    return False


class HostAllowListMiddleware:
    """Answer 400 ``host_not_allowed`` to any HTTP request whose Host header is not in ``allowed``."""

    def __init__(self, app: ASGIApp, *, allowed: tuple[str, ...]) -> None:
        self.app = app
        self.allowed = tuple(allowed)
        self.any_host = "*" in self.allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.any_host:
            await self.app(scope, receive, send)
            return
        header = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"host"), "")
        if host_allowed(host_name(header), self.allowed):
            await self.app(scope, receive, send)
            return
        shown = header[:100].encode("ascii", "backslashreplace").decode() or "(none)"
        response = error_response(400, "host_not_allowed",
                                  f"Host header {shown!r} is not served by this server "
                                  "(the names it answers are set with `dtdialog serve --allowed-hosts`)")
        await response(scope, receive, send)
