"""The NLP backend interface: text -> tokens with lemmas, tags, dependencies, sentences and noun phrases.

Backends (spaCy, stanza) fill the same plain dataclasses, so the RST parsers
never depend on one NLP library's object model.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Token:
    """One token. ``head`` is the index of the syntactic head in the same text (itself for a root)."""

    i: int
    text: str
    idx: int
    lemma: str
    pos: str
    tag: str
    dep: str
    head: int
    sent: int
    is_stop: bool = False
    is_punct: bool = False
    whitespace: str = " "

    @property
    def end(self) -> int:
        return self.idx + len(self.text)


@dataclass(frozen=True)
class Phrase:
    """A token span ``[start, end)`` with a label: a noun chunk (``NP``) or a named-entity type."""

    start: int
    end: int
    label: str
    text: str


@dataclass(frozen=True)
class AnalyzedText:
    """A text with its tokens, sentence spans (token ranges) and noun phrases / entities."""

    text: str
    tokens: tuple[Token, ...]
    sentences: tuple[tuple[int, int], ...]
    noun_chunks: tuple[Phrase, ...] = ()
    entities: tuple[Phrase, ...] = ()

    def children(self, i: int) -> list[Token]:
        """Return the syntactic dependents of token ``i``, in order."""
        return [t for t in self.tokens if t.head == i and t.i != i]


class NLPBackend(ABC):
    """Turns raw text into ``AnalyzedText``. Implementations load their models in ``__init__``."""

    name: str = "base"

    @abstractmethod
    def analyze(self, text: str) -> AnalyzedText:
        """Return the analysis of one text."""

    def analyze_many(self, texts: Iterable[str], *, batch_size: int = 64, n_process: int = 1) -> Iterator[AnalyzedText]:
        """Yield analyses of ``texts`` in order. Backends override this to batch."""
        for text in texts:
            yield self.analyze(text)
