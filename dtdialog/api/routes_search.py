"""``GET/POST /search``: a question (or a query string) -> ranked answers with matched fields and agreement verdicts."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request

from dtdialog.api.deps import check_text, get_service, message_limit
from dtdialog.api.models import (
    MAX_SEARCH_SIZE,
    VISIBLE_TEXT,
    Agreement,
    ErrorResponse,
    SearchHitOut,
    SearchRequest,
    SearchResponse,
)
from dtdialog.api.quotas import get_quotas, rate_limit
from dtdialog.understanding.intents import MAX_TURN_CHARS

router = APIRouter(tags=["search"])
_ERRORS: dict[int | str, dict[str, Any]] = {c: {"model": ErrorResponse} for c in (400, 413, 422, 429, 503)}


def agreement_out(agreement: Any) -> Agreement | None:
    """Return the API view of an engine ``AgreementResult`` (None stays None)."""
    if agreement is None:
        return None
    data = agreement.to_dict() if hasattr(agreement, "to_dict") else dict(vars(agreement))
    return Agreement(verdict=bool(data.get("verdict")), score=float(data.get("score") or 0.0),
                     addressed=data.get("addressed"), required=data.get("required"),
                     chains=[str(c) for c in data.get("chains") or []],
                     missing=[str(m) for m in data.get("missing") or []])


def _hit_out(document: Any, *, score: float, retrieval_score: float | None, matched: dict[str, list[str]] | None,
             agreement: Any = None, features: dict[str, Any] | None = None) -> SearchHitOut:
    return SearchHitOut(
        id=document.id, dialogue_id=document.dialogue_id, position=document.position, text=document.text,
        score=float(score), retrieval_score=None if retrieval_score is None else float(retrieval_score),
        matched={str(k): [str(x) for x in v] for k, v in (matched or {}).items()},
        relations=list(document.relations), agreement=agreement_out(agreement),
        features={str(k): v for k, v in features.items()} if features else None,
    )


def run_search(service: Any, *, query: str, size: int, mode: str) -> SearchResponse:
    """Return the response of a search (call on the engine thread).

    A question is ranked as a turn would be, so it has a customer message's limit: this also bounds what one
    search costs the engine (a 100,000-character question took seconds). A query string (``mode="query"``)
    is only retrieved, not parsed: it keeps ``max_text_chars``.
    """
    limit = None if mode == "query" else message_limit(service)
    query = check_text(query, service.settings, field="query", limit=limit)
    runtime = service.runtime()
    if mode == "query":
        from index.query_parser import parse_query_string

        parsed = parse_query_string(query, empty_ok=True).with_size(size)
        # only stop words or punctuation: nothing to look for, so nothing found (as a question of no usable words)
        hits = [] if parsed.is_empty() else runtime.index.search(parsed)
        return SearchResponse(query=query, mode=mode, parsed_query=parsed.to_dict(), hits=[
            _hit_out(h.document, score=h.score, retrieval_score=h.score, matched=h.matched) for h in hits])
    outcome = runtime.selector.rank_outcome(question=query, size=size)
    # each candidate keeps the fields its own search hit matched: the index is not asked again
    hits = [
        _hit_out(c.document, score=c.score, retrieval_score=c.retrieval_score, matched=c.matched,
                 agreement=c.agreement, features=c.features)
        for c in outcome.candidates[:size]
    ]
    return SearchResponse(query=query, mode=mode, question_tree=outcome.plan.tree.to_dict(),
                          question_compact=outcome.plan.tree.to_compact(), requirements=list(outcome.requirements),
                          parsed_query=outcome.query.to_dict(), rejected=len(outcome.rejected), hits=hits)


async def _search(request: Request, *, query: str, size: int, mode: str) -> SearchResponse:
    service = get_service(request)
    check_text(query, service.settings, field="query")  # refused before queueing when over every limit
    return await get_quotas(request).run(request, lambda: run_search(service, query=query, size=size, mode=mode))


@router.get("/search", response_model=SearchResponse, responses=_ERRORS, dependencies=[Depends(rate_limit("search"))])
async def search_get(
    request: Request,
    q: str = Query(min_length=1, json_schema_extra=VISIBLE_TEXT, description="The question (at most "
                                             f"{MAX_TURN_CHARS:,} characters, a customer message's limit), or a query "
                                             "string in 'query' mode (the general text limit)."),
    size: int = Query(10, ge=1, le=MAX_SEARCH_SIZE),
    mode: Literal["question", "query"] = Query("question"),
) -> SearchResponse:
    """Return the best answers for ``q``, each with its score, the fields that matched and its agreement verdict."""
    return await _search(request, query=q, size=size, mode=mode)


@router.post("/search", response_model=SearchResponse, responses=_ERRORS, dependencies=[Depends(rate_limit("search"))])
async def search_post(body: SearchRequest, request: Request) -> SearchResponse:
    """Same as ``GET /search`` with the query in a JSON body (for long questions)."""
    return await _search(request, query=body.query, size=body.size, mode=body.mode)
