"""Build an answer index from dialogues: clean and parse every answer, make documents, load a backend atomically.

SQLite: the index is written to a temporary file next to ``out`` and renamed over it only when
complete (``os.replace``), so a crash or error leaves the old index untouched and no temp file. With
``dense=True`` its vectors and SG phrases are written *before* that rename, under names carrying the new
index's generation (``index.index_files``): the rename swaps index, vectors and phrases as one unit.
A build holds a lock file beside ``out`` throughout, refuses an ``out`` that is not a dtdialog index
(``force`` replaces a regular file), and first removes what killed builds left behind. A ``finish`` step
(``POST /index/rebuild``: the answers added through the API and the version history) writes into the new
file under that lock, before its side files are made and before the rename.
Elasticsearch: documents go into a fresh index, and the alias is switched only when complete.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from data.model import ANSWER, Dialogue, Turn
from index.base import AnswerDocument, check_id
from index.documents import build_document
from index.index_files import build_lock, check_output, clean_leftovers, prune_side_files, side_files, temp_prefix
from index.position import source_role
from index.registry import BACKENDS, DEFAULT_INDEX_NAME, es_url
from parsers.base import RSTParser
from parsers.errors import ConfigError, InputError, ModelNotAvailableError
from parsers.nlp_base import AnalyzedText

#: Documents written per SQLite transaction.
WRITE_BATCH = 500
#: At most this many characters of the customer's reply a follow-up answer was written for (``meta["reply_before"]``).
REPLY_CHARS = 400


@dataclass
class BuildReport:
    """What a build did: counts, skipped answers with reasons, and timings."""

    backend: str
    location: str
    parser: str
    dialogues: int = 0
    answers: int = 0
    indexed: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    #: wall seconds of parsing and writing the answers (with ``dense``, encoding runs meanwhile)
    parse_seconds: float = 0.0
    #: wall seconds of the ``dense`` side files after the parse: encoding still to finish, then the SG phrases
    encode_seconds: float = 0.0
    sg_seconds: float = 0.0
    kept_api_answers: int = 0
    dropped_api_answers: int = 0
    #: corpus records the loader skipped as malformed before the build saw them (set by the caller that loaded)
    malformed: int = 0

    @property
    def answers_per_second(self) -> float:
        """Return indexed answers per wall-clock second of the whole build."""
        return self.indexed / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["skipped"] = [list(s) for s in self.skipped]
        data["answers_per_second"] = round(self.answers_per_second, 2)
        return data

    def summary(self) -> str:
        """Return a one-line human summary; its counts include the malformed records, so they add up."""
        if self.malformed:
            # a malformed record never became an answer: count it in the total, or "of N" hides it
            of = f"{self.answers + self.malformed} (answers + malformed records)"
            skipped = (f"{len(self.skipped) + self.malformed} ({self.malformed} malformed record(s), "
                       f"{len(self.skipped)} answer(s))")
        else:
            of, skipped = f"{self.answers} answers", str(len(self.skipped))
        return (f"indexed {self.indexed} of {of} from {self.dialogues} dialogues into "
                f"{self.backend} {self.location} in {self.seconds:.1f}s ({self.answers_per_second:.1f} answers/s, "
                f"parser {self.parser}); skipped {skipped}" + self._carried())

    def _carried(self) -> str:
        if not (self.kept_api_answers or self.dropped_api_answers):
            return ""
        text = f"; kept {self.kept_api_answers} answer(s) added through the API"
        if self.dropped_api_answers:
            text += f", {self.dropped_api_answers} moved to the answer history"
        return text


def _clean(text: str) -> str:
    try:
        from parsers.text_input import clean_text
    except ImportError:  # the shared cleaner is optional; a plain strip keeps the builder usable
        return text.strip()
    return clean_text(text)


def iter_answers(dialogues: Iterable[Dialogue]) -> Iterator[tuple[Dialogue, int, Turn]]:
    """Yield ``(dialogue, position, turn)`` for every answer turn, in corpus order."""
    for dialogue in dialogues:
        for position, turn in dialogue.answers():
            yield dialogue, position, turn


def _cleaned_answers(answers: list[tuple[Dialogue, int, Turn]],
                     skipped: list[tuple[str, str]]) -> list[tuple[Dialogue, int, str]]:
    """Return the answers with a safe id and a non-empty cleaned text; the others go to ``skipped``."""
    ready: list[tuple[Dialogue, int, str]] = []
    for dialogue, position, turn in answers:
        try:
            check_id(dialogue.answer_id(position))  # an unsafe id skips the answer here, not the whole build later
            text = _clean(turn.text)
        except InputError as exc:
            skipped.append((dialogue.answer_id(position), str(exc)))
            continue
        if not text:
            skipped.append((dialogue.answer_id(position), "empty answer text"))
            continue
        ready.append((dialogue, position, text))
    return ready


def parse_documents(
    answers: list[tuple[Dialogue, int, Turn]],
    *,
    parser: RSTParser,
    batch_size: int = 64,
    n_process: int = 1,
    progress: bool = True,
    skipped: list[tuple[str, str]] | None = None,
    on_document: Callable[[AnswerDocument, AnalyzedText | None], None] | None = None,
) -> Iterator[AnswerDocument]:
    """Yield the document of every answer that cleans and parses; others go to ``skipped`` as ``(id, reason)``.

    Parsing goes through ``parser.parse_many`` (batched, ``n_process`` workers). When the parser
    refuses a text, the remaining answers are parsed one by one and only the refused ones are skipped.
    ``on_document(document, analysis)`` sees each document before it is yielded, with the parser's analysis of
    its text when the parser hands it out (``analyze_and_parse_many``), else None.
    """
    from tqdm import tqdm

    skipped = skipped if skipped is not None else []
    ready = _cleaned_answers(answers, skipped)
    bar = tqdm(total=len(ready), desc="parsing answers", unit="answer", file=sys.stderr, disable=not progress,
               dynamic_ncols=True)

    def document(item: tuple[Dialogue, int, str], tree) -> AnswerDocument:
        dialogue, position, text = item
        first = min(p for p, _ in dialogue.answers())
        return build_document(doc_id=dialogue.answer_id(position), dialogue_id=dialogue.id, position=position, text=text,
                              tree=tree, meta=_doc_meta(dialogue, position, first), role=source_role(position, first))

    def seen(doc: AnswerDocument, analysis: AnalyzedText | None = None) -> AnswerDocument:
        if on_document is not None:
            on_document(doc, analysis)
        return doc

    texts = (text for _, _, text in ready)
    analyze_and_parse = getattr(parser, "analyze_and_parse_many", None)
    parsed = (analyze_and_parse(texts, batch_size=batch_size, n_process=n_process) if analyze_and_parse is not None
              else ((None, tree) for tree in parser.parse_many(texts, batch_size=batch_size, n_process=n_process)))
    done = 0
    try:
        try:
            for analysis, tree in parsed:
                item = ready[done]
                done += 1
                bar.update(1)
                yield seen(document(item, tree), analysis)
        except InputError:
            # A parser may refuse a whole batch for one text (e.g. it validates every text first), so the
            # culprit is unknown: finish the rest one text at a time and skip exactly the refused ones.
            for item in ready[done:]:
                bar.update(1)
                try:
                    tree = parser.parse(item[2])
                except InputError as exc:
                    skipped.append((item[0].answer_id(item[1]), str(exc)))
                    continue
                yield seen(document(item, tree))
    finally:
        bar.close()


def _doc_meta(dialogue: Dialogue, position: int, first: int) -> dict[str, Any]:
    keep = {k: v for k, v in dialogue.meta.items() if k in ("source", "category", "tags", "split", "company")}
    keep["question"] = dialogue.question[:300]
    before = dialogue.turns[position - 1] if position > first else None
    if before is not None and before.role != ANSWER:
        # a follow-up was written for this reply: it must not be given after a reply that went the other way
        keep["reply_before"] = before.text[:REPLY_CHARS]
    return keep


def _check_build(backend: str, *, out: str | Path | None, force: bool, finish: Any, batch_size: int,
                 n_process: int) -> None:
    """Refuse bad options and a refused output path before any parsing: a refusal costs nothing."""
    _check_options(backend, batch_size=batch_size, n_process=n_process)
    if finish is not None and backend != "sqlite":
        raise ConfigError("a finish step is only supported by the sqlite backend")
    if backend == "sqlite":
        if out is None:
            raise ConfigError("the sqlite backend needs an output path (--out)")
        check_output(out, force=force)


def build_index(
    *,
    dialogues: Iterable[Dialogue],
    parser: RSTParser,
    backend: str,
    out: str | Path | None,
    url: str | None = None,
    batch_size: int = 64,
    n_process: int = 1,
    progress: bool = True,
    index_name: str = DEFAULT_INDEX_NAME,
    dense: bool = False,
    encoder: Any = None,
    finish: Callable[[Any], None] | None = None,
    force: bool = False,
    lock_timeout: float = 0.0,
    reuse_side_files: bool = False,
    api_answers: str = "keep",
    info: dict[str, Any] | None = None,
) -> BuildReport:
    """Build (or rebuild) the index of every answer in ``dialogues``; return the ``BuildReport``.
    ``backend="sqlite"`` writes ``out`` atomically (temp file + rename); ``backend="elasticsearch"`` loads ``url``
    (default ``$ELASTICSEARCH_URL``) under alias ``index_name``. Raises ``ConfigError`` for an unknown backend or bad
    option, ``InputError`` when there is no answer to index. ``dense=True`` also writes the answers' MiniLM vectors
    and SG phrases: beside the file (sqlite: ``index.dense_store``, ``index.sg_store``), or with each document and
    the term statistics beside the index (elasticsearch: ``ElasticsearchIndex.rebuild(..., dense=store)``).
    ``encoder`` encodes the answers for ``dense=True`` (default: the packaged MiniLM). The rest is sqlite only:
    ``force`` replaces ``out`` even when it is a regular file that is not a dtdialog index (devices, directories and
    links to them are always refused, ``InputError``); ``lock_timeout``: seconds to wait for another build of ``out``
    before ``IndexBusyError``; ``finish(index)`` runs on the new, still writable ``SqliteIndex`` under the build lock,
    before the side files and the rename, so what must survive a rebuild (API answers, version history) lands in
    the same atomic swap; ``reuse_side_files`` (with ``dense``) starts from the replaced index's vectors and SG
    phrases, so only new or edited answers are encoded and parsed (same encoder only); ``api_answers``: ``keep``
    carries the API's answers into the new index, ``drop`` only into its history (the history is always carried,
    ``index.carry_over``); ``info``: build information (e.g. the bot's profile) stored in the same swap.
    """
    _check_build(backend, out=out, force=force, finish=finish, batch_size=batch_size, n_process=n_process)
    t0 = time.perf_counter()
    dialogue_list = list(dialogues)
    answers = list(iter_answers(dialogue_list))
    if not answers:
        raise InputError("the corpus has no answer turns to index")
    report = BuildReport(backend=backend, location="", parser=getattr(parser, "name", type(parser).__name__),
                         dialogues=len(dialogue_list), answers=len(answers))
    side = _SideFiles.start(parser, encoder=encoder, progress=progress, reuse=reuse_side_files,
                            answers=len(answers)) if dense else None
    try:
        documents = parse_documents(answers, parser=parser, batch_size=batch_size, n_process=n_process,
                                    progress=progress, skipped=report.skipped,
                                    on_document=side.see if side is not None else None)
        if backend == "sqlite":
            _write_sqlite(Path(out), documents, report, side=side, progress=progress, force=force,
                          lock_timeout=lock_timeout, finish=finish, api_answers=api_answers, info=info)
        else:
            _write_es(url, index_name, documents, report, side=side, progress=progress)
    finally:
        if side is not None:
            side.close()
    report.seconds = time.perf_counter() - t0
    return report


def _check_options(backend: str, *, batch_size: int, n_process: int) -> None:
    """Raise ``ConfigError`` before any parsing for an unknown backend or a batch size / process count below 1."""
    if backend not in BACKENDS:
        raise ConfigError(f"unknown index backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    if batch_size < 1 or n_process < 1:
        raise ConfigError("batch_size and n_process must be at least 1")


#: Whether a ``dense`` build encodes the answers in a worker thread while it parses the next ones
#: (``BackgroundEncoding``): the parse keeps one core busy, so the encoder takes the other (docs/index.md).
ENCODE_WHILE_PARSING = True


@dataclass(frozen=True)
class _SideFiles:
    """How a ``dense`` build makes the new index's vectors and SG phrases (see ``build_index``).

    ``phrases``: the SG phrases read off the parser's own analyses (None when its analyses are not the ones the
    SG phrases come from); ``encoding``: the answers' vectors, encoded while the parse goes on (None when the
    vectors of the index being replaced are reused instead: most answers need no encoding then).
    """

    encoder: Any
    progress: bool
    reuse: bool
    phrases: Any = None
    encoding: Any = None

    @classmethod
    def start(cls, parser: RSTParser, *, encoder: Any, progress: bool, reuse: bool, answers: int) -> _SideFiles:
        from index.dense_store import BackgroundEncoding
        from index.sg_store import ParsedPhrases
        from parsers.phrase_chunks import phrases_from_analysis_of

        if encoder is None:
            from index.dense import DenseEncoder

            encoder = DenseEncoder()  # one for the whole build: the worker's and the refresh's vectors must match
        same_analysis = (getattr(parser, "analyze_and_parse_many", None) is not None
                         and phrases_from_analysis_of(getattr(parser, "nlp", None)))
        overlap = ENCODE_WHILE_PARSING and not reuse
        return cls(encoder=encoder, progress=progress, reuse=reuse,
                   phrases=ParsedPhrases() if same_analysis else None,
                   encoding=BackgroundEncoding(encoder, total=answers, progress=progress) if overlap else None)

    def see(self, doc: AnswerDocument, analysis: AnalyzedText | None) -> None:
        """Take what the build needs of one parsed answer: its phrases, and its text to encode."""
        if self.phrases is not None and analysis is not None:
            self.phrases.add(doc.id, doc.text, analysis)
        if self.encoding is not None:
            self.encoding.add(doc.id, doc.text)

    def dense_previous(self, previous: Any) -> Any:
        """Return the vectors to start from: those encoded during the parse, else ``previous``."""
        return self.encoding.store() if self.encoding is not None else previous

    def sg_previous(self, previous: Any) -> Any:
        """Return the phrases to start from: those of the parse, plus ``previous``'s of answers not parsed now."""
        return self.phrases.as_previous(previous) if self.phrases is not None else previous

    def close(self) -> None:
        if self.encoding is not None:
            self.encoding.close()


def _write_sqlite(out: Path, documents: Iterable[AnswerDocument], report: BuildReport, *, side: _SideFiles | None,
                  progress: bool, force: bool, lock_timeout: float, finish: Callable[[Any], None] | None,
                  api_answers: str = "keep", info: dict[str, Any] | None = None) -> None:
    """Write the SQLite index at ``out`` (and, with ``side``, its vectors and SG phrases beside it) under the lock,
    carrying over the old index's API answers and history (``index.carry_over``)."""
    from index.carry_over import read_carry_over

    report.location = str(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    notify = (lambda line: print(line, file=sys.stderr, flush=True)) if progress else None
    with build_lock(out, timeout=lock_timeout, notify=notify):
        check_output(out, force=force)  # again: another build may have replaced it while this one waited
        clean_leftovers(out)
        carry = read_carry_over(out, api_answers=api_answers)

        def finish_all(new_index: Any) -> None:
            carry(new_index)
            if info:
                new_index.set_info(**info)
            if finish is not None:
                finish(new_index)

        generation = _build_sqlite(out, documents, report, side=side, finish=finish_all)
        report.kept_api_answers, report.dropped_api_answers = carry.kept, carry.dropped
        prune_side_files(out, generation, locked=True)


def _write_side_files(built: Path, out: Path, side: _SideFiles, report: BuildReport) -> None:
    """Write the vectors and SG phrases of the finished index ``built`` beside ``out``, named by its generation."""
    # answer embeddings (``index.dense_store``; needs the [dense] extra) and the answers' SG phrases the learned
    # ranker's ``sg`` feature reads (``index.sg_store``)
    from index.dense_store import DenseStore, build_for_index
    from index.sg_store import SGPhraseStore
    from index.sg_store import build_for_index as build_sg_for_index

    t0 = time.perf_counter()
    build_for_index(built, encoder=side.encoder, progress=side.progress, beside=out,
                    previous=side.dense_previous(_previous_store(DenseStore, out) if side.reuse else None))
    t1 = time.perf_counter()
    build_sg_for_index(built, progress=side.progress, beside=out,
                       previous=side.sg_previous(_previous_store(SGPhraseStore, out) if side.reuse else None))
    report.encode_seconds, report.sg_seconds = t1 - t0, time.perf_counter() - t1


def _previous_store(store_class: Any, out: Path) -> Any:
    """Return the side store of the index at ``out`` (the newest of any generation), or None: derived data."""
    try:
        return store_class.load(out, latest=True)
    except (InputError, ModelNotAvailableError):
        return None  # none, or damaged: everything is encoded / parsed afresh


def _write_es(url: str | None, index_name: str, documents: Iterable[AnswerDocument], report: BuildReport, *,
              side: _SideFiles | None, progress: bool) -> None:
    """Load ``documents`` into the Elasticsearch alias ``index_name`` (with vectors when ``dense``)."""
    from index.es_index import ElasticsearchIndex

    target = es_url(url)
    report.location = f"{target}/{index_name}"
    with ElasticsearchIndex(target, index_name=index_name) as es:
        if side is not None:
            report.indexed = _rebuild_es_dense(es, documents, side=side, report=report)
        else:
            report.indexed = es.rebuild(documents)


def _rebuild_es_dense(es, documents: Iterable[AnswerDocument], *, side: _SideFiles, report: BuildReport) -> int:
    """Parse all answers, encode them (``build_dense_store``: batches, a tqdm bar, hubness, term statistics)
    and extract their SG phrases, then load documents, vectors and phrases in one alias-swapped rebuild;
    return the count indexed.

    Nothing is written to the server before encoding has succeeded, so a missing model or a
    failed parse never leaves a half-written index.
    """
    from index.dense_store import build_dense_store, refresh_dense_store
    from index.sg_store import build_sg_store

    t0 = time.perf_counter()
    docs = list(documents)
    report.parse_seconds = time.perf_counter() - t0
    if not docs:
        raise InputError("no answer could be parsed; nothing to index "
                         f"(first problem: {report.skipped[0][1] if report.skipped else 'none'})")
    ids, texts = [d.id for d in docs], [d.text for d in docs]
    encoded = side.dense_previous(None)
    store = (refresh_dense_store(encoded, ids=ids, texts=texts, encoder=side.encoder, progress=side.progress)[0]
             if encoded is not None else
             build_dense_store(ids=ids, texts=texts, encoder=side.encoder, progress=side.progress))
    report.encode_seconds = time.perf_counter() - t0 - report.parse_seconds
    # the learned ranker's SG feature reads each answer's phrases from its document (no parse per turn)
    sg = build_sg_store(ids=ids, texts=texts, progress=side.progress, previous=side.sg_previous(None))
    report.sg_seconds = time.perf_counter() - t0 - report.parse_seconds - report.encode_seconds
    return es.rebuild(docs, dense=store, sg=sg)


def _build_sqlite(out: Path, documents: Iterable[AnswerDocument], report: BuildReport, *,
                  side: _SideFiles | None, finish: Callable[[Any], None] | None) -> str:
    """Write the index (and side files) for ``out`` and rename it into place; return its generation."""
    fd, tmp_name = tempfile.mkstemp(prefix=temp_prefix(out), suffix=".tmp", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()  # SQLite must create the file itself; mkstemp only reserved a unique name
    generation = ""
    try:
        report.indexed, generation = _fill_sqlite(tmp, documents, report, finish=finish)
        if side is not None:
            _write_side_files(tmp, out, side, report)
        # Stale -wal/-shm files of the old index must not be replayed against the new file: drop them first.
        # Open readers keep the old files through their handles and see the old snapshot until they reopen.
        for suffix in ("-wal", "-shm"):
            _remove_quietly(Path(f"{out}{suffix}"))
        check_output(out, force=True)  # once more: the build lock does not stop anyone else putting a FIFO there
        os.replace(tmp, out)  # the one atomic step: index, vectors and phrases go live together
    except BaseException:
        _remove_quietly(tmp)
        for path in side_files(out).get(generation, []) if generation else []:
            _remove_quietly(path)  # side files of an index that never went live
        raise
    finally:
        for suffix in ("-wal", "-shm", "-journal"):
            _remove_quietly(Path(f"{tmp}{suffix}"))
    return generation


def _fill_sqlite(tmp: Path, documents: Iterable[AnswerDocument], report: BuildReport, *,
                 finish: Callable[[Any], None] | None) -> tuple[int, str]:
    """Write every document (then ``finish``) into the new index file ``tmp``; return ``(corpus answers added, its
    generation)``."""
    from index.sqlite_index import SqliteIndex

    index = SqliteIndex(tmp, readonly=False)
    try:
        t0 = time.perf_counter()
        added = 0
        batch: list[AnswerDocument] = []
        for doc in documents:
            batch.append(doc)
            if len(batch) >= WRITE_BATCH:
                added += index.add(batch)
                batch = []
        if batch:
            added += index.add(batch)
        report.parse_seconds = time.perf_counter() - t0
        if added == 0:
            raise InputError("no answer could be parsed; nothing to index "
                             f"(first problem: {report.skipped[0][1] if report.skipped else 'none'})")
        if finish is not None:
            finish(index)
        index.set_info(parser=report.parser, dialogues=report.dialogues, answers=report.answers,
                       indexed=added, skipped=len(report.skipped), built=time.strftime("%Y-%m-%dT%H:%M:%S"))
        index.optimize()
        return added, index.generation()
    finally:
        index.close()


def _remove_quietly(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
