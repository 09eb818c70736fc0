"""Who may read or continue a session: the holder of its token (``X-Session-Token``), or an agent with the API key.

``POST /sessions`` hands the token out once; the store keeps only its SHA-256 digest. A request without either
secret gets exactly the answer of an unknown session (404 ``session_not_found``, same body), so a session id
alone proves nothing and cannot be probed.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from fastapi import Header, Request

from dtdialog.api.deps import get_settings, key_matches
from dtdialog.dialogue.session_store import SessionStore

TOKEN_HEADER = "X-Session-Token"
#: stands in for a session without a token, so its check costs the same compare as one with a token
_NO_TOKEN = "0" * 64

SessionToken = Header("", alias=TOKEN_HEADER, description=(
    "The `token` that `POST /sessions` returned with this session. Agents send `X-API-Key` instead. Without "
    "either (or with a wrong one) the answer is 404 `session_not_found`, exactly as for an unknown session."))


def new_token() -> str:
    """Return a fresh session token (256 random bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def token_digest(token: str) -> str:
    """Return what the store keeps of ``token``: its SHA-256, hex."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def is_agent(request: Request) -> bool:
    """Return True when the server has an API key and ``X-API-Key`` matches it (no key configured: nobody is)."""
    expected = get_settings(request).api_key
    given = request.headers.get("x-api-key")
    return bool(expected and given and key_matches(given, expected))


def require_session_access(request: Request, store: SessionStore, session_id: str, token: str) -> None:
    """Raise the store's ``SessionNotFoundError`` unless the request holds ``session_id``'s token or the API key.

    Reads only the session's token digest: nothing of the session is loaded or parsed for a stranger.
    """
    if is_agent(request):
        return
    stored = store.token(session_id)  # an unknown id raises the same error as a wrong token below
    matches = hmac.compare_digest(token_digest(token), stored or _NO_TOKEN)
    if not (matches and stored and token):
        raise store.not_found(session_id)
