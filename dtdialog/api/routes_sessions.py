"""Dialogue sessions: ``POST /sessions``, ``POST /sessions/{id}/messages``, ``GET /sessions/{id}``.

The last two need the session's token or the API key (``session_access``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response

from dtdialog.api.deps import check_text, get_service, message_limit
from dtdialog.api.errors import ApiError
from dtdialog.api.explain_turn import explain_turn
from dtdialog.api.fair_gate import TURN
from dtdialog.api.jsonable import jsonable
from dtdialog.api.models import (
    ErrorResponse,
    MessageRequest,
    SessionCreated,
    SessionOut,
    TurnOption,
    TurnResponse,
)
from dtdialog.api.quotas import Quotas, get_quotas, is_cheap_turn, rate_limit
from dtdialog.api.session_access import SessionToken, new_token, require_session_access, token_digest
from dtdialog.dialogue.customer_why import customer_why, needs_history, transcript_whys
from dtdialog.dialogue.session import new_session_id

router = APIRouter(tags=["sessions"])
SessionId = Path(min_length=1, max_length=128, description="The id returned by POST /sessions.")
_ERRORS: dict[int | str, dict[str, Any]] = {c: {"model": ErrorResponse} for c in (400, 404, 413, 422, 429, 503)}


def turn_out(result: Any, history: list[dict[str, Any]] | None = None) -> TurnResponse:
    """Return the API view of an engine ``TurnResult``; ``history`` (the session's earlier traces) explains an
    answer picked from options."""
    return TurnResponse(
        session_id=result.session_id, reply=result.reply, kind=str(result.kind), state=str(result.state),
        answer_id=result.answer_id, trace=jsonable(result.trace or {}), why=customer_why(result.trace or {}, history),
        confidence=getattr(result, "confidence", None),  # calibrated confidence
        options=[TurnOption(number=int(o.number), label=str(o.label), answer_id=getattr(o, "answer_id", None))
                 for o in result.options or ()],
    )


def live_session(manager: Any, quotas: Quotas, session_id: str, *, traces: bool) -> Any:
    """Return the stored session; 404 ``session_expired`` (and the session purged) when it was idle too long."""
    record = manager.session(session_id, traces=traces)
    if quotas.expired(record):
        manager.store.delete(session_id)
        raise ApiError(404, "session_expired", "this session expired after being idle too long; start a new one")
    return record


@router.post("/sessions", response_model=SessionCreated, status_code=201,
             responses={c: {"model": ErrorResponse} for c in (429, 503)}, dependencies=[Depends(rate_limit("session"))])
async def create_session(request: Request) -> SessionCreated:
    """Start a dialogue session; return its id and its token, which every later request on it must send."""
    service = get_service(request)
    quotas = get_quotas(request)
    token = new_token()

    def work() -> str:
        manager = service.manager()
        # nobody knows the new id before this response, so the token is in place before anyone can ask for it
        session_id = quotas.start_session(manager, new_session_id())
        manager.store.set_token(session_id, token_digest(token))
        return session_id

    return SessionCreated(session_id=await quotas.run(request, work, lane=TURN, cheap=True), token=token)


@router.post("/sessions/{session_id}/messages", response_model=TurnResponse, responses=_ERRORS,
             dependencies=[Depends(rate_limit("turn"))])
async def post_message(
    body: MessageRequest,
    request: Request,
    session_id: str = SessionId,
    explain: bool = Query(False, description="Add both discourse trees and the matched chains as pictures."),
    token: str = SessionToken,
) -> Response:
    """Handle one customer turn: return the reply, any clarification options, the session state and the trace.

    Needs the session's token (`X-Session-Token`) or the API key (`X-API-Key`); 404 `session_not_found` without."""
    service = get_service(request)
    quotas = get_quotas(request)

    def work() -> Response:
        manager = service.manager()
        require_session_access(request, manager.store, session_id, token)
        quotas.purge_due(manager.store)
        text = check_text(body.text, service.settings, limit=message_limit(service))
        with manager.session_lock(session_id):  # the expiry check and the turn are one step of this session
            return _turn(manager, text)

    def _turn(manager: Any, text: str) -> Response:
        live_session(manager, quotas, session_id, traces=False)  # 404 before any work on an unknown id (no trace parsing)
        payload: list[str] = []

        def respond(result: Any, record: Any) -> None:
            # the response is built and serialised before the session is written: if this fails, the turn is not saved
            history = None
            if explain or needs_history(result.trace or {}):
                history = manager.session(session_id).traces  # the stored turns: this one is not saved yet
            out = turn_out(result, history)
            if explain:
                out.explain = explain_turn(service, result=result, user_text=text,
                                           session_question=record.question or "", history=history)
            payload.append(out.model_dump_json())

        manager.handle(session_id=session_id, text=text, before_save=respond)
        return Response(content=payload[0], media_type="application/json")

    return await quotas.run(request, work, lane=TURN, cheap=is_cheap_turn(body.text, explain=explain))


@router.get("/sessions/{session_id}", response_model=SessionOut,
            responses={c: {"model": ErrorResponse} for c in (404, 422, 429, 503)})
async def get_session(request: Request, session_id: str = SessionId, token: str = SessionToken) -> SessionOut:
    """Return the session's transcript and per-turn traces.

    Needs the session's token (`X-Session-Token`) or the API key (`X-API-Key`); 404 `session_not_found` without."""
    service = get_service(request)
    quotas = get_quotas(request)

    def work() -> Any:
        manager = service.manager()
        require_session_access(request, manager.store, session_id, token)  # before the lock and any trace is read
        with manager.session_lock(session_id):  # never a transcript read half-way through a turn's save
            return live_session(manager, quotas, session_id, traces=True)

    record = await quotas.run(request, work, lane=TURN, cheap=True)
    data = jsonable(record.to_dict())
    # a reloaded chat page shows each answer's plain why again, as the turn's response did
    for index, why in transcript_whys(data.get("transcript") or [], data.get("traces") or []).items():
        data["transcript"][index]["why"] = why
    data["session_id"] = data.get("session_id") or data.get("id") or session_id
    return SessionOut(**data)
