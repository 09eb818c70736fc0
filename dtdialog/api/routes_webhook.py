"""``POST /webhooks/rest/webhook``: Rasa's REST channel, so chat widgets that speak it can talk to dtdialog.

``{"sender": "...", "message": "..."}`` -> ``[{"recipient_id": sender, "text": ..., "buttons": [...]}]``. The
sender is the conversation: its session id is a keyed digest of it (``sender_session_id``, keyed by the server's
``webhook_secret``), so the mapping survives restarts and is shared by the workers of ``dtdialog serve --workers N``
through the session store, while nobody without the secret can compute a sender's session id. These sessions have
no token: through ``/sessions`` only the API key reads them. A sender whose session expired starts a new one.
Quotas: the turn rate and engine budget of the client, and ``max_sessions`` when a new sender starts one, counted
against the client's session rate and the global one as ``POST /sessions`` is.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request, Response

from dtdialog.api.clients import client_id
from dtdialog.api.deps import check_text, get_service, message_limit
from dtdialog.api.fair_gate import TURN
from dtdialog.api.models import ErrorResponse, RestButton, RestMessage, RestWebhookRequest
from dtdialog.api.quotas import get_quotas, is_cheap_turn, rate_limit
from dtdialog.api.webhook_secret import load_or_create, secret_path
from dtdialog.dialogue.customer_why import customer_why, needs_history
from dtdialog.dialogue.session import SessionNotFoundError

router = APIRouter(tags=["webhooks"])
WEBHOOK_PATH = "/webhooks/rest/webhook"
#: prefix of the session ids of webhook conversations (beside the uuid4 hex ids of POST /sessions)
SESSION_PREFIX = "rest-"
_ERRORS: dict[int | str, dict[str, Any]] = {c: {"model": ErrorResponse} for c in (400, 413, 422, 429, 503)}


def sender_session_id(secret: bytes, sender: str) -> str:
    """Return the session id of ``sender``'s conversation: an HMAC of it under the server's ``secret`` (any sender
    text makes a valid, fixed-size id, and only the server can compute it)."""
    digest = hmac.new(secret, sender.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    return SESSION_PREFIX + digest[:32]


def webhook_secret(app: FastAPI) -> bytes:
    """Return the webhook secret of ``app`` (read once per app; made on first use beside the session database)."""
    secret = getattr(app.state, "webhook_secret", None)
    if secret is None:  # threads racing here read the same file
        secret = app.state.webhook_secret = load_or_create(secret_path(app.state.service.settings.sessions_path))
    return secret


def rest_message(sender: str, result: Any, history: list[dict[str, Any]] | None = None) -> RestMessage:
    """Return the Rasa REST view of an engine ``TurnResult``: its reply, and its options as buttons; ``history``
    (the session's earlier traces) explains an answer picked from options."""
    buttons = [RestButton(title=str(o.label), payload=str(int(o.number))) for o in result.options or ()]
    return RestMessage(recipient_id=sender, text=result.reply, buttons=buttons or None,
                       custom={"kind": str(result.kind), "state": str(result.state), "answer_id": result.answer_id,
                               "confidence": getattr(result, "confidence", None),
                               "why": customer_why(result.trace or {}, history)})


@router.post(WEBHOOK_PATH, response_model=list[RestMessage], responses=_ERRORS,
             dependencies=[Depends(rate_limit("turn"))])
async def rest_webhook(body: RestWebhookRequest, request: Request) -> Response:
    """Handle one customer turn the way Rasa's REST channel does: the sender's session is started on its first
    message and continued afterwards; the reply comes back as a list of bot messages (one here), with the
    clarification options as buttons whose payload, sent back as the message, picks the option."""
    service = get_service(request)
    quotas = get_quotas(request)
    client = client_id(request, quotas.settings)

    def work() -> Response:
        manager = service.manager()  # opens the store, so the folder of the secret exists
        session_id = sender_session_id(webhook_secret(request.app), body.sender)
        quotas.purge_due(manager.store)
        text = check_text(body.message, service.settings, field="message", limit=message_limit(service))
        with manager.session_lock(session_id):  # the lookup, a new session and the turn are one step
            try:
                record = manager.session(session_id, traces=False)
            except SessionNotFoundError:
                record = None
            if record is not None and quotas.expired(record):
                manager.store.delete(session_id)
                record = None
            if record is None:
                quotas.check_session_rate(client)  # a new sender is a new session: the same rates as POST /sessions
                quotas.start_session(manager, session_id)
            payload: list[str] = []

            def respond(result: Any, record: Any) -> None:
                # serialised before the session is written: if this fails, the turn is not saved
                history = manager.session(session_id).traces if needs_history(result.trace or {}) else None
                message = rest_message(body.sender, result, history).model_dump(mode="json")
                if message["buttons"] is None:  # as Rasa: no "buttons" key on a message without options
                    del message["buttons"]
                payload.append(json.dumps([message]))

            manager.handle(session_id=session_id, text=text, before_save=respond)
        return Response(content=payload[0], media_type="application/json")

    return await quotas.run(request, work, lane=TURN, cheap=is_cheap_turn(body.message))
