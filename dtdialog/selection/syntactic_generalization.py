"""Syntactic generalization (Galitsky 2013): relevance as the maximal common sub-phrases of two parses.

Both texts are cut into phrases of three types from a dependency parse: noun phrases (spaCy noun
chunks), verb phrases (a verb with its auxiliaries, negation, particles, objects and complements)
and prepositional phrases (a preposition with its object's subtree). Every pair of same-type
phrases that shares a content lemma is *generalized*: the two word sequences are aligned
monotonically (dynamic programming), and the generalization keeps, in order, each aligned pair
as its common lemma, or as ``*`` with the common part of speech when only the POS agrees
(``the engine`` ^ ``a motor`` -> ``* engine``... ``[DET *] [NOUN engine]``). Generalizations that are
sub-sequences of another of the same type are dropped (the "maximal" in maximal common sub-trees).

The score of a common phrase weighs its words by part of speech (nouns, numbers, adverbs 1.0,
verbs and adjectives 0.5, light verbs 0.3, other words 0.3, a POS-only ``*`` 0.1, a number
wildcard 0.7), as ParseTreeChunkListScorer does; ``sg_score`` sums common phrases weighted by
phrase type (NP 1.0, VP 1.5, PP 0.8) and normalises by the geometric mean of the two texts'
self-similarity, so long answers do not win by size alone.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from parsers.nlp_base import AnalyzedText
from parsers.phrase_chunks import (
    CONTENT_POS,
    MAX_PHRASE_TOKENS,
    PhraseChunk,
    PhraseKey,
    extract_phrases,
    keys_of,
    phrases_of_text,
    phrases_of_texts,
    unused_pipes,
)
from parsers.text_input import plain_text

__all__ = ["CONTENT_POS", "LIGHT_VERBS", "MAX_PHRASE_TOKENS", "PHRASE_WEIGHTS", "CommonPhrase", "PhraseChunk",
           "SyntacticGeneralizer", "extract_phrases", "generalize", "generalize_phrase_lists", "generalize_phrases",
           "PhraseKey", "raw_score", "reduce_by_subsumption", "seed", "sg_score", "sg_score_keys", "sg_score_phrases",
           "sg_text", "word_weight"]

PHRASE_WEIGHTS = {"NP": 1.0, "VP": 1.5, "PP": 0.8}
LIGHT_VERBS = frozenset({"be", "have", "do", "get", "make", "go", "take", "let", "seem"})


@dataclass(frozen=True)
class CommonPhrase:
    """A generalization of two same-type phrases: lemmas (``*`` where only the POS agrees), POS, score."""

    kind: str
    lemmas: tuple[str, ...]
    pos: tuple[str, ...]
    score: float

    def __str__(self) -> str:
        return f"{self.kind}[{' '.join(self.lemmas)}]"

    @classmethod
    def _of(cls, kind: str, lemmas: tuple[str, ...], pos: tuple[str, ...], score: float) -> CommonPhrase:
        """Return ``CommonPhrase(kind, lemmas, pos, score)`` without the frozen dataclass's __init__ (one
        ``object.__setattr__`` per field), for the alignment's ~130 new generalizations per turn."""
        self = object.__new__(cls)
        self.__dict__.update(kind=kind, lemmas=lemmas, pos=pos, score=score)
        return self

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "lemmas": list(self.lemmas), "pos": list(self.pos), "score": round(self.score, 4)}


# --- generalization of two phrases -----------------------------------------------------------------

def word_weight(lemma: str, pos: str) -> float:
    """Return the weight of one word of a generalization (``lemma == "*"`` for a POS-only match)."""
    if lemma == "*":
        return 0.7 if pos == "NUM" else 0.1
    if pos in ("NOUN", "PROPN", "NUM", "ADV"):
        return 1.0
    if pos in ("VERB", "ADJ", "AUX"):
        return 0.3 if lemma in LIGHT_VERBS else 0.5
    return 0.3


_NOMINAL = frozenset({"NOUN", "PROPN"})


def generalize_phrases(p1: PhraseChunk, p2: PhraseChunk) -> CommonPhrase | None:
    """Return the maximal common sub-phrase of two same-type phrases, or None when they share no content lemma.

    A monotone alignment maximising the summed word weights (dynamic programming, like a weighted LCS).
    """
    if p1.kind != p2.kind or not (p1.content & p2.content):
        return None
    return _align(p1.kind, p1.lemmas, p1.pos, _word_weights(p1.lemmas, p1.pos), p2.lemmas, p2.pos)


def _word_weights(lemmas: tuple[str, ...], pos: tuple[str, ...]) -> tuple[list[float], list[float], list[bool]]:
    """Return what ``_align`` reads of its first phrase's words: the weight of each word kept, of each word
    matched on its POS only (``*``), and whether each is a noun; a turn's question phrases work it out once."""
    return ([word_weight(lem, t) for lem, t in zip(lemmas, pos)], [word_weight("*", t) for t in pos],
            [t in _NOMINAL for t in pos])


def _align_python(kind: str, l1: tuple[str, ...], t1: tuple[str, ...],
                  weights1: tuple[list[float], list[float], list[bool]],
                  l2: tuple[str, ...], t2: tuple[str, ...]) -> CommonPhrase | None:
    """Return ``generalize_phrases`` of two same-type phrases known to share a content lemma."""
    n, m = len(l1), len(l2)
    # An aligned pair weighs word_weight(lemma, pos of p1) when the lemmas agree, word_weight("*", pos) when only
    # the POS do, and cannot align when they do not: the weights of p1's words are looked up once, and the
    # loops read plain locals, as the alignment runs for ~a thousand phrase pairs per turn.
    same, star, nominal = weights1
    nominal2 = [t in _NOMINAL for t in t2]
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = best[i], best[i + 1]
        li, ti, wi, si, ni = l1[i], t1[i], same[i], star[i], nominal[i]
        for j in range(m - 1, -1, -1):
            # max(below, right), then max(that, diagonal), spelled out: a strict > keeps the first on ties as max() does
            score = below[j]
            right = row[j + 1]
            if right > score:
                score = right
            if t2[j] == ti or (ni and nominal2[j]):
                diagonal = (wi if l2[j] == li else si) + below[j + 1]
                if diagonal > score:
                    score = diagonal
            row[j] = score
    lemmas, pos, weights, i, j = [], [], [], 0, 0
    isclose = math.isclose
    while i < n and j < m:
        aligned = t2[j] == t1[i] or (nominal[i] and nominal2[j])
        w = same[i] if l2[j] == l1[i] else star[i]
        if aligned and isclose(best[i][j], w + best[i + 1][j + 1]):
            lemmas.append(l1[i] if l1[i] == l2[j] else "*")
            pos.append(t1[i])
            weights.append(w)  # word_weight of the kept (lemma, pos)
            i, j = i + 1, j + 1
        elif isclose(best[i][j], best[i + 1][j]):
            i += 1
        else:
            j += 1
    # A generalization starts and ends with a real common word: bare wildcards at the edges say nothing.
    start, end = 0, len(lemmas)
    while start < end and lemmas[start] == "*":
        start += 1
    while end > start and lemmas[end - 1] == "*":
        end -= 1
    lemmas, pos = lemmas[start:end], pos[start:end]
    for lem, p in zip(lemmas, pos):
        if lem != "*" and p in CONTENT_POS:
            break
    else:
        return None
    return CommonPhrase._of(kind, tuple(lemmas), tuple(pos), sum(weights[start:end]))


def _align_compiled(kind: str, l1: tuple[str, ...], t1: tuple[str, ...],
                    weights1: tuple[list[float], list[float], list[bool]],
                    l2: tuple[str, ...], t2: tuple[str, ...]) -> CommonPhrase | None:
    """``_align_python`` run by the compiled ``dtdialog._phrase_align`` (the same path; the score summed here)."""
    same, star, nominal = weights1
    path = _compiled_path(l1, t1, same, star, nominal, l2, t2, _NOMINAL, CONTENT_POS)
    return None if path is None else CommonPhrase._of(kind, path[0], path[1], sum(path[2]))


try:  # built at install where a C compiler is (setup.py): the alignment is the hot loop of a long question's turn
    from dtdialog._phrase_align import align_path as _compiled_path
except ImportError:
    _compiled_path = None

#: How this process aligns phrases: "compiled" or "python" (the benchmarks report it beside their figures).
ALIGNMENT = "python" if _compiled_path is None else "compiled"
_align = _align_python if _compiled_path is None else _align_compiled


def _is_subsequence(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
    it = iter(long)
    return all(any(x == y for y in it) for x in short)


def reduce_by_subsumption(phrases: Sequence[CommonPhrase]) -> list[CommonPhrase]:
    """Return ``phrases`` without duplicates and without those contained in a longer one of the same type."""
    if len(phrases) < 2:  # most candidates of a turn have one common phrase or none
        return list(phrases)
    unique = list({(p.kind, p.lemmas, p.pos): p for p in phrases}.values())
    unique.sort(key=lambda p: -len(p.lemmas))
    kept: list[CommonPhrase] = []
    for p in unique:
        if not any(k.kind == p.kind and len(k.lemmas) > len(p.lemmas) and _is_subsequence(p.lemmas, k.lemmas)
                   for k in kept):
            kept.append(p)
    return kept


#: Generalizations already computed, by phrase pair: the same phrases ("the battery", "check the fuse") recur across
#: answers, and the alignment is the costly part of scoring ~40-70 candidates per turn. Bounded and cleared when
#: full: kept small, because every live entry is scanned by each full garbage collection of the serving process.
_PAIR_MEMO: dict[tuple, CommonPhrase | None] = {}
_PAIR_MEMO_SIZE = 5_000


class _IndexedPhrases:
    """One text's phrases indexed by (type, content lemma), to find the phrases of another text they pair with.

    A turn scores one question against ~40 answers of ~35 phrases each, most sharing no lemma with the question:
    indexing the question once and looking each answer phrase up in it skips those at the cost of a set test,
    where indexing every answer cost a dictionary entry per content lemma (the pairs found are the same). The
    question's word weights for the alignment are worked out here once too.
    """

    __slots__ = ("by_lemma", "keys", "lemmas", "phrases", "weights")

    def __init__(self, phrases: Sequence[PhraseChunk]) -> None:
        self.phrases = phrases
        self.by_lemma: dict[tuple[str, str], list[int]] = {}
        for idx, p in enumerate(phrases):
            for lem in p.content:
                self.by_lemma.setdefault((p.kind, lem), []).append(idx)
        self.lemmas = frozenset(lem for _, lem in self.by_lemma)
        self.keys = keys_of(phrases)
        self.weights = [_word_weights(p.lemmas, p.pos) for p in phrases]

    def pairs(self, other: Sequence[PhraseKey]) -> list[tuple[int, int]]:
        """Return the sorted (own index, other's index) of same-type phrases sharing a content lemma."""
        disjoint, by_lemma = self.lemmas.isdisjoint, self.by_lemma
        found: set[tuple[int, int]] = set()
        for idx, (kind, lemmas, pos) in enumerate(other):
            if disjoint(lemmas):
                continue
            for lem, t in zip(lemmas, pos):
                if t in CONTENT_POS:
                    for own in by_lemma.get((kind, lem), ()):
                        found.add((own, idx))
        return sorted(found)

    def generalize(self, other: Sequence[PhraseKey], pairs: list[tuple[int, int]] | None = None) -> list[CommonPhrase]:
        """Return ``generalize_phrase_lists(self.phrases, other)`` (``pairs``: ``self.pairs(other)`` if known)."""
        keys, weights, memo = self.keys, self.weights, _PAIR_MEMO
        found: list[CommonPhrase] = []
        # in the order of the phrases of ``self``, then of ``other``: the order reduce_by_subsumption sees
        for own, idx in (self.pairs(other) if pairs is None else pairs):
            k2 = other[idx]
            # keyed by what a generalization depends on, in plain tuples: hashed and compared in C (a key of two
            # phrase objects would run their Python __hash__ and __eq__ on every lookup)
            key = keys[own] + k2
            try:
                g = memo[key]
            except KeyError:
                kind, l1, t1 = keys[own]
                g = _align(kind, l1, t1, weights[own], k2[1], k2[2])  # a shared content lemma: no check needed
                if len(memo) >= _PAIR_MEMO_SIZE:
                    memo.clear()
                memo[key] = g
            if g is not None:
                found.append(g)
        return reduce_by_subsumption(found)


def generalize_phrase_lists(q: Sequence[PhraseChunk], a: Sequence[PhraseChunk]) -> list[CommonPhrase]:
    """Return the maximal common phrases of two phrase lists (pairs of the same type sharing a content lemma)."""
    return _IndexedPhrases(q).generalize(keys_of(a))


def raw_score(common: Iterable[CommonPhrase], *, weights: dict[str, float] | None = None) -> float:
    """Return the phrase-type-weighted sum of common phrase scores."""
    weights = weights or PHRASE_WEIGHTS
    return sum(weights.get(c.kind, 0.0) * c.score for c in common)


# --- the scorer with its parse cache -----------------------------------------------------------------

@lru_cache(maxsize=1024)  # a turn's query is looked up once per candidate
def sg_text(text: str) -> str:
    """Return ``text`` as the SG feature parses it: cleaned as the parser and the index clean text (markup and
    entities removed, spacing normalised, ``parsers.text_input.plain_text``).

    An index stores its answers' cleaned text and their phrases come from it; a question's phrases come from the
    same cleaning, so "doesn&#39;t" in a question meets "doesn't" in an answer, and the question's parse for its
    DT serves the SG feature too (``seed``).
    """
    return plain_text(text)


class SyntacticGeneralizer:
    """Parses texts once (LRU cache) and computes generalizations and ``sg_score`` between them.

    ``nlp`` is a spaCy pipeline (default ``parsers.nlp_spacy.load_spacy()``); ``cache_size`` bounds the
    number of cached texts; ``weights`` maps phrase type to weight.
    """

    def __init__(self, *, nlp=None, cache_size: int = 50_000, weights: dict[str, float] | None = None) -> None:
        if cache_size < 1:
            raise ValueError(f"cache_size must be positive, got {cache_size}")
        self._nlp = nlp
        self.cache_size = cache_size
        self.weights = dict(weights or PHRASE_WEIGHTS)
        self._cache: OrderedDict[str | tuple[str, ...], tuple[list[PhraseChunk], float]] = OrderedDict()
        self._pending: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._executor = None
        # self-similarity of stored phrase lists, by the list object (kept in the value, so its id cannot be reused)
        self._stored_self: dict[int, tuple[Sequence[PhraseChunk], float]] = {}
        # the (type, lemma) index of a cached text's phrases (a turn's question), by the list object; 64 at most
        self._indexed_texts: dict[int, _IndexedPhrases] = {}

    @property
    def nlp(self):
        if self._nlp is None:
            from parsers.nlp_spacy import load_spacy

            self._nlp = load_spacy()
        return self._nlp

    def _store(self, text: str | tuple[str, ...], phrases: list[PhraseChunk]) -> tuple[list[PhraseChunk], float]:
        entry = (phrases, self._self_score(phrases))
        with self._lock:
            self._cache[text] = entry
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return entry

    def _self_score(self, phrases: Sequence[PhraseChunk]) -> float:
        # A text generalized with itself keeps each distinct phrase whole. The set of (kind, lemmas, pos) keys holds
        # and iterates as a set of the phrases would (a PhraseChunk hashes and compares as that key), so the sum
        # adds the same numbers in the same order, with hashing and comparing done in C.
        return self._keys_self_score(keys_of(phrases))

    def _keys_self_score(self, keys: Iterable[PhraseKey]) -> float:
        # each distinct phrase weighs its type's weight times its words' summed word_weight
        weights = self.weights
        return sum([weights.get(kind, 0.0) * sum([word_weight(lem, t) for lem, t in zip(lemmas, pos)])
                    for kind, lemmas, pos in set(keys)])

    def analyze(self, text: str) -> tuple[list[PhraseChunk], float]:
        """Return (phrases, self-similarity) of ``text`` cleaned (``sg_text``), parsing it only the first time."""
        text = sg_text(text)
        with self._lock:  # another thread may evict ``text`` between a lookup and the move (KeyError)
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        pending = self._pending.get(text)
        if pending is not None:  # parsed in the background by ``prefetch``: wait for it rather than parse twice
            return pending.result()
        return self._store(text, phrases_of_text(text, nlp=self.nlp))

    def analyze_messages(self, messages: tuple[str, ...]) -> tuple[list[PhraseChunk], float]:
        """Return (phrases, self-similarity) of several messages (a question and the replies after it): each
        message's phrases, cached apart, in order.

        A reply is a message of its own, so the question's parse (made once, or handed over by ``seed``) serves
        every later step, and only the new reply is parsed.
        """
        if len(messages) == 1:
            return self.analyze(messages[0])
        key = tuple(map(sg_text, messages))
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        return self._store(key, [p for message in messages for p in self.analyze(message)[0]])

    def prefetch(self, text: str | tuple[str, ...]) -> None:
        """Start parsing ``text`` (or each of a tuple of messages) in a worker thread so a later ``analyze``/``score``
        finds it ready.

        The engine calls it when a turn's query text is known, before the agreement checks, so the
        query's parse overlaps them (spaCy's parser releases the GIL for most of its work).
        """
        if isinstance(text, tuple):
            for message in text:
                self.prefetch(message)
            return
        text = sg_text(text)
        if text in self._cache or text in self._pending:
            return
        with self._lock:
            if self._executor is None:
                from concurrent.futures import ThreadPoolExecutor

                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sg-parse")
            executor = self._executor
        nlp = self.nlp  # loaded here, not in the worker
        future = executor.submit(lambda: self._store(text, phrases_of_text(text, nlp=nlp)))
        self._pending[text] = future
        future.add_done_callback(lambda _: self._pending.pop(text, None))  # the result is in the cache by then

    def seed(self, text: str, analyzed: AnalyzedText, *, nlp, disabled: Iterable[str]) -> bool:
        """Cache the phrases of ``text`` from its parse by another user of spaCy (the engine's RST parser), so the
        query is not parsed a second time; return whether it did.

        Only a parse this generalizer would have made itself qualifies: the same pipeline (the same model package
        and version with the same pipes; ``load_spacy()`` may hand the parser its own copy) run with the same pipes
        skipped (``unused_pipes``) on exactly ``text`` as cleaned (``sg_text``), so the phrases are the same.
        """
        text = sg_text(text)
        if not _same_pipeline(nlp, self.nlp) or set(disabled) != set(unused_pipes(nlp)) or analyzed.text != text:
            return False
        if text not in self._cache and text not in self._pending:
            self._store(text, extract_phrases(analyzed))
        return True

    def warm(self, texts: Iterable[str], *, batch_size: int = 64, progress: bool = False) -> None:
        """Parse many texts (cleaned, ``sg_text``) in batches (much faster than one by one) into the cache."""
        todo = [t for t in dict.fromkeys(map(sg_text, texts)) if t not in self._cache]
        if not todo:
            return
        for text, phrases in zip(todo, phrases_of_texts(todo, nlp=self.nlp, batch_size=batch_size,
                                                        progress=progress)):
            self._store(text, phrases)

    def phrases(self, item) -> tuple[list[PhraseChunk], float]:
        """Return (phrases, self-similarity) of a str, a tuple of messages (``analyze_messages``), an
        ``AnalyzedText`` or a spaCy ``Doc``."""
        if isinstance(item, str):
            return self.analyze(item)
        if isinstance(item, tuple):
            return self.analyze_messages(item)
        if isinstance(item, AnalyzedText):
            phrases = extract_phrases(item)
        else:  # a spaCy Doc
            from parsers.nlp_spacy import doc_to_analyzed

            phrases = extract_phrases(doc_to_analyzed(item))
        return phrases, self._self_score(phrases)

    def generalize(self, q, a) -> list[CommonPhrase]:
        """Return the maximal common phrases of ``q`` and ``a`` (str, ``AnalyzedText`` or spaCy ``Doc``)."""
        return generalize_phrase_lists(self.phrases(q)[0], self.phrases(a)[0])

    def score(self, q, a) -> float:
        """Return the normalised SG relevance in [0, 1]: weighted common phrases / sqrt(self(q) * self(a))."""
        (qp, qs), (ap, as_) = self.phrases(q), self.phrases(a)
        return self._normalised(qp, qs, ap, as_)

    def score_phrases(self, q, answer: Sequence[PhraseChunk]) -> float:
        """Return ``score(q, a)`` for an answer given by its stored phrases (``index.sg_store``): no parse of it.

        ``q`` is parsed once (cached) as in ``score``; the result equals ``score(q, a)`` when
        ``answer`` came from ``extract_phrases`` of ``a``'s parse.
        """
        return self._score_keys(q, keys_of(answer), answer, self._self_score)

    def score_keys(self, q, answer: Sequence[PhraseKey]) -> float:
        """Return ``score_phrases(q, a)`` for an answer given by its phrases' keys (``SGPhraseStore.phrase_keys``),
        which a phrase store decodes cheaper than phrase objects."""
        return self._score_keys(q, answer, answer, self._keys_self_score)

    def _score_keys(self, q, keys: Sequence[PhraseKey], answer, self_score) -> float:
        qp, qs = self.phrases(q)
        if qs <= 0:
            return 0.0
        indexed = self._indexed(qp)
        pairs = indexed.pairs(keys)
        if not pairs:  # nothing in common scores 0 whatever the answer's self-similarity: not worked out
            return 0.0
        as_ = self._stored_self_score(answer, self_score)
        if as_ <= 0:
            return 0.0
        return min(1.0, raw_score(indexed.generalize(keys, pairs), weights=self.weights) / math.sqrt(qs * as_))

    def _stored_self_score(self, answer: Sequence, self_score) -> float:
        """Return ``self_score(answer)``, computed once per phrase list: a phrase store hands out the same decoded
        tuple of an answer turn after turn, so its phrases need not be hashed again every turn."""
        hit = self._stored_self.get(id(answer))
        if hit is not None and hit[0] is answer:
            return hit[1]
        score = self_score(answer)
        if len(self._stored_self) >= 2048:  # it keeps the lists alive: no more than a phrase store's decoded cache
            self._stored_self.clear()
        self._stored_self[id(answer)] = (answer, score)
        return score

    def _normalised(self, qp: Sequence[PhraseChunk], qs: float, ap: Sequence[PhraseChunk], as_: float) -> float:
        if qs <= 0 or as_ <= 0:
            return 0.0
        return min(1.0, raw_score(generalize_phrase_lists(qp, ap), weights=self.weights) / math.sqrt(qs * as_))

    def _indexed(self, qp: list[PhraseChunk]) -> _IndexedPhrases:
        """Return the index of a cached text's phrase list, made once for all the candidates of its turn."""
        hit = self._indexed_texts.get(id(qp))
        if hit is not None and hit.phrases is qp:  # the entry holds the list, so its id is not reused while kept
            return hit
        indexed = _IndexedPhrases(qp)
        if len(self._indexed_texts) >= 64:
            self._indexed_texts.clear()
        self._indexed_texts[id(qp)] = indexed
        return indexed


def _same_pipeline(a, b) -> bool:
    """Return True when two spaCy pipelines are the same object or loads of the same model package and version."""
    if a is b:
        return True
    meta_a, meta_b = getattr(a, "meta", None), getattr(b, "meta", None)
    if not isinstance(meta_a, dict) or not isinstance(meta_b, dict):
        return False
    key = ("lang", "name", "version", "spacy_version")
    return all(meta_a.get(k) == meta_b.get(k) for k in key) and bool(meta_a.get("name")) \
        and list(a.pipe_names) == list(b.pipe_names)


_DEFAULT: SyntacticGeneralizer | None = None


def default_generalizer() -> SyntacticGeneralizer:
    """Return the process-wide generalizer the module functions share (its spaCy pipeline is the parser's)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = SyntacticGeneralizer()
    return _DEFAULT


def generalize(q, a) -> list[CommonPhrase]:
    """Return the maximal common phrases of two texts (str, ``AnalyzedText`` or spaCy ``Doc``); parses are cached."""
    return default_generalizer().generalize(q, a)


def sg_score(q, a) -> float:
    """Return the normalised syntactic-generalization relevance of ``a`` to ``q``, in [0, 1]."""
    return default_generalizer().score(q, a)


def prefetch(q: str | tuple[str, ...]) -> None:
    """Start parsing the query text ``q`` (or its messages) in the background (``SyntacticGeneralizer.prefetch``)."""
    default_generalizer().prefetch(q)


def seed(text: str, analyzed: AnalyzedText, *, nlp, disabled: Iterable[str]) -> bool:
    """Cache the phrases of ``text`` from a parse already made (``SyntacticGeneralizer.seed``)."""
    return default_generalizer().seed(text, analyzed, nlp=nlp, disabled=disabled)


def sg_score_phrases(q, answer: Sequence[PhraseChunk]) -> float:
    """Return ``sg_score(q, a)`` for an answer given by its stored phrase list (no parse of the answer)."""
    return default_generalizer().score_phrases(q, answer)


def sg_score_keys(q, answer: Sequence[PhraseKey]) -> float:
    """Return ``sg_score(q, a)`` for an answer given by its stored phrases' keys (``SGPhraseStore.phrase_keys``)."""
    return default_generalizer().score_keys(q, answer)
