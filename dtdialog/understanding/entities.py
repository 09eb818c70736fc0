"""Entity terms of EDUs for the agreement rule EDU_q ∩ EDU_a ≠ ∅.

A term is the Porter stem of a content-word lemma, or a multi-word noun phrase
as a space-joined run of stems. Stems make ``removing``/``removed``/``remove``
and spaCy lemmas vs. raw user words meet; the car-domain synonym list maps
aliases (``ecu``, ``computer``) to one canonical term (``ecm``) before stemming.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from itertools import chain

# Words, stop words and stems come from ``index.vocabulary`` (its agreement role).
from index.vocabulary import entity_words, is_entity_word, stem
from parsers.tree import EDU

__all__ = ["EntityNormalizer", "load_default_synonyms", "short_phrase"]

#: EDUs whose terms are remembered, by their lemmas (or text) and noun phrases: bounded so the cache stays small
#: beside the indexes
EDU_TERMS_CACHE = 16384


def _synonym_map(synonyms: Mapping[str, Sequence[str]] | None) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Return stem-tuple of every alias (and canonical) -> stem-tuple of its canonical term."""
    mapping: dict[tuple[str, ...], tuple[str, ...]] = {}
    for canonical, aliases in (synonyms or {}).items():
        target = tuple(stem(w) for w in entity_words(canonical))
        if not target:
            continue
        for alias in [canonical, *aliases]:
            key = tuple(stem(w) for w in entity_words(alias))
            if key:
                mapping.setdefault(key, target)
    return mapping


class EntityNormalizer:
    """Turns EDUs and texts into comparable entity terms (stems, noun phrases, synonyms).

    ``synonyms`` is canonical term -> aliases (``data.builtin.load_car_synonyms()``); ``None`` loads
    the built-in list when it is available and uses none otherwise. Thread-safe (read-only once the stemmed
    synonym map is made, on first use: stemming imports NLTK, a second of start-up an engine need not wait for).
    """

    def __init__(self, *, synonyms: Mapping[str, Sequence[str]] | None = None, use_builtin: bool = True) -> None:
        if synonyms is None and use_builtin:
            synonyms = load_default_synonyms()
        self._synonyms = synonyms
        self._stemmed: tuple[dict[tuple[str, ...], tuple[str, ...]], int, dict[str, tuple[int, ...]]] | None = None
        self._lock = threading.Lock()

    def _synonym_index(self) -> tuple[dict[tuple[str, ...], tuple[str, ...]], int, dict[str, tuple[int, ...]]]:
        """Return (stemmed synonym map, longest alias in stems, the stem an alias starts with -> the lengths in stems
        of the aliases that start with it, longest first), made on first use."""
        if self._stemmed is None:
            with self._lock:
                if self._stemmed is None:
                    mapping = _synonym_map(self._synonyms)
                    lengths: dict[str, set[int]] = {}
                    for key in mapping:
                        lengths.setdefault(key[0], set()).add(len(key))
                    self._stemmed = (mapping, max((len(k) for k in mapping), default=1),
                                     {s: tuple(sorted(ns, reverse=True)) for s, ns in lengths.items()})
        return self._stemmed

    def _normalise(self, stems: Sequence[str]) -> set[str]:
        """Return single stems plus every synonym n-gram found in ``stems``, mapped to canonical terms."""
        synonyms, _, lengths_of = self._synonym_index()
        out: set[str] = set()
        i, count = 0, len(stems)
        while i < count:
            lengths = lengths_of.get(stems[i])
            matched = False
            if lengths is not None:  # only the lengths some alias starting here has, longest first (most stems: none)
                for n in lengths:
                    if n > count - i:
                        continue
                    key = tuple(stems[i:i + n])
                    if key in synonyms:
                        target = synonyms[key]
                        out.add(" ".join(target))
                        out.update(t for t in target if t)
                        if n > 1:
                            out.update(key)
                        i += n
                        matched = True
                        break
            if not matched:
                out.add(stems[i])
                i += 1
        return out

    def terms_of_text(self, text: str) -> frozenset[str]:
        """Return the entity terms of raw text (content words, synonym-normalised)."""
        return self._text_terms(text)

    @lru_cache(maxsize=8192)  # noqa: B019 - as ``_terms``; a turn asks for each candidate's logged question twice
    def _text_terms(self, text: str) -> frozenset[str]:
        return self._terms(_stems_of(text), ())

    def terms_of_edu(self, edu: EDU) -> frozenset[str]:
        """Return the entity terms of one EDU: its lemmas (or words), noun phrases and synonyms."""
        # what the terms are made of, as the key of one memo: half the EDUs of answers new to the process were met
        # before (the same step in another answer). A text never equals a tuple, so the two kinds of key cannot meet.
        words, entities = edu.lemmas or edu.text, edu.entities
        if type(entities) is tuple and type(words) in (tuple, str):  # hashable as parsers and ``from_dict`` make them
            return self._edu_terms(words, entities)
        return self._edu_terms_of(words, entities)

    @lru_cache(maxsize=EDU_TERMS_CACHE)  # noqa: B019 - as ``_terms``
    def _edu_terms(self, words: tuple[str, ...] | str, entities: tuple[str, ...]) -> frozenset[str]:
        return self._edu_terms_of(words, entities)

    def _edu_terms_of(self, words: Sequence[str] | str, entities: Sequence[str]) -> frozenset[str]:
        """Return the terms of an EDU's lemmas (or its text, ``words`` a ``str``) and its noun phrases."""
        # stems per lemma, memoised: an answer's EDUs are new to the turn that retrieves it, their lemmas are not
        stems = _stems_of(words) if isinstance(words, str) else tuple(chain.from_iterable(map(_content_stems_of, words)))
        # not through ``_terms``'s cache: ``_edu_terms`` keeps the result, under a key an EDU has at hand
        return self._terms_of(stems, tuple(entities))

    @lru_cache(maxsize=32768)  # noqa: B019 - instances live as long as the runtime; the cache is the point
    def _terms(self, stems: tuple[str, ...], phrases: tuple[str, ...]) -> frozenset[str]:
        return self._terms_of(stems, phrases)

    def _terms_of(self, stems: tuple[str, ...], phrases: tuple[str, ...]) -> frozenset[str]:
        terms = self._normalise(stems)
        for phrase in phrases:
            phrase_stems = _content_stems_of(phrase)
            if len(phrase_stems) > 1:
                terms.add(" ".join(phrase_stems))
            terms.update(self._normalise(phrase_stems))
        return frozenset(terms)

    def terms_of_edus(self, edus: Iterable[EDU]) -> frozenset[str]:
        """Return the union of the entity terms of ``edus``."""
        out: set[str] = set()
        for edu in edus:
            out |= self.terms_of_edu(edu)
        return frozenset(out)

    @staticmethod
    def overlap(left: Iterable[str], right: Iterable[str]) -> frozenset[str]:
        """Return the terms two term sets share."""
        return frozenset(left) & frozenset(right)


def load_default_synonyms() -> dict[str, list[str]]:
    """Return the built-in car synonym list, or {} when the data package does not ship one yet."""
    try:
        from data.builtin import load_car_synonyms
    except ImportError:
        return {}
    try:
        return load_car_synonyms()
    except Exception:  # noqa: BLE001 - a missing synonym file only weakens matching; never block a chat
        return {}


def _stems_of(text: str) -> tuple[str, ...]:
    """Return the stems of the entity words of ``text``, in order."""
    return tuple(stem(w) for w in entity_words(text) if is_entity_word(w))


@lru_cache(maxsize=65536)
def _content_words_of(text: str) -> tuple[str, ...]:
    return tuple(w for w in entity_words(text) if is_entity_word(w))


@lru_cache(maxsize=65536)
def _content_stems_of(text: str) -> tuple[str, ...]:
    """Return the stem of each of ``_content_words_of(text)``, in the same order: ``_stems_of`` memoised, for the
    short strings that recur across answers (lemmas, noun phrases, EDUs); a whole answer seldom recurs."""
    return tuple(stem(w) for w in _content_words_of(text))


def short_phrase(edus: Sequence[EDU], *, prefer: Iterable[str] = (), max_words: int = 4) -> str:
    """Return a few content words of ``edus`` in text order, words whose stem is in ``prefer`` first.

    Used for readable chains such as ``Contrast[replaced battery]``.
    """
    preferred = set(prefer)
    words = [w for e in edus for w in _content_words_of(e.text)]
    # with nothing preferred (a requirement's label in every candidate's check) no word needs its stem
    chosen_idx = [i for i, s in enumerate(s for e in edus for s in _content_stems_of(e.text)) if s in preferred] \
        if preferred else []
    seen = {words[i] for i in chosen_idx}
    for i, w in enumerate(words):
        if len(chosen_idx) >= max_words:
            break
        if i not in chosen_idx and w not in seen:
            chosen_idx.append(i)
            seen.add(w)
    picked: list[str] = []
    for i in sorted(chosen_idx[:max_words]):
        if words[i] not in picked:
            picked.append(words[i])
    return " ".join(picked)
