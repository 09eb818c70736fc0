"""Index management: ``GET /index``, ``POST /index/documents``, the answer history, ``POST /index/rebuild``.

Writes (every method but GET/HEAD) and the history need a configured API key sent as ``X-API-Key``;
without a configured key they answer 403 ``index_writes_disabled``. ``GET /index`` (counts, backend,
parser, file name; no answer text) is open when no key is configured and needs the key when one is.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path as FilePath
from typing import Any

from fastapi import APIRouter, Depends, Path, Request

from dtdialog.api.deps import check_text, get_service, guard_index, require_index_admin
from dtdialog.api.errors import ApiError
from dtdialog.api.fair_gate import EXCLUSIVE
from dtdialog.api.models import (
    AddDocumentsRequest,
    AddDocumentsResponse,
    AnswerHistory,
    AnswerVersionOut,
    ErrorResponse,
    IndexStats,
    RebuildRequest,
    RebuildResponse,
    RestoreRequest,
    RestoreResponse,
)
from dtdialog.api.quotas import get_quotas
from index.base import ID_REGEX, check_id
from parsers.text_input import plain_text

router = APIRouter(prefix="/index", tags=["index"], dependencies=[Depends(guard_index)])
_ERRORS: dict[int | str, dict[str, Any]] = {c: {"model": ErrorResponse}
                                            for c in (400, 401, 403, 409, 413, 422, 429, 501, 503)}
#: a missing answer, version or corpus file is a 404 (documented, so a schema-driven client expects it)
_NOT_FOUND_ERRORS: dict[int | str, dict[str, Any]] = {**_ERRORS, 404: {"model": ErrorResponse}}
DocId = Path(min_length=1, max_length=200, description="The answer id, e.g. 'brakes-014#5' (URL-encode '#' as %23).")
#: what is restored is stored again, so its id must be a safe one: the schema says so (``check_id`` words the 422)
RestoredId = Path(min_length=1, max_length=200, json_schema_extra={"pattern": ID_REGEX},
                  description="The answer id, e.g. 'brakes-014#5' (URL-encode '#' as %23); letters, digits and "
                              "._:#/@~- only.")


def index_path(service: Any) -> FilePath:
    """Return the SQLite index file the service serves (loads the engine)."""
    return FilePath(service.runtime().index_location)


@contextmanager
def index_writer(service: Any) -> Iterator[tuple[Any, Any]]:
    """Yield the engine and a writer of its index; for SQLite a short-lived writer holding the file's build lock.

    The lock keeps a write and a build of the same file (``dtdialog index build --out`` in another process) apart:
    a write during a build would land in the file the build is about to replace, and be lost. The engine thread
    does not wait for a build to end (every request would stall behind it): 409 ``index_busy`` at once. The engine
    is reloaded first when a build already replaced the file, so the write and what is served are the same file.
    Refresh the selector after the block: the refresh prunes old side files, which needs the lock.
    """
    if service.settings.backend != "sqlite":
        runtime = service.runtime()
        yield runtime, runtime.index
        return
    from index.index_files import build_lock
    from index.sqlite_index import SqliteIndex

    path = index_path(service)
    with build_lock(path, timeout=0):
        runtime = service.runtime()  # loads the replaced file, if a build renamed one over it
        # The serving index is read-only; a short-lived writer commits and the readers see the rows at once.
        with SqliteIndex(path, readonly=False) as writer:
            yield runtime, writer


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

    return await get_quotas(request).run(request, work)


@router.post("/documents", response_model=AddDocumentsResponse, responses=_ERRORS)
async def add_documents(body: AddDocumentsRequest, request: Request) -> AddDocumentsResponse:
    """Parse each answer and add it to the index (an answer with an existing id replaces it); return the new ids."""
    service = get_service(request)
    settings = service.settings
    if len(body.answers) > settings.max_documents_per_request:
        raise ApiError(413, "too_many_documents",
                       f"{len(body.answers)} answers in one request; the limit is {settings.max_documents_per_request}")
    texts = [check_text(a.text, settings, field=f"answers[{i}].text") for i, a in enumerate(body.answers)]
    # the question is checked like any other text (limit, valid Unicode), never cut short silently; one with nothing
    # to show (blank, controls, markup only) is no question, as null is
    questions = [check_text(a.question, settings, field=f"answers[{i}].question") if a.question and plain_text(a.question)
                 else None for i, a in enumerate(body.answers)]

    def parse() -> list[Any]:
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
        return docs

    # Parsing (seconds for 200 answers) shares the engine like a search; only the write runs alone.
    docs = await get_quotas(request).run(request, parse)

    def work() -> AddDocumentsResponse:
        with index_writer(service) as (runtime, writer):
            replaced = [d.id for d in docs if runtime.index.get(d.id) is not None]
            if replaced and not runtime.index.supports_history:
                raise ApiError(409, "history_not_supported", f"the {settings.backend} backend keeps no answer "
                               f"history, so replacing {replaced[0]!r} could not be undone; add the answer under a new id")
            added = writer.add(docs)
        if replaced or service.ranks_with_vectors():
            # The selector caches each answer's DT analysis by id (a replaced answer must not keep the old one),
            # and the learned ranker's dense vectors must cover the new answers (only those are encoded).
            service.refresh_selector()
        else:
            service.note_index_written()  # nothing cached here to redo: not a write by another process
        return AddDocumentsResponse(added=added, ids=[d.id for d in docs], documents=service.runtime().index.count(),
                                    replaced=replaced)

    return await get_quotas(request).run(request, work, lane=EXCLUSIVE)


def _version_out(doc: Any, *, version: int | None = None, replaced: float | None = None) -> AnswerVersionOut:
    when = None if replaced is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(replaced))
    return AnswerVersionOut(version=version, replaced_at=when, id=doc.id, dialogue_id=doc.dialogue_id,
                            position=doc.position, text=doc.text, source=(doc.meta or {}).get("source"))


def _history_of(index: Any, doc_id: str) -> list[Any]:
    if not index.supports_history:
        raise ApiError(501, "history_not_supported", f"the {index.backend} backend keeps no answer history")
    return index.history(doc_id)


@router.get("/documents/{doc_id}/history", response_model=AnswerHistory, responses=_NOT_FOUND_ERRORS,
            dependencies=[Depends(require_index_admin)])
async def answer_history(request: Request, doc_id: str = DocId) -> AnswerHistory:
    """Return the answer served under ``doc_id`` and its earlier versions (newest first), kept when it was replaced."""
    service = get_service(request)

    def work() -> AnswerHistory:
        index = service.runtime().index
        versions = _history_of(index, doc_id)
        current = index.get(doc_id)
        if current is None and not versions:
            raise ApiError(404, "answer_not_found", f"no answer {doc_id!r} and no history for it")
        return AnswerHistory(id=doc_id, current=None if current is None else _version_out(current),
                             versions=[_version_out(v.document, version=v.version, replaced=v.replaced)
                                       for v in versions])

    return await get_quotas(request).run(request, work)


@router.post("/documents/{doc_id}/restore", response_model=RestoreResponse, responses=_NOT_FOUND_ERRORS)
async def restore_answer(request: Request, doc_id: str = RestoredId,
                         body: RestoreRequest | None = None) -> RestoreResponse:
    """Serve an earlier version of ``doc_id`` again (default: the newest); the version it replaces joins the history."""
    check_id(doc_id)  # what is restored is stored again: the id must pass the same check as an added answer (422)
    service = get_service(request)
    wanted = body.version if body is not None else None

    def work() -> RestoreResponse:
        with index_writer(service) as (runtime, writer):
            versions = _history_of(runtime.index, doc_id)
            chosen = next((v for v in versions if wanted is None or v.version == wanted), None)
            if chosen is None:
                raise ApiError(404, "version_not_found", f"answer {doc_id!r} has no earlier version"
                               + ("" if wanted is None else f" {wanted}"))
            writer.add([chosen.document])
        service.refresh_selector()
        return RestoreResponse(id=doc_id, restored_version=chosen.version, documents=service.runtime().index.count())

    return await get_quotas(request).run(request, work, lane=EXCLUSIVE)


@router.post("/rebuild", response_model=RebuildResponse, responses=_NOT_FOUND_ERRORS)
async def rebuild(body: RebuildRequest, request: Request) -> RebuildResponse:
    """Rebuild the index from the built-in corpus, or from a corpus file under a configured rebuild root.

    Answers added through the API are carried into the new index (or, with ``drop_api_answers``, only into
    the history), and the answers' version history is carried over, all in the same atomic swap. The build
    holds the index's build lock (another build of the file: 409 ``index_busy``); when the engine ranks with
    vectors, the new index's vectors and SG phrases are made before that swap too (only new or edited answers
    are encoded again).
    """
    service = get_service(request)
    settings = service.settings
    if settings.backend != "sqlite":
        raise ApiError(400, "unsupported_backend", "rebuild over HTTP is only available for the sqlite backend")
    source = _source_path(body, settings.rebuild_roots)

    def work() -> RebuildResponse:
        from dtdialog.setup.profile import PROFILE_INFO_KEY
        from index.builder import build_index

        start = time.perf_counter()
        dialogues = _load_dialogues(source)
        target = index_path(service)
        target.parent.mkdir(parents=True, exist_ok=True)
        # build_index writes a temp file and renames it: open readers keep the old file until they are replaced.
        # No waiting for another build's lock: the engine thread would stall every request behind it (409 at once).
        # The API answers and the history are read from the file under that lock (``index.carry_over``).
        report = build_index(dialogues=dialogues, parser=service.parser(), backend="sqlite", out=target,
                             progress=False, dense=service.ranks_with_vectors(), reuse_side_files=True,
                             api_answers="drop" if body.drop_api_answers else "keep",
                             info={PROFILE_INFO_KEY: service.profile().to_dict()})  # the bot keeps its wording
        runtime = service.build_engine(index_path=target)
        service.replace_runtime(runtime)
        return RebuildResponse(documents=runtime.index.count(), dialogues=report.dialogues, skipped=len(report.skipped),
                               seconds=round(time.perf_counter() - start, 3), backend="sqlite",
                               kept_api_answers=report.kept_api_answers,
                               dropped_api_answers=report.dropped_api_answers)

    return await get_quotas(request).run(request, work, lane=EXCLUSIVE)


def _source_path(body: RebuildRequest, roots: tuple[FilePath, ...]) -> FilePath | None:
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
    candidate = FilePath(body.path)
    try:
        resolved = (candidate if candidate.is_absolute() else roots[0] / candidate).resolve()
        if not any(resolved == r or r in resolved.parents for r in roots):
            raise ApiError(403, "path_not_allowed", "the path is outside the server's rebuild roots")
        found = resolved.exists()
    except RuntimeError:  # Python 3.11's resolve() on a symbolic link loop (3.13 raises OSError ELOOP)
        raise ApiError(422, "invalid_path", "the path is a symbolic link loop") from None
    except OSError as exc:  # a name too long for the file system, a loop, ...: the client's path, not a server fault
        raise ApiError(422, "invalid_path", f"the path cannot be looked up ({exc.strerror or 'invalid path'})") from None
    if not found:
        raise ApiError(404, "corpus_not_found", f"no corpus at {body.path!r}")
    return resolved


def _load_dialogues(source: FilePath | None) -> list[Any]:
    if source is None:
        from data.builtin import load_builtin_corpus

        return load_builtin_corpus()
    from data.loaders import load_corpus

    return load_corpus(source, fmt="jsonl")
