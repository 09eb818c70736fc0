"""Index management: ``GET /index``, ``POST /index/documents``, ``POST /index/rebuild`` (``X-API-Key`` when configured)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Request

from dtdialog.api.deps import check_text, get_service, require_api_key
from dtdialog.api.errors import ApiError
from dtdialog.api.models import (
    AddDocumentsRequest,
    AddDocumentsResponse,
    ErrorResponse,
    IndexStats,
    RebuildRequest,
    RebuildResponse,
)

router = APIRouter(prefix="/index", tags=["index"], dependencies=[Depends(require_api_key)])
_ERRORS: dict[int | str, dict[str, Any]] = {c: {"model": ErrorResponse} for c in (400, 401, 403, 413, 422)}


def index_path(service: Any) -> Path:
    """Return the SQLite index file the service serves (loads the engine)."""
    return Path(service.runtime().index_location)


@router.get("", response_model=IndexStats, responses=_ERRORS)
async def index_stats(request: Request) -> IndexStats:
    """Return the index backend, its number of answers and the parser it was built with."""
    service = get_service(request)

    def work() -> IndexStats:
        index = service.runtime().index
        info = index.info()
        location = index_path(service).name if service.settings.backend == "sqlite" else None
        return IndexStats(backend=service.settings.backend, documents=index.count(), location=location,
                          parser=(info.get("parser") or {}).get("name") if isinstance(info.get("parser"), dict)
                          else info.get("parser"))

    return await service.call(work)


@router.post("/documents", response_model=AddDocumentsResponse, responses=_ERRORS)
async def add_documents(body: AddDocumentsRequest, request: Request) -> AddDocumentsResponse:
    """Parse each answer and add it to the index (an answer with an existing id replaces it); return the new ids."""
    service = get_service(request)
    settings = service.settings
    if len(body.answers) > settings.max_documents_per_request:
        raise ApiError(413, "too_many_documents",
                       f"{len(body.answers)} answers in one request; the limit is {settings.max_documents_per_request}")
    texts = [check_text(a.text, settings, field=f"answers[{i}].text") for i, a in enumerate(body.answers)]
    # the question is checked like any other text (limit, valid Unicode), never cut short silently
    questions = [check_text(a.question, settings, field=f"answers[{i}].question") if a.question and a.question.strip()
                 else None for i, a in enumerate(body.answers)]

    def work() -> AddDocumentsResponse:
        from index.documents import build_document

        parser = service.parser()
        docs = []
        for answer, text, question in zip(body.answers, texts, questions):
            dialogue_id = answer.dialogue_id or "api-" + hashlib.sha1(text.encode()).hexdigest()[:10]
            meta = {"source": "api"}
            if question:
                meta["question"] = question
            docs.append(build_document(doc_id=answer.id or f"{dialogue_id}#{answer.position}", dialogue_id=dialogue_id,
                                       position=answer.position, text=text, tree=parser.parse(text), meta=meta))
        runtime = service.runtime()
        replaced = [d.id for d in docs if runtime.index.get(d.id) is not None]
        if settings.backend == "sqlite":
            from index.sqlite_index import SqliteIndex

            # The serving index is read-only; a short-lived writer commits and the readers see the rows at once.
            with SqliteIndex(index_path(service), readonly=False) as writer:
                added = writer.add(docs)
        else:
            added = runtime.index.add(docs)
        if replaced or service.ranks_with_vectors():
            # The selector caches each answer's DT analysis by id (a replaced answer must not keep the old one),
            # and the learned ranker's dense vectors must cover the new answers (only those are encoded).
            service.refresh_selector()
        return AddDocumentsResponse(added=added, ids=[d.id for d in docs], documents=runtime.index.count())

    return await service.call(work)


@router.post("/rebuild", response_model=RebuildResponse, responses=_ERRORS)
async def rebuild(body: RebuildRequest, request: Request) -> RebuildResponse:
    """Rebuild the index from the built-in corpus, or from a corpus file under a configured rebuild root."""
    service = get_service(request)
    settings = service.settings
    if settings.backend != "sqlite":
        raise ApiError(400, "unsupported_backend", "rebuild over HTTP is only available for the sqlite backend")
    source = _source_path(body, settings.rebuild_roots)

    def work() -> RebuildResponse:
        from index.builder import build_index

        start = time.perf_counter()
        dialogues = _load_dialogues(source)
        target = index_path(service)
        target.parent.mkdir(parents=True, exist_ok=True)
        # build_index writes a temp file and renames it: open readers keep the old file until they are replaced.
        report = build_index(dialogues=dialogues, parser=service.parser(), backend="sqlite", out=target, progress=False)
        runtime = service.build_engine(index_path=target)
        service.replace_runtime(runtime)
        return RebuildResponse(documents=runtime.index.count(), dialogues=report.dialogues, skipped=len(report.skipped),
                               seconds=round(time.perf_counter() - start, 3), backend="sqlite")

    return await service.call(work)


def _source_path(body: RebuildRequest, roots: tuple[Path, ...]) -> Path | None:
    if body.source == "builtin":
        if body.path:
            raise ApiError(422, "validation_error", "path is only allowed with source='path'")
        return None
    if not body.path:
        raise ApiError(422, "validation_error", "source='path' needs a path")
    if not roots:
        raise ApiError(403, "rebuild_path_disabled", "this server allows no server-side corpus path (no rebuild root configured)")
    if "\x00" in body.path:
        raise ApiError(422, "validation_error", "path contains a NUL character")
    candidate = Path(body.path)
    resolved = (candidate if candidate.is_absolute() else roots[0] / candidate).resolve()
    if not any(resolved == r or r in resolved.parents for r in roots):
        raise ApiError(403, "path_not_allowed", "the path is outside the server's rebuild roots")
    if not resolved.exists():
        raise ApiError(404, "corpus_not_found", f"no corpus at {body.path!r}")
    return resolved


def _load_dialogues(source: Path | None) -> list[Any]:
    if source is None:
        from data.builtin import load_builtin_corpus

        return load_builtin_corpus()
    from data.loaders import load_corpus

    return load_corpus(source, fmt="jsonl")
