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
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from parsers.nlp_base import AnalyzedText, Token

PHRASE_WEIGHTS = {"NP": 1.0, "VP": 1.5, "PP": 0.8}
CONTENT_POS = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "ADV", "NUM"})
LIGHT_VERBS = frozenset({"be", "have", "do", "get", "make", "go", "take", "let", "seem"})
_VP_RIGHT_DEPS = frozenset({"dobj", "obj", "prt", "attr", "acomp", "oprd", "xcomp", "dative", "advmod", "npadvmod"})
_VP_LEFT_DEPS = frozenset({"aux", "auxpass", "neg"})
MAX_PHRASE_TOKENS = 10


@dataclass(frozen=True)
class PhraseChunk:
    """A phrase of one text: its type (NP, VP, PP), lemmas and coarse parts of speech, in order."""

    kind: str
    lemmas: tuple[str, ...]
    pos: tuple[str, ...]

    @property
    def content(self) -> frozenset[str]:
        """Return the content lemmas (nouns, verbs, adjectives, adverbs, numbers)."""
        return frozenset(lem for lem, p in zip(self.lemmas, self.pos) if p in CONTENT_POS)

    def __str__(self) -> str:
        return f"{self.kind}[{' '.join(self.lemmas)}]"


@dataclass(frozen=True)
class CommonPhrase:
    """A generalization of two same-type phrases: lemmas (``*`` where only the POS agrees), POS, score."""

    kind: str
    lemmas: tuple[str, ...]
    pos: tuple[str, ...]
    score: float

    def __str__(self) -> str:
        return f"{self.kind}[{' '.join(self.lemmas)}]"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "lemmas": list(self.lemmas), "pos": list(self.pos), "score": round(self.score, 4)}


# --- phrases from a parse ------------------------------------------------------------------------

def _subtree(text: AnalyzedText, root: int, children: dict[int, list[int]]) -> list[int]:
    out, stack = [], [root]
    while stack:
        i = stack.pop()
        out.append(i)
        stack.extend(children.get(i, ()))
    return out


def _chunk(kind: str, tokens: Sequence[Token], indices: Iterable[int]) -> PhraseChunk | None:
    picked = [tokens[i] for i in sorted(set(indices)) if not tokens[i].is_punct and tokens[i].pos != "SPACE"]
    picked = picked[:MAX_PHRASE_TOKENS]
    if not picked or not any(t.pos in CONTENT_POS for t in picked):
        return None
    return PhraseChunk(kind=kind, lemmas=tuple(t.lemma.lower() for t in picked), pos=tuple(t.pos for t in picked))


def extract_phrases(text: AnalyzedText) -> list[PhraseChunk]:
    """Return the NP, VP and PP phrases of an analysed text, in text order within each type."""
    tokens = text.tokens
    children: dict[int, list[int]] = {}
    for t in tokens:
        if t.head != t.i:
            children.setdefault(t.head, []).append(t.i)
    phrases: list[PhraseChunk] = []
    for np_ in text.noun_chunks:
        chunk = _chunk("NP", tokens, range(np_.start, np_.end))
        if chunk:
            phrases.append(chunk)
    for t in tokens:
        if t.pos == "VERB":
            picked = [t.i]
            for c in children.get(t.i, ()):
                dep = tokens[c].dep
                if c < t.i and dep in _VP_LEFT_DEPS:
                    picked.append(c)
                elif c > t.i and dep in _VP_RIGHT_DEPS:
                    picked.extend(_subtree(text, c, children))
            chunk = _chunk("VP", tokens, picked)
            if chunk:
                phrases.append(chunk)
        elif t.dep == "prep" and any(tokens[c].dep in ("pobj", "pcomp") for c in children.get(t.i, ())):
            chunk = _chunk("PP", tokens, _subtree(text, t.i, children))
            if chunk:
                phrases.append(chunk)
    return phrases


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


def _pos_compatible(a: str, b: str) -> bool:
    if a == b:
        return True
    nominal = {"NOUN", "PROPN"}
    return a in nominal and b in nominal


def generalize_phrases(p1: PhraseChunk, p2: PhraseChunk) -> CommonPhrase | None:
    """Return the maximal common sub-phrase of two same-type phrases, or None when they share no content lemma.

    A monotone alignment maximising the summed word weights (dynamic programming, like a weighted LCS).
    """
    if p1.kind != p2.kind or not (p1.content & p2.content):
        return None
    n, m = len(p1.lemmas), len(p2.lemmas)
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            score = max(best[i + 1][j], best[i][j + 1])
            pair = _pair(p1, i, p2, j)
            if pair is not None:
                score = max(score, pair[2] + best[i + 1][j + 1])
            best[i][j] = score
    lemmas, pos, i, j = [], [], 0, 0
    while i < n and j < m:
        pair = _pair(p1, i, p2, j)
        if pair is not None and math.isclose(best[i][j], pair[2] + best[i + 1][j + 1]):
            lemmas.append(pair[0])
            pos.append(pair[1])
            i, j = i + 1, j + 1
        elif math.isclose(best[i][j], best[i + 1][j]):
            i += 1
        else:
            j += 1
    # A generalization starts and ends with a real common word: bare wildcards at the edges say nothing.
    while lemmas and lemmas[0] == "*":
        lemmas.pop(0)
        pos.pop(0)
    while lemmas and lemmas[-1] == "*":
        lemmas.pop()
        pos.pop()
    if not any(lem != "*" and p in CONTENT_POS for lem, p in zip(lemmas, pos)):
        return None
    score = sum(word_weight(lem, p) for lem, p in zip(lemmas, pos))
    return CommonPhrase(kind=p1.kind, lemmas=tuple(lemmas), pos=tuple(pos), score=score)


def _pair(p1: PhraseChunk, i: int, p2: PhraseChunk, j: int) -> tuple[str, str, float] | None:
    l1, l2, t1, t2 = p1.lemmas[i], p2.lemmas[j], p1.pos[i], p2.pos[j]
    if not _pos_compatible(t1, t2):
        return None
    if l1 == l2:
        return l1, t1, word_weight(l1, t1)
    return "*", t1, word_weight("*", t1)


def _is_subsequence(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
    it = iter(long)
    return all(any(x == y for y in it) for x in short)


def reduce_by_subsumption(phrases: Sequence[CommonPhrase]) -> list[CommonPhrase]:
    """Return ``phrases`` without duplicates and without those contained in a longer one of the same type."""
    unique = list(OrderedDict(((p.kind, p.lemmas, p.pos), p) for p in phrases).values())
    unique.sort(key=lambda p: -len(p.lemmas))
    kept: list[CommonPhrase] = []
    for p in unique:
        if not any(k.kind == p.kind and len(k.lemmas) > len(p.lemmas) and _is_subsequence(p.lemmas, k.lemmas)
                   for k in kept):
            kept.append(p)
    return kept


def generalize_phrase_lists(q: Sequence[PhraseChunk], a: Sequence[PhraseChunk]) -> list[CommonPhrase]:
    """Return the maximal common phrases of two phrase lists (pairs of the same type sharing a content lemma)."""
    by_lemma: dict[tuple[str, str], list[int]] = {}
    for idx, p in enumerate(a):
        for lem in p.content:
            by_lemma.setdefault((p.kind, lem), []).append(idx)
    found: list[CommonPhrase] = []
    for p in q:
        partners = sorted({idx for lem in p.content for idx in by_lemma.get((p.kind, lem), ())})
        for idx in partners:
            g = generalize_phrases(p, a[idx])
            if g is not None:
                found.append(g)
    return reduce_by_subsumption(found)


def raw_score(common: Iterable[CommonPhrase], *, weights: dict[str, float] | None = None) -> float:
    """Return the phrase-type-weighted sum of common phrase scores."""
    weights = weights or PHRASE_WEIGHTS
    return sum(weights.get(c.kind, 0.0) * c.score for c in common)


# --- the scorer with its parse cache -----------------------------------------------------------------

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
        self._cache: OrderedDict[str, tuple[list[PhraseChunk], float]] = OrderedDict()

    @property
    def nlp(self):
        if self._nlp is None:
            from parsers.nlp_spacy import load_spacy

            self._nlp = load_spacy()
        return self._nlp

    def _store(self, text: str, phrases: list[PhraseChunk]) -> tuple[list[PhraseChunk], float]:
        entry = (phrases, self._self_score(phrases))
        self._cache[text] = entry
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return entry

    def _self_score(self, phrases: Sequence[PhraseChunk]) -> float:
        # A text generalized with itself keeps each distinct phrase whole.
        distinct = {(p.kind, p.lemmas, p.pos) for p in phrases}
        return sum(self.weights.get(k, 0.0) * sum(word_weight(lem, p) for lem, p in zip(lems, pos))
                   for k, lems, pos in distinct)

    def analyze(self, text: str) -> tuple[list[PhraseChunk], float]:
        """Return (phrases, self-similarity) of ``text``, parsing it only the first time."""
        hit = self._cache.get(text)
        if hit is not None:
            self._cache.move_to_end(text)
            return hit
        from parsers.nlp_spacy import doc_to_analyzed

        return self._store(text, extract_phrases(doc_to_analyzed(self.nlp(text))))

    def warm(self, texts: Iterable[str], *, batch_size: int = 64, progress: bool = False) -> None:
        """Parse many texts in batches (much faster than one by one) into the cache."""
        from parsers.nlp_spacy import doc_to_analyzed

        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if not todo:
            return
        docs = self.nlp.pipe(todo, batch_size=batch_size)
        if progress:
            import sys

            from tqdm import tqdm

            docs = tqdm(docs, total=len(todo), desc="parsing (SG)", unit="text", file=sys.stderr, dynamic_ncols=True)
        for text, doc in zip(todo, docs):
            self._store(text, extract_phrases(doc_to_analyzed(doc)))

    def phrases(self, item) -> tuple[list[PhraseChunk], float]:
        """Return (phrases, self-similarity) of a str, ``AnalyzedText`` or spaCy ``Doc``."""
        if isinstance(item, str):
            return self.analyze(item)
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
        if qs <= 0 or as_ <= 0:
            return 0.0
        return min(1.0, raw_score(generalize_phrase_lists(qp, ap), weights=self.weights) / math.sqrt(qs * as_))


_DEFAULT: SyntacticGeneralizer | None = None


def _default() -> SyntacticGeneralizer:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = SyntacticGeneralizer()
    return _DEFAULT


def generalize(q, a) -> list[CommonPhrase]:
    """Return the maximal common phrases of two texts (str, ``AnalyzedText`` or spaCy ``Doc``); parses are cached."""
    return _default().generalize(q, a)


def sg_score(q, a) -> float:
    """Return the normalised syntactic-generalization relevance of ``a`` to ``q``, in [0, 1]."""
    return _default().score(q, a)
