"""``POST /parse``: text -> discourse tree JSON, optionally with an SVG picture."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request

from dtdialog.api.deps import check_text, get_service
from dtdialog.api.models import ErrorResponse, ParseRequest, ParseResponse
from dtdialog.api.quotas import bulk_text_limit, get_quotas, rate_limit

router = APIRouter(tags=["parse"])
_ERRORS: dict[int | str, dict[str, Any]] = {c: {"model": ErrorResponse} for c in (400, 413, 422, 429, 503)}


def tree_svg(tree: Any) -> str:
    """Return the SVG picture of a ``DiscourseTree``."""
    from parsers.render import tree_to_svg

    return tree_to_svg(tree)


def parse_response(tree: Any, *, parser_name: str, svg: bool) -> ParseResponse:
    """Return the API view of a parsed tree."""
    return ParseResponse(
        parser=parser_name, tree=tree.to_dict(), compact=tree.to_compact(), relations=list(tree.relations()),
        edus=[e.text for e in tree.leaves()], svg=tree_svg(tree) if svg else None,
    )


@router.post("/parse", response_model=ParseResponse, responses=_ERRORS, dependencies=[Depends(rate_limit("search"))])
async def parse(body: ParseRequest, request: Request, svg: bool = Query(False, description="Add an SVG picture of the tree.")) -> ParseResponse:
    """Return the discourse tree of ``text``: EDUs, relations, nuclearity, a compact form and optionally an SVG."""
    service = get_service(request)
    limit = bulk_text_limit(request, service.settings)
    text = check_text(body.text, service.settings, limit=limit,
                      field="text" if limit is None else "text (longer texts need the API key)")

    def work() -> ParseResponse:
        parser = service.parser()
        return parse_response(parser.parse(text), parser_name=getattr(parser, "name", "?"), svg=svg)

    return await get_quotas(request).run(request, work)
