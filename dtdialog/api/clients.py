"""Who is asking: the client a request's quotas are counted against."""

from __future__ import annotations

import hashlib

from fastapi import Request

from dtdialog.api.deps import key_matches
from dtdialog.api.ip_groups import ip_group
from dtdialog.api.settings import ApiSettings


def client_id(request: Request, settings: ApiSettings) -> str:
    """Return who is asking: ``key:<digest>`` for a request with the right API key, else ``addr:<remote address>``
    (an IPv6 address by its ``ipv6_prefix`` network: ``ip_groups``)."""
    given = request.headers.get("x-api-key")
    if given and settings.api_key and key_matches(given, settings.api_key):
        return "key:" + hashlib.sha256(settings.api_key.encode()).hexdigest()[:12]
    return "addr:" + (ip_group(request.client.host, settings.ipv6_prefix) if request.client else "unknown")


def is_operator(client: str) -> bool:
    """Return True for a client identified by the right API key."""
    return client.startswith("key:")
