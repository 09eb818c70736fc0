"""The out-of-scope gate: is a new question something the index can answer at all?

It runs before retrieval, for a turn that would start a question, and returns a ``ScopeVerdict``:
in scope, or out of scope for one ``reason``:

* ``greeting`` - small talk only ("hello?", "how are you", "who are you"): no domain word besides it.
* ``gibberish`` - no word a reader (or the index) knows: keyboard mash, random characters.
* ``language`` - not English: mostly a non-Latin script, or a confident language-identification verdict
  (``py3langid``, optional) that the English-vocabulary signal does not contradict. Short texts fool
  language ID ("hello?" is Breton to it), so text whose words are English function words or words of the
  index is never refused for its language.
* ``vague`` - in the domain, but too little to search with ("my car", "brakes", "it makes a noise"): every
  content stem is one the index knows, and there is one of them, or a few that many of the index's dialogues
  share (``DomainProfile.matches``). The reply asks for detail instead of refusing; nothing is wrong with it.
* ``domain`` - English, but about something the index does not cover (a mortgage question to the car bot).

The domain is learned from the index, never from a word list (``DomainProfile``): the stems of every
stored answer and logged question, counted per dialogue, and of the profile's glossary (``Profile.glossary``:
the domain described in a few hundred short entries, each counted as one more document), because the answers
cover what customers asked before, not everything they may ask about (engine design, motorcycles). A message's ``domain_score`` is the IDF-weighted
share of its content stems the index knows (a stem the index never saw weighs as the rarest, a stem in
every dialogue almost nothing), each counted by ``df/(df+1)``. The threshold is derived from the same index:
each logged question is scored leave-one-dialogue-out, and the threshold is the ``scope_quantile`` of those
scores (``EngineConfig``), so any team's FAQ index gets its own. ``EngineConfig.scope.scope_threshold`` overrides it.
A long message is also in scope when its known-stem evidence (``domain_mass``, the numerator of the score)
reaches ``EngineConfig.scope.scope_mass``: real posts are long and chatty, and every name, typo and aside the index
never saw lowers their share, while the many domain words they do use are evidence on their own.

With the engine's dense encoder at hand (the learned ranker's), the gate also reads ``dense``: the message's
largest cosine to any stored answer. A vocabulary cannot tell "it makes a weird noise when I turn" (one word
the index never saw, so a low share) from "the printer jams every time I print" (most words known); the
encoder can. The message is then in the domain when ``dense >= scope_dense_sure``, or when the vocabulary says so
and ``dense >= scope_dense_floor``. The encoding is the one the first ranking step needs anyway (cached), so an
in-scope question pays nothing for it. The gate is the first of two guards: past it, a message the ranker is not
sure of gets an abstention, not an answer. So the cosines are fitted (``python -m eval.out_of_scope``) for how
often the bot puts stored answers before out-of-scope text, not for how often the gate lets it by: a real car
question far from every stored answer (engine design, a motorcycle) is asked about, not refused.
"""

from __future__ import annotations

import math
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from index.base import AnswerIndex
from index.vocabulary import FUNCTION_WORDS, content_words, stem, words_of

GREETING = "greeting"
GIBBERISH = "gibberish"
LANGUAGE = "language"
DOMAIN = "domain"
VAGUE = "vague"

#: Small talk a customer opens with; what is left after removing it must carry a domain word to count.
_SMALL_TALK = re.compile(
    r"\b(?:hello|hi|hey|hiya|howdy|yo|greetings|good (?:morning|afternoon|evening|day)|thanks?|thank you|thx|"
    r"how are (?:you|u)(?: doing)?|how's it going|what's up|sup|who are you|what are you|are you (?:a )?(?:bot|robot|"
    r"human|real)|what can you do|what do you do|nice to meet you|bye|goodbye|see you|anyone there|is anyone there|"
    r"you there|are you there|test(?:ing)?|ok(?:ay)?|cool|nice|please|help me|can you help(?: me)?|i need help|help)\b")
#: A run of four keys along one keyboard row ("asdf", "hjkl"), or five consonants in a row: keyboard mash.
_KEY_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_CONSONANT_RUN = re.compile(r"[bcdfghjklmnpqrstvwxz]{5,}")
_LETTER = re.compile(r"[^\W\d_]")
#: English function words beyond the shared list: what a short English question is made of.
_ENGLISH_EXTRA = frozenset("""hello hi hey thanks thank please yes no not why how what when where who which car
""".split())
#: The language identifier's normalised probability above which a non-English verdict is trusted.
LANGUAGE_CONFIDENCE = 0.9
#: Texts with at least this share of English-known words are never refused for their language.
ENGLISH_SHARE = 0.5
#: A message of at most this many content stems, all known to the index, may be too vague to search with.
VAGUE_TERMS = 2
#: ... it is, when at least this share of the index's dialogues (and ``VAGUE_MIN_MATCHES``) hold all its stems.
VAGUE_SHARE = 0.06
VAGUE_MIN_MATCHES = 3
#: A stem in at least this share of the index's dialogues ("car" in a car-repair index) tells none of them apart:
#: a message of two stems with one such ("my car shakes") is as vague as its other stem alone.
GENERIC_SHARE = 0.5


@dataclass
class ScopeVerdict:
    """The gate's decision on one message: ``reason`` is None when in scope; ``signals`` go to the trace."""

    reason: str | None
    signals: dict[str, Any] = field(default_factory=dict)
    language: str | None = None

    @property
    def in_scope(self) -> bool:
        return self.reason is None


def message_stems(text: str) -> list[str]:
    """Return the distinct content stems of ``text`` (the retrieval vocabulary, Porter-stemmed)."""
    return list(dict.fromkeys(stem(w) for w in content_words(words_of(text)) if _LETTER.search(w)))


@dataclass
class DomainProfile:
    """Per-dialogue document frequencies of the index's stems, and its own questions' leave-one-out scores."""

    n: int
    df: dict[str, int]
    own_scores: list[float]
    #: stem -> the dialogues (their positions) that use it; empty for a profile built without them
    postings: dict[str, frozenset[int]] = field(default_factory=dict)
    #: glossary entries counted in ``df`` beside the ``n`` dialogues (documents of the domain, not answers: they
    #: never make a message vague, which is about what retrieval can tell apart)
    glossary_entries: int = 0

    @classmethod
    def of(cls, dialogues: Iterable[tuple[str, list[str]]], *, glossary: Iterable[str] = ()) -> DomainProfile:
        """Return the profile of ``(question, texts)`` pairs: one per dialogue (texts = its answers), plus the
        domain's ``glossary`` entries (``Profile.glossary``), each counted as a document of its own."""
        rows = [(q, frozenset(s for t in [q, *texts] for s in message_stems(t))) for q, texts in dialogues]
        entries = [frozenset(message_stems(text)) for text in glossary]
        df: Counter[str] = Counter()
        postings: dict[str, set[int]] = {}
        for position, (_, stems) in enumerate(rows):
            df.update(stems)
            for s in stems:
                postings.setdefault(s, set()).add(position)
        for stems in entries:
            df.update(stems)
        profile = cls(n=len(rows), df=dict(df), own_scores=[], glossary_entries=len(entries),
                      postings={s: frozenset(p) for s, p in postings.items()})
        profile.own_scores = sorted(profile.score(q, leave_out=stems)[0] for q, stems in rows if q.strip())
        return profile

    @classmethod
    def of_index(cls, index: AnswerIndex, *, glossary: Iterable[str] = ()) -> DomainProfile:
        """Return the profile of every stored answer and logged question, grouped by dialogue, and ``glossary``."""
        grouped: dict[str, tuple[str, list[str]]] = {}
        for doc_id in index.ids():
            doc = index.get(doc_id)
            if doc is None:
                continue
            question, texts = grouped.setdefault(doc.dialogue_id, (str(doc.meta.get("question", "")), []))
            texts.append(doc.text)
        return cls.of(grouped.values(), glossary=glossary)

    def score(self, text: str, *, leave_out: frozenset[str] = frozenset()) -> tuple[float, dict[str, Any]]:
        """Return ``(domain score, detail)`` of ``text``; ``leave_out`` stems lose one dialogue (their own)."""
        stems = message_stems(text)
        if not stems or self.n < 2:
            return 0.0, {"terms": 0, "known": 0, "domain_mass": 0.0}
        n = self.n + self.glossary_entries - (1 if leave_out else 0)
        rarest = math.log(n + 1)
        total = known_mass = 0.0
        known = 0
        for s in stems:
            df = self.df.get(s, 0) - (1 if s in leave_out else 0)
            weight = math.log((n + 1) / (df + 1)) + 0.1 if df > 0 else rarest + 0.1
            total += weight
            if df > 0:
                known += 1
                known_mass += weight * df / (df + 1)
        return known_mass / total, {"terms": len(stems), "known": known, "domain_mass": round(known_mass, 3)}

    def threshold(self, quantile: float) -> float:
        """Return the ``quantile`` of the own questions' leave-one-out scores (0 with no questions)."""
        if not self.own_scores or quantile <= 0.0:
            return 0.0
        position = min(len(self.own_scores) - 1, max(0, int(quantile * len(self.own_scores))))
        return self.own_scores[position]

    def knows(self, word: str) -> bool:
        return self.df.get(stem(word), 0) > 0

    def specific(self, stem_: str) -> bool:
        """Return True for a stem the index knows that fewer than ``GENERIC_SHARE`` of its dialogues use: it can
        tell dialogues apart ("alignment"), unlike "car" in a car-repair index or a word it never saw."""
        return self.df.get(stem_, 0) > 0 and self.matches([stem_]) < GENERIC_SHARE * self.n

    def matches(self, stems: Iterable[str]) -> int:
        """Return how many dialogues use every one of ``stems`` (without postings: the smallest df, an upper bound)."""
        stems = list(stems)
        if not stems:
            return self.n
        if not self.postings:
            return min(self.df.get(s, 0) for s in stems)
        common = set(self.postings.get(stems[0], frozenset()))
        for s in stems[1:]:
            common &= self.postings.get(s, frozenset())
        return len(common)

    def vague(self, stems: list[str]) -> tuple[bool, int]:
        """Return ``(too vague to search with, dialogues matching all stems)`` for a message's content ``stems``.

        Vague: a few stems, all known, and either one alone (a part or a symptom, nothing about it; a stem most of
        the index's dialogues use does not count, ``GENERIC_SHARE``) or so common together that a large share of the
        index holds them all ("engine problem"), so retrieval cannot choose.
        """
        if not stems or len(stems) > VAGUE_TERMS or any(self.df.get(s, 0) == 0 for s in stems):
            return False, 0
        found = self.matches(stems)
        specific = [s for s in stems if self.specific(s)]
        return len(specific) <= 1 or found >= max(VAGUE_MIN_MATCHES, VAGUE_SHARE * self.n), found


class _LanguageId:
    """``py3langid`` loaded once, or None with the reason (the gate then relies on script and vocabulary)."""

    def __init__(self) -> None:
        self._identifier: Any = None
        self.missing: str | None = None
        self._lock = threading.Lock()
        self._loaded = False

    def classify(self, text: str) -> tuple[str | None, float]:
        with self._lock:
            if not self._loaded:
                self._loaded = True
                try:
                    from py3langid.langid import MODEL_FILE, LanguageIdentifier

                    self._identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
                except (ImportError, AttributeError, OSError):
                    self.missing = "py3langid is not installed: language identification uses the script only"
        if self._identifier is None:
            return None, 0.0
        lang, prob = self._identifier.classify(text)
        return str(lang), float(prob)


LANGUAGE_ID = _LanguageId()


def _looks_mashed(word: str) -> bool:
    """Return True for a token nobody types on purpose: no vowel, a long consonant run, or a key-row run."""
    w = word.lower()
    if len(w) < 4:
        return False
    if not re.search(r"[aeiouy]", w) or _CONSONANT_RUN.search(w):
        return True
    return any(w[i:i + 4] in row for row in _KEY_ROWS for i in range(len(w) - 3))


def _non_latin_share(text: str) -> float:
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return 0.0
    return sum(1 for ch in letters if not unicodedata.name(ch, "LATIN").startswith("LATIN")) / len(letters)


class ScopeGate:
    """Decides whether a new question is in scope; the domain profile is learned lazily from ``index``.

    ``glossary``: the profile's domain texts (``Profile.glossary``), learned beside the index.
    ``threshold`` (None: derived from the index at ``quantile``), ``quantile``, ``mass`` (None: the share alone
    decides), ``dense_floor`` and ``dense_sure`` come from ``EngineConfig``. ``dense`` maps a message to its
    largest cosine to a stored answer (None: no encoder, the vocabulary alone decides); ``prefetch`` starts that
    encoding on a worker thread, so a caller's ``meanwhile`` work (``check``) runs beside it.
    The profile is rebuilt when the index's ``generation`` changes (answers added or replaced).
    """

    def __init__(self, index: AnswerIndex | None = None, *, quantile: float = 0.2, threshold: float | None = None,
                 mass: float | None = None, profile: DomainProfile | None = None,
                 dense: Callable[[str], float] | None = None, dense_floor: float = 0.26,
                 dense_sure: float = 0.32, prefetch: Callable[[str], None] | None = None,
                 glossary: tuple[str, ...] = ()) -> None:
        self.index = index
        self.glossary = glossary
        self.mass = mass
        self.dense = dense
        self.prefetch = prefetch
        self.dense_floor = dense_floor
        self.dense_sure = dense_sure
        self.quantile = quantile
        self.fixed_threshold = threshold
        self._profile = profile
        self._generation: str | None = None
        self._lock = threading.Lock()

    def profile(self) -> DomainProfile:
        with self._lock:
            if self.index is not None:
                generation = self.index.generation()
                if self._profile is None or generation != self._generation:
                    self._profile = DomainProfile.of_index(self.index, glossary=self.glossary)
                    self._generation = generation
            if self._profile is None:
                self._profile = DomainProfile(n=0, df={}, own_scores=[])
            return self._profile

    def warm_up(self) -> None:
        """Learn the domain (about 1 s on the built-in index) and, with an encoder, read the glossary's vectors."""
        self.profile()
        if self.dense is not None and self.glossary:
            self.dense(self.glossary[0])

    def threshold(self) -> float:
        return self.fixed_threshold if self.fixed_threshold is not None else self.profile().threshold(self.quantile)

    def check(self, text: str, *, meanwhile: Callable[[], object] | None = None) -> ScopeVerdict:
        """Return the verdict on ``text`` (a cleaned user turn that would start a question).

        ``meanwhile`` is called once the text has passed every cheap check and is about to be encoded, after the
        encoding was started on a worker (``prefetch``), so the caller's work overlaps it (the manager plans the
        question); not called otherwise.
        """
        profile = self.profile()
        words = [w for w in words_of(text) if _LETTER.search(w)]
        signals: dict[str, Any] = {"words": len(words)}
        if not words:
            return ScopeVerdict(GIBBERISH, signals)
        signals["non_latin_share"] = round(_non_latin_share(text), 3)
        english = [w for w in words if w in FUNCTION_WORDS or w in _ENGLISH_EXTRA or profile.knows(w)]
        signals["english_share"] = round(len(english) / len(words), 3)
        language = self._language(text, signals)
        if language is not None:
            return ScopeVerdict(LANGUAGE, signals, language=language)
        mashed = sum(1 for w in words if _looks_mashed(w) and not profile.knows(w))
        signals["mashed_share"] = round(mashed / len(words), 3)
        rest = " ".join(_SMALL_TALK.sub(" ", text.lower()).split())
        small_talk = rest != text.lower().strip()
        if not small_talk and ((signals["english_share"] == 0.0 and (mashed or len(words) <= 2))
                               or signals["mashed_share"] >= 0.5):
            return ScopeVerdict(GIBBERISH, signals)  # before the domain check: mash is never worth an encoding
        score, detail = profile.score(rest)
        signals.update(detail, domain_score=round(score, 3), threshold=round(self.threshold(), 3))
        stems = message_stems(rest)
        if small_talk and not stems:
            signals["small_talk"] = True
            return ScopeVerdict(GREETING, signals)
        # a small-talk word the index knows as content ("test" in "how do I test my battery") still says something
        spoken = stems + [s for s in message_stems(text) if s not in stems and profile.df.get(s, 0) > 0]
        vague, signals["matches"] = profile.vague(spoken)
        if vague:  # before the encoding: a detail question needs no cosine
            return ScopeVerdict(VAGUE, signals)
        # the unaltered message shares its encoding with the first ranking step (the encoder's cache)
        in_domain = self._in_domain(rest if small_talk else text, score, detail, signals, meanwhile=meanwhile)
        if small_talk and not in_domain and len(stems) <= VAGUE_TERMS:  # a long message with a "thanks" is no greeting
            signals["small_talk"] = True
            return ScopeVerdict(GREETING, signals)
        if not in_domain:
            return ScopeVerdict(DOMAIN, signals)
        return ScopeVerdict(None, signals)

    def _in_domain(self, text: str, score: float, detail: dict[str, Any], signals: dict[str, Any], *,
                   meanwhile: Callable[[], object] | None = None) -> bool:
        """Return whether ``text`` is about the index's domain: by its vocabulary, and its cosine when there is one."""
        lexical = score >= signals["threshold"] or (self.mass is not None and detail["domain_mass"] >= self.mass)
        if self.dense is None or not message_stems(text):
            return lexical
        if meanwhile is not None:
            if self.prefetch is not None:
                self.prefetch(text)
            meanwhile()
        cosine = float(self.dense(text))
        signals["dense"] = round(cosine, 3)
        return cosine >= self.dense_sure or (lexical and cosine >= self.dense_floor)

    def _language(self, text: str, signals: dict[str, Any]) -> str | None:
        """Return the detected language of a text that is not English, else None."""
        if signals["non_latin_share"] >= 0.5:
            lang, _ = LANGUAGE_ID.classify(text)
            signals["language"] = lang
            return lang or "non-Latin script"
        if signals["english_share"] >= ENGLISH_SHARE:
            return None
        lang, prob = LANGUAGE_ID.classify(text)
        if LANGUAGE_ID.missing:
            signals["language_id"] = LANGUAGE_ID.missing
        if lang is None:
            return None
        signals.update(language=lang, language_prob=round(prob, 3))
        # with no English word at all a less certain verdict is enough ("Mi coche hace un ruido": 0.89)
        confidence = LANGUAGE_CONFIDENCE if signals["english_share"] > 0.2 else LANGUAGE_CONFIDENCE - 0.3
        return lang if lang != "en" and prob >= confidence and signals["words"] >= 3 else None
