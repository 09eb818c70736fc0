"""Syntactic-generalization phrases of every indexed answer, stored beside a SQLite index.

File, for an index ``answers.sqlite``: ``answers.sqlite.sg.json`` =
``{"kind": "dtdialog-sg-phrases", "version": 2, "index": {fingerprint}, "ids": [...], "phrases": ["[...]", ...]}``
where each answer's phrases are one JSON string of ``[kind, lemmas, pos]`` lists (``PhraseChunk.to_list``).

The learned ranker's ``sg`` feature generalizes the query's phrases with each candidate's; parsing every
candidate with spaCy at query time would cost most of a turn, so every answer is parsed once, at index time,
in one batched pass.

``fingerprint`` (answer count, a digest of the ids, the index's ``built`` stamp and write generation) ties the file
to the index it was made from: ``sg_store_for`` rebuilds a missing, corrupt or out-of-step file.
The file is written to a temporary name and renamed, so a reader never sees half of it. Its name carries
the index's generation (``answers.sqlite.sg-<generation>.json``, ``index.index_files``), so a reader of a
rebuilt index never picks up the old index's phrases, nor the other way round.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from index.base import AnswerIndex
from index.index_files import has_side_store, index_generation, load_side_store, prune_side_files, side_path
from parsers.errors import InputError, ModelNotAvailableError
from parsers.nlp_base import AnalyzedText
from parsers.phrase_chunks import PhraseChunk, extract_phrases, keys_of, phrases_of_texts

log = logging.getLogger("dtdialog.index")
KIND = "dtdialog-sg-phrases"
VERSION = 2  # 2: each answer's phrase list is one JSON string (decoded on use)


def sg_path(index_path: str | Path, generation: str | None = None) -> Path:
    """Return the SG phrase file of ``generation`` (default: the index file's current one) of the index at ``index_path``."""
    if generation is None:
        generation = index_generation(index_path)
    return side_path(index_path, "sg", ".json", generation)


def index_fingerprint(index: AnswerIndex) -> dict[str, Any]:
    """Return what identifies an index's content cheaply: answer count, ids digest, build stamp."""
    ids = sorted(index.ids())
    # an index that stamps every write (``generation``) also catches answers replaced under the same ids
    return {"count": int(index.count()), "ids": hashlib.sha1("\n".join(ids).encode()).hexdigest()[:16],
            "built": index.info().get("built"), "generation": index.generation()}


def _encode(phrases: Sequence[PhraseChunk]) -> str:
    return json.dumps([p.to_list() for p in phrases], separators=(",", ":"))


def _decode(raw: str) -> tuple[PhraseChunk, ...]:
    data = json.loads(raw)
    if not isinstance(data, list):
        raise ValueError("a phrase list must be a JSON list")
    return tuple(PhraseChunk.from_list(p) for p in data)


def _check(raw: str) -> None:
    """Raise ``ValueError`` unless ``raw`` is a phrase list as ``_encode`` writes it: a JSON list of
    ``[kind, lemmas, pos]`` with strings everywhere and as many lemmas as POS tags, what ``_decode_keys`` expects.

    Stricter than ``_decode`` (which turns other lemmas into strings) and cheaper: it builds no phrase.
    """
    data = json.loads(raw)
    if type(data) is not list:
        raise ValueError("a phrase list must be a JSON list")
    for chunk in data:
        if type(chunk) is not list or len(chunk) != 3:
            raise ValueError(f"malformed phrase chunk {chunk!r}")
        kind, lemmas, pos = chunk
        if type(kind) is not str or type(lemmas) is not list or type(pos) is not list or len(lemmas) != len(pos):
            raise ValueError(f"malformed phrase chunk {chunk!r}")
        try:  # str.join takes strings only, and checks them in C
            "".join(lemmas), "".join(pos)
        except TypeError:
            raise ValueError(f"malformed phrase chunk {chunk!r}") from None


def _decode_keys(raw: str) -> tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]:
    """Return the ``(kind, lemmas, pos)`` of each phrase of an entry ``_check`` accepted (a loaded store's, or one
    ``_encode`` wrote): plain tuples, which the SG feature scores as it would the phrases (``_decode``), built
    without checking every field again."""
    return tuple([(kind, tuple(lemmas), tuple(pos)) for kind, lemmas, pos in json.loads(raw)])


def _chunks(keys) -> tuple[PhraseChunk, ...]:
    trusted = PhraseChunk._trusted
    return tuple([trusted(kind, lemmas, pos) for kind, lemmas, pos in keys])


class SGPhraseStore:
    """Phrase lists by answer id; ``phrases(doc_id)`` returns None for an answer it does not hold.

    Each answer's phrases are held as one compact JSON string and decoded on use (the ``DECODED_CACHE``
    most recent kept): live phrase objects of every answer would be scanned by each full garbage collection,
    inside a turn, while strings are not.
    """

    # room for many turns' candidates: decoding is mostly JSON parsing, paid again on every miss (docs/ranking.md)
    DECODED_CACHE = 4096

    # ``encoded`` entries are ``_encode`` output (``encoded()`` of another store, or a file ``from_dict`` checked
    # with ``_check``): ``phrase_keys`` decodes them without checking every field again.

    def __init__(self, *, ids: Sequence[str], phrases: Sequence[Sequence[PhraseChunk]] | None = None,
                 encoded: Sequence[str] | None = None, fingerprint: dict[str, Any] | None = None,
                 digests: Sequence[str] | None = None) -> None:
        raw = list(encoded) if encoded is not None else [_encode(p) for p in (phrases or [])]
        if len(ids) != len(raw):
            raise InputError(f"SG phrase store: {len(ids)} ids for {len(raw)} phrase lists")
        if digests is not None and len(digests) != len(ids):
            raise InputError(f"SG phrase store: {len(digests)} text digests for {len(ids)} ids")
        self.ids = list(ids)
        self.fingerprint = dict(fingerprint or {})
        self._raw = dict(zip(self.ids, raw))
        #: each answer's text digest (``index.dense_store.text_digest``): what a refresh may keep unparsed
        self.digests = dict(zip(self.ids, digests)) if digests is not None else None
        self._decoded: OrderedDict[str, tuple] = OrderedDict()  # phrase_keys, the DECODED_CACHE most recent
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._raw

    def prime(self, ids: Sequence[str]) -> None:
        """Do nothing: every answer's phrases are already in memory (``ElasticSGPhrases`` fetches them here)."""

    def phrases(self, doc_id: str) -> tuple[PhraseChunk, ...] | None:
        """Return the stored phrases of ``doc_id``, or None when the store does not hold it."""
        keys = self.phrase_keys(doc_id)
        return _chunks(keys) if keys is not None else None

    def phrase_keys(self, doc_id: str) -> tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] | None:
        """Return the ``(kind, lemmas, pos)`` of each stored phrase of ``doc_id`` (what the SG feature reads, cheaper
        to decode than ``phrases``), or None when the store does not hold it. The same tuple while it stays cached."""
        with self._lock:
            hit = self._decoded.get(doc_id)
            if hit is not None:
                self._decoded.move_to_end(doc_id)
                return hit
        raw = self._raw.get(doc_id)
        if raw is None:
            return None
        decoded = _decode_keys(raw)  # validated when the store was made or loaded
        with self._lock:
            self._decoded[doc_id] = decoded
            if len(self._decoded) > self.DECODED_CACHE:
                self._decoded.popitem(last=False)
        return decoded

    def encoded(self, doc_id: str) -> str | None:
        """Return the stored (JSON string) phrase list of ``doc_id``, or None: what a backend stores as is."""
        return self._raw.get(doc_id)

    def in_step_with(self, index) -> bool:
        """Return True when this store was made from ``index`` as it is now (same fingerprint)."""
        return bool(self.fingerprint) and self.fingerprint == index_fingerprint(index)

    # --- persistence --------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out = {"kind": KIND, "version": VERSION, "index": self.fingerprint, "ids": self.ids,
               "phrases": [self._raw[i] for i in self.ids]}
        if self.digests is not None:
            out["digests"] = [self.digests[i] for i in self.ids]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SGPhraseStore:
        """Return the store of ``to_dict`` output; raises ``InputError`` when it is not one (every entry is checked)."""
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise InputError("not a dtdialog SG phrase file")
        if data.get("version") != VERSION:
            raise InputError(f"SG phrase file version {data.get('version')}, expected {VERSION}")
        try:
            ids, encoded = [str(i) for i in data["ids"]], list(data["phrases"])
            for raw in encoded:
                if not isinstance(raw, str):
                    raise ValueError("a phrase list must be a JSON string")
                _check(raw)  # a bad entry fails here, at load, never in the middle of a turn
            digests = data.get("digests")
            if digests is not None and (not isinstance(digests, list) or len(digests) != len(ids)):
                digests = None  # unusable: the next refresh parses every answer again
            return cls(ids=ids, encoded=encoded, fingerprint=data.get("index") or {},
                       digests=[str(d) for d in digests] if digests is not None else None)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"malformed SG phrase file: {exc}") from None

    @property
    def generation(self) -> str:
        """Return the generation of the index this store was made from ("" when unknown)."""
        return str(self.fingerprint.get("generation") or "")

    def save(self, index_path: str | Path) -> Path:
        """Write the store beside ``index_path`` atomically, named by its index generation; return the file path."""
        from parsers.files import atomic_write

        path = sg_path(index_path, self.generation)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = json.dumps(self.to_dict(), separators=(",", ":")).encode("utf-8")
        atomic_write(path, lambda f: f.write(payload))
        return path

    @classmethod
    def exists(cls, index_path: str | Path, *, generation: str | None = None) -> bool:
        """Return True when the phrases of the index's ``generation`` (default: its current one) are beside it."""
        return has_side_store(index_path, "sg", ".json", generation=generation,
                              load=lambda g: cls.load(index_path, generation=g))

    @classmethod
    def load(cls, index_path: str | Path, *, generation: str | None = None, latest: bool = False) -> SGPhraseStore:
        """Return the phrases of ``generation`` (default: the index file's current one) beside ``index_path``.

        A file written before files were named by generation is returned only when it records that
        generation. ``latest=True`` falls back to the newest file of any generation: what a refresh starts from.
        Raises ``ModelNotAvailableError`` when there is none, ``InputError`` when it is corrupt.
        """
        return load_side_store(index_path, "sg", ".json", generation=generation, latest=latest,
                               read=lambda g: cls._read(sg_path(index_path, g)),
                               generation_of=lambda store: store.generation,
                               missing=f"no SG phrases beside {index_path}; they are built on first use")

    @classmethod
    def _read(cls, path: Path) -> SGPhraseStore:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise InputError(f"corrupt SG phrase file {path}: {exc}") from None
        try:
            return cls.from_dict(data)
        except InputError as exc:
            raise InputError(f"corrupt SG phrase file {path}: {exc}") from None


class ParsedPhrases:
    """The SG phrases of answers read off the analyses the build's parser already made, by answer id.

    ``build_sg_store(previous=parsed.as_previous(...))`` then keeps them instead of running spaCy over the
    same texts a second time; an answer missing here (parsed one by one after a refused batch, added by a
    ``finish`` step) or whose stored text differs is parsed there as before.
    """

    def __init__(self) -> None:
        self._entries: dict[str, tuple[str, str]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, doc_id: str, text: str, analyzed: AnalyzedText) -> None:
        """Keep the phrases of ``analyzed``, the analysis of the answer ``doc_id`` whose text is ``text``."""
        from index.dense_store import text_digest

        self._entries[doc_id] = (text_digest(text), _encode(extract_phrases(analyzed)))

    def as_previous(self, previous: SGPhraseStore | None = None) -> SGPhraseStore:
        """Return a store of these phrases, plus the entries of ``previous`` (an older store) not parsed here."""
        entries = dict(self._entries)
        if previous is not None and previous.digests is not None:
            for doc_id in previous.ids:
                entries.setdefault(doc_id, (previous.digests[doc_id], previous._raw[doc_id]))
        ids = list(entries)
        return SGPhraseStore(ids=ids, encoded=[entries[i][1] for i in ids], digests=[entries[i][0] for i in ids])


def build_sg_store(*, ids: Sequence[str], texts: Sequence[str], nlp=None, fingerprint: dict[str, Any] | None = None,
                   progress: bool = True, previous: SGPhraseStore | None = None) -> SGPhraseStore:
    """Parse ``texts`` in one batched spaCy pass (tqdm bar on stderr) and return their phrase store.

    With ``previous`` (an older store of the same index that kept text digests), answers whose id
    and text are unchanged keep their phrases and only new or edited answers are parsed: adding a
    few answers to a 10k index costs a few parses, not 10k.
    """
    from index.dense_store import text_digest

    if len(ids) != len(texts):
        raise InputError(f"{len(ids)} ids for {len(texts)} texts")
    digests = [text_digest(t) for t in texts]
    old = previous.digests if previous is not None and previous.digests is not None else {}
    todo = [i for i, (doc_id, digest) in enumerate(zip(ids, digests)) if old.get(doc_id) != digest]
    # the bar shows even when every answer is kept: the stage is there, only quick
    parsed = phrases_of_texts([texts[i] for i in todo], nlp=nlp, progress=progress, desc="SG phrases",
                              done=len(ids) - len(todo))
    fresh = dict(zip(todo, (_encode(p) for p in parsed)))
    encoded = [fresh[i] if i in fresh else previous._raw[doc_id] for i, doc_id in enumerate(ids)]
    return SGPhraseStore(ids=ids, encoded=encoded, fingerprint=fingerprint, digests=digests)


def build_for_index(index_path: str | Path, *, index=None, nlp=None, progress: bool = True,
                    previous: SGPhraseStore | None = None, beside: str | Path | None = None) -> SGPhraseStore:
    """Parse the answers of the SQLite index at ``index_path`` (or the open ``index``) and save the store beside it.

    ``previous``: the out-of-step store it replaces; its unchanged answers are not parsed again.
    ``beside``: save beside this path instead (the builder: the path the finished temporary index is renamed to).
    """
    from index.sqlite_index import SqliteIndex

    if index is None:
        with SqliteIndex(Path(index_path)) as opened:
            return build_for_index(index_path, index=opened, nlp=nlp, progress=progress, previous=previous,
                                   beside=beside)
    ids, texts = index.answer_texts()
    store = build_sg_store(ids=ids, texts=texts, nlp=nlp, fingerprint=index_fingerprint(index), progress=progress,
                           previous=previous)
    store.save(beside if beside is not None else index_path)
    return store


def sg_store_for(index, index_path: str | Path, *, nlp=None, progress: bool = True) -> SGPhraseStore:
    """Return the SG phrase store beside ``index_path``, built when missing or corrupt, refreshed when out of step.

    A refresh parses only the answers added or edited since (the store keeps each answer's text digest).
    """
    generation = index.generation()
    previous = None
    try:
        store = SGPhraseStore.load(index_path, generation=generation, latest=True)
        if store.in_step_with(index):
            return store
        log.info("refreshing the SG phrases beside %s: the index changed since they were made", index_path)
        previous = store
    except ModelNotAvailableError:
        pass
    except InputError as exc:  # derived data: rebuild rather than fail
        log.warning("rebuilding the SG phrases beside %s: %s", index_path, exc)
    store = build_for_index(index_path, index=index, nlp=nlp, progress=progress, previous=previous)
    prune_side_files(index_path, generation, kinds=("sg",))  # older phrase files are no use to anyone now
    return store


class ElasticSGPhrases:
    """The ``phrases(doc_id)`` of an ``SGPhraseStore``, read from an Elasticsearch index built with them.

    ``prime(ids)`` fetches the phrase lists of a step's candidates not cached yet in one ``mget``
    (``SignalExtractor`` calls it before scoring); the ``cache_size`` most recent are kept, encoded.
    Like ``EsDenseStore``, it assumes the index behind the alias does not change while it runs.
    """

    def __init__(self, *, index, cache_size: int = 4096) -> None:
        if cache_size < 1:
            raise InputError(f"cache_size must be at least 1, got {cache_size}")
        self.index = index
        self.cache_size = cache_size
        self._raw: OrderedDict[str, str | None] = OrderedDict()
        self._lock = threading.Lock()

    def prime(self, ids: Sequence[str]) -> None:
        """Fetch the phrases of every id not cached yet, in one request (ids without phrases are cached as None)."""
        with self._lock:
            todo = [i for i in dict.fromkeys(ids) if i not in self._raw]
        if not todo:
            return
        found = self.index.fetch_sg_phrases(todo)
        with self._lock:
            for doc_id in todo:
                self._raw[doc_id] = found.get(doc_id)
            while len(self._raw) > self.cache_size:
                self._raw.popitem(last=False)

    def phrases(self, doc_id: str) -> tuple[PhraseChunk, ...] | None:
        """Return the stored phrases of ``doc_id`` (fetched now if not primed), or None when it has none."""
        self.prime([doc_id])
        with self._lock:
            primed = doc_id in self._raw
            raw = self._raw.get(doc_id)
        if not primed:  # evicted by another thread's prime in between: fetched for this call alone
            raw = self.index.fetch_sg_phrases([doc_id]).get(doc_id)
        if raw is None:
            return None
        try:
            return _decode(raw)
        except (TypeError, ValueError, KeyError):
            return None  # a damaged entry: the caller parses the answer instead

    def phrase_keys(self, doc_id: str) -> tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] | None:
        """Return the ``(kind, lemmas, pos)`` of each phrase of ``phrases(doc_id)``, or None as it does."""
        phrases = self.phrases(doc_id)
        return tuple(keys_of(phrases)) if phrases is not None else None
