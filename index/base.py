"""The answer index interface shared by every backend, its documents, queries and hits.

A ``SearchQuery`` is immutable (elasticsearch-dsl style): ``with_*`` methods
return new queries, and each backend turns it into its own request.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from parsers.errors import ConfigError, InputError

#: Longest answer or dialogue id an index stores.
MAX_ID_CHARS = 256
#: What an id may hold: ASCII letters, digits and ``._:#/@~-`` (``@`` and ``~`` mark the benchmarks' replicas).
#: Never markup, quotes, spaces or control characters: ids are echoed in pages, traces and URLs.
ID_REGEX = r"^[A-Za-z0-9._:#/@~-]+$"
_ID = re.compile(ID_REGEX)


def check_id(value: object, *, field: str = "id") -> str:
    """Return ``value`` when it is a safe id (``ID_REGEX``, at most ``MAX_ID_CHARS``); else ``InputError``."""
    if not isinstance(value, str) or len(value) > MAX_ID_CHARS or not _ID.fullmatch(value):
        shown = repr(value[:60]) if isinstance(value, str) else type(value).__name__
        raise InputError(f"{field} {shown} is not a valid id: use 1 to {MAX_ID_CHARS} ASCII letters, digits "
                         "or ._:#/@~- characters")
    return value


def checked_documents(documents: Iterable[AnswerDocument]) -> Iterator[AnswerDocument]:
    """Yield ``documents``, raising ``InputError`` at the first whose id or dialogue id is not a safe id.

    What every backend's ``add`` reads its documents through: the storage boundary.
    """
    for doc in documents:
        check_id(doc.id)
        check_id(doc.dialogue_id, field="dialogue_id")
        yield doc


@dataclass(frozen=True)
class RRTerm:
    """A term ``Relation [phrase]``: a relation plus the content words of its EDUs (query or answer side).

    ``str(term)`` is its text form, ``"Contrast [start car]"``: what is stored in an index and shown in
    traces. ``RRTerm.parse`` reads that form back; it is the only reader of stored terms (a user's query
    string goes through ``index.query_parser``, which accepts looser spellings).
    """

    relation: str
    words: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.relation} [{' '.join(self.words)}]"

    @classmethod
    def parse(cls, text: str) -> RRTerm:
        """Return the term whose ``str`` is ``text`` (``"Relation [w1 w2]"``); words split on whitespace."""
        relation, _, rest = text.partition(" [")
        return cls(relation=relation, words=tuple(rest.rstrip("]").split()))


@dataclass(frozen=True)
class AnswerDocument:
    """One indexed answer utterance, with everything needed at query time precomputed.

    ``rr_edu`` holds one ``RRTerm`` per non-default relation node (relation + the words of its EDUs);
    ``to_dict``/``from_dict`` are the storage boundary, where terms become and are read back from text.
    ``tree`` is the DT as ``DiscourseTree.to_dict()``.
    """

    id: str
    dialogue_id: str
    position: int
    text: str
    keywords: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    relations: tuple[str, ...] = ()
    rr_edu: tuple[RRTerm, ...] = ()
    tree: dict[str, Any] | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "dialogue_id": self.dialogue_id, "position": self.position, "text": self.text,
            "keywords": list(self.keywords), "entities": list(self.entities), "relations": list(self.relations),
            "rr_edu": [str(t) for t in self.rr_edu], "tree": self.tree, "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnswerDocument:
        return cls(
            id=str(data["id"]), dialogue_id=str(data["dialogue_id"]), position=int(data["position"]),
            text=str(data["text"]), keywords=tuple(data.get("keywords", ())), entities=tuple(data.get("entities", ())),
            relations=tuple(data.get("relations", ())), rr_edu=tuple(RRTerm.parse(t) for t in data.get("rr_edu", ())),
            tree=data.get("tree"), meta=dict(data.get("meta") or {}),
        )


@dataclass(frozen=True)
class SearchQuery:
    """An immutable search request over the ``keywords`` and ``rr_edu`` fields."""

    keywords: tuple[str, ...] = ()
    rr_terms: tuple[RRTerm, ...] = ()
    relations: tuple[str, ...] = ()  # filter: answers must contain at least one of these
    exclude_ids: tuple[str, ...] = ()
    size: int = 10
    rr_weight: float = 1.0

    def with_keywords(self, *words: str) -> SearchQuery:
        return replace(self, keywords=self.keywords + tuple(words))

    def with_rr(self, relation: str, words: Iterable[str]) -> SearchQuery:
        return replace(self, rr_terms=self.rr_terms + (RRTerm(relation, tuple(words)),))

    def with_relation_filter(self, *relations: str) -> SearchQuery:
        return replace(self, relations=self.relations + tuple(relations))

    def excluding(self, *ids: str) -> SearchQuery:
        return replace(self, exclude_ids=self.exclude_ids + tuple(ids))

    def with_size(self, size: int) -> SearchQuery:
        return replace(self, size=size)

    def is_empty(self) -> bool:
        return not self.keywords and not any(t.words for t in self.rr_terms)

    def to_dict(self) -> dict[str, Any]:
        return {
            "keywords": list(self.keywords), "rr_terms": [str(t) for t in self.rr_terms],
            "relations": list(self.relations), "exclude_ids": list(self.exclude_ids), "size": self.size,
        }


@dataclass(frozen=True)
class SearchHit:
    """A scored document; ``matched`` maps field name -> the terms or EDU phrases that matched."""

    document: AnswerDocument
    score: float
    matched: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class AnswerVersion:
    """An earlier version of a stored answer: its number (higher = newer), when it was replaced (epoch s), the document."""

    version: int
    replaced: float
    document: AnswerDocument


class AnswerIndex(ABC):
    """What every index backend offers. Use as a context manager to close it."""

    backend: str = "base"
    #: True when ``add`` keeps the replaced version of an answer and ``history`` returns it
    supports_history: bool = False

    @abstractmethod
    def add(self, documents: Iterable[AnswerDocument]) -> int:
        """Add documents (replacing any with the same id); return how many were added."""

    @abstractmethod
    def search(self, query: SearchQuery) -> list[SearchHit]:
        """Return up to ``query.size`` hits, best first. Raises ``InputError`` for an empty query."""

    @abstractmethod
    def get(self, doc_id: str) -> AnswerDocument | None:
        """Return the document with ``doc_id``, or None."""

    def get_many(self, doc_ids: Sequence[str]) -> dict[str, AnswerDocument]:
        """Return the documents of ``doc_ids`` still in the index, by id; the default is one ``get`` each."""
        return {doc_id: doc for doc_id in dict.fromkeys(doc_ids) if (doc := self.get(doc_id)) is not None}

    def search_scores(self, query: SearchQuery) -> list[tuple[str, float]]:
        """Return up to ``query.size`` ``(id, score)`` pairs, best first, without building hits.

        For callers that merge several searches and keep only the best documents in the end
        (``hits_for``); a backend that can skip loading the documents overrides it.
        """
        return [(h.document.id, h.score) for h in self.search(query)]

    def hits_for(self, scored: Sequence[tuple[str, float]], query: SearchQuery) -> list[SearchHit]:
        """Return a hit per ``(id, score)`` still in the index, in that order, with what ``query`` matched.

        The default has no matched fields; backends that can compute them override it.
        """
        return [SearchHit(document=doc, score=float(score)) for doc_id, score in scored
                if (doc := self.get(doc_id)) is not None]

    @abstractmethod
    def count(self) -> int:
        """Return the number of indexed documents."""

    @abstractmethod
    def ids(self) -> list[str]:
        """Return the id of every document, each once (SQLite: insertion order; Elasticsearch: id order)."""

    def documents(self) -> Iterator[AnswerDocument]:
        """Yield every document; the default reads them one ``get`` at a time."""
        for doc_id in self.ids():
            doc = self.get(doc_id)
            if doc is not None:
                yield doc

    def history(self, doc_id: str) -> list[AnswerVersion]:
        """Return the earlier versions of ``doc_id``, newest first; a backend without history raises ``ConfigError``."""
        raise ConfigError(f"the {self.backend} index backend keeps no answer history")

    def answer_texts(self) -> tuple[list[str], list[str]]:
        """Return ``(ids, texts)`` of every document, aligned: what stores derived from the answers are built from.

        The default reads the documents one ``get`` at a time; a backend that can read them in bulk overrides it.
        """
        pairs = [(doc_id, doc.text) for doc_id in self.ids() if (doc := self.get(doc_id)) is not None]
        return [doc_id for doc_id, _ in pairs], [text for _, text in pairs]

    def info(self) -> dict[str, Any]:
        """Return the build information stored with the index (parser, corpus, counts).

        The default is ``{}``: the backend stores none (Elasticsearch).
        """
        return {}

    def generation(self) -> str:
        """Return a token that changes with every write, so data derived from the answers can tell it is stale.

        The default is ``""``: the backend does not stamp writes (Elasticsearch), and a store derived from
        it can only compare counts and ids, not notice answers replaced under the same ids.
        """
        return ""

    def dense_info(self) -> dict[str, Any] | None:
        """Return the description of the dense vectors stored with the documents (model, dims, ...).

        The default is None: the index holds no vectors (a SQLite index keeps them beside its file,
        in ``index.dense_store``, not in the index).
        """
        return None

    def replaced_on_disk(self) -> bool:
        """Return True when the storage this index was opened on has since been replaced by a rebuild (a server
        then loads the new one). Backends that swap in place (an Elasticsearch alias) are never replaced."""
        return False

    def probe(self, timeout: float) -> str | None:
        """Return None when a search could read the index now, else why not in a few words (a readiness probe that
        takes at most about ``timeout`` seconds).

        The default is None: a backend without a cheap probe is not tried (an Elasticsearch index).
        """
        return None

    def lock_free(self, timeout: float) -> bool:
        """Return True when the index's own lock can be taken within ``timeout`` seconds (a readiness probe).

        The default is True: a backend without a client-side lock is never stuck on one.
        """
        return True

    @abstractmethod
    def close(self) -> None:
        """Release the backend's resources."""

    def __enter__(self) -> AnswerIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
