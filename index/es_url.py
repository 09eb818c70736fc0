"""Elasticsearch URLs with their credentials kept apart: a saved engine spec names the server, never the password.

``without_credentials`` is what a spec saves and what error messages show; ``with_credentials_of`` gives a URL that
has none the user and password of another URL naming the same server (``index.registry.es_url`` takes them from
``$ELASTICSEARCH_URL``), so credentials never travel to a server they were not given for.
"""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit

_SCHEMES = ("http", "https")


def without_credentials(url: str) -> str:
    """Return ``url`` without its ``user:password@`` part (unchanged when it has none or is not a URL)."""
    parts = _split(url)
    if parts is None or "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]).geturl()


def same_server(a: str, b: str) -> bool:
    """Return True when ``a`` and ``b`` name the same scheme, host and port (credentials and path aside)."""
    first, second = _split(a), _split(b)
    return first is not None and second is not None and _server(first) == _server(second)


def with_credentials_of(url: str, source: str | None) -> str:
    """Return ``url`` with the credentials of ``source`` when ``url`` has none and both name the same server."""
    parts, given = _split(url), _split(source or "")
    if parts is None or given is None or "@" in parts.netloc or "@" not in given.netloc:
        return url
    if _server(parts) != _server(given):
        return url
    return parts._replace(netloc=given.netloc.rsplit("@", 1)[0] + "@" + parts.netloc).geturl()


def _split(url: str) -> SplitResult | None:
    """Return the parts of an ``http(s)://host...`` URL, or None for anything else (left to the client to refuse)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a bad port raises here, not later
    except ValueError:
        return None
    return parts if parts.scheme in _SCHEMES and parts.hostname else None


def _server(parts: SplitResult) -> tuple[str, str, int | None]:
    return parts.scheme, (parts.hostname or "").lower(), parts.port
