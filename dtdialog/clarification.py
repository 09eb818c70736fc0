"""Clarification (paper section 3.5): let the user pick among close, agreeing candidates.

Options are labelled by *distinguishing phrases*: noun phrases (or content words) of a
candidate's EDUs whose terms the other offered candidates do not contain, so the user chooses
between "fuel pressure gauge" and "crankshaft position sensor", never between relation labels
or ids. The last option is always "none of these".
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from dtdialog.replies import DEFAULT_REPLIES, Replies
from index.vocabulary import entity_words, is_entity_word, stem
from parsers.tree import EDU

NONE_LABEL = "none of these"
MAX_LABEL_PHRASES = 3


class TermSource(Protocol):
    """Where option and reply terms come from: an ``EntityNormalizer``, or the ``AnswerSelector`` (its vocabulary)."""

    def terms_of_text(self, text: str) -> frozenset[str]: ...

    def terms_of_edus(self, edus: Sequence[EDU]) -> frozenset[str]: ...


@dataclass(frozen=True)
class ClarifyOption:
    """One numbered choice. ``answer_id`` is empty for the "none of these" option."""

    number: int
    label: str
    answer_id: str

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "label": self.label, "answer_id": self.answer_id}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClarifyOption:
        return cls(number=int(data["number"]), label=str(data["label"]), answer_id=str(data.get("answer_id", "")))


@dataclass
class PendingChoice:
    """The options on offer plus the terms each was built from (for matching free-text replies)."""

    options: list[ClarifyOption]
    terms: dict[str, list[str]] = field(default_factory=dict)
    reprompts: int = 0
    #: terms of the question (and the step's replies): a reply repeating them picks no option
    ignore_terms: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"options": [o.to_dict() for o in self.options], "terms": self.terms, "reprompts": self.reprompts,
                "ignore_terms": self.ignore_terms}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PendingChoice:
        return cls(options=[ClarifyOption.from_dict(o) for o in data.get("options", [])],
                   terms={k: list(v) for k, v in (data.get("terms") or {}).items()},
                   reprompts=int(data.get("reprompts", 0)),
                   ignore_terms=[str(t) for t in data.get("ignore_terms") or ()])


#: Head words that name no car part, symptom or action: a label made of them ("job", "question") tells nothing.
GENERIC_WORDS = frozenset("""
    anything answer bit case cause chance couple day end everything fact fix help idea issue job kind lot matter
    minute moment nothing one other part person point problem question reason result second side situation
    someone something sort step stuff thing time tip try way week weekend while work year
    also can come comes could did do does done get gets got go goes just keep let look make makes may might must
    need put say see should still take takes want will would
""".split())
#: Evaluative or quantity modifiers say nothing about which fix an option is ("most common reason", "cheap and
#: likely fix", "around 88 to 95 degrees"): they are dropped from label phrases.
MODIFIER_WORDS = frozenset("""
    about almost around best better big cheap common easy few first good great hot cold cool high last least less long short
    little low main many more most much new next normal old other possible quick real same simple small usual weak
    whole degree degrees inch inches mile miles percent
""".split())
MAX_LABEL_WORDS = 6


def _phrases(edus: Sequence[EDU]) -> list[str]:
    """Return candidate label phrases of ``edus`` in text order: noun phrases, else content words.

    Phrases keep their content words only (no determiners) and are cut to ``MAX_LABEL_WORDS``;
    a phrase whose every word is generic (``GENERIC_WORDS``) is dropped.
    """
    phrases: list[str] = []
    for edu in edus:
        for ent in edu.entities:
            words = [w for w in entity_words(ent) if _label_word(w)][:MAX_LABEL_WORDS]
            if words and _informative(words):
                phrases.append(" ".join(words))
    if not phrases:
        # no noun chunks (a parser without them): runs of adjacent specific words ("pad backing plates")
        for edu in edus:
            run: list[str] = []
            for word in [*entity_words(edu.text), ""]:
                if word and _label_word(word) and _informative([word]):
                    run.append(word)
                    continue
                if run:
                    phrases.append(" ".join(run[:MAX_LABEL_WORDS]))
                run = []
    return list(dict.fromkeys(phrases))


def _label_word(word: str) -> bool:
    """Return True for a word a label phrase may keep (content, not a number, modifier or -ly adverb)."""
    return is_entity_word(word) and not word.isdigit() and word not in MODIFIER_WORDS and not word.endswith("ly")


def _informative(words: Sequence[str]) -> bool:
    """Return True when some word is specific: not generic, not a number, at least three letters."""
    return any(len(w) >= 3 and not w.isdigit() and w not in GENERIC_WORDS and stem(w) not in _GENERIC_STEMS
               for w in words)


_GENERIC_STEMS = frozenset(stem(w) for w in GENERIC_WORDS)


def _label_phrases(phrases: Sequence[str], *, others: set[str], ignored: frozenset[str],
                   salience: Counter[str]) -> list[str]:
    """Return up to ``MAX_LABEL_PHRASES`` phrases that best tell this option apart, most distinctive first.

    A phrase is worth the salience (occurrences in its own answer) of each specific stem the other
    options lack - what the answer keeps talking about ("starting fluid", "fuel") beats a passing
    mention ("short shot"). Question terms count half (the user's words describe the problem, not
    the fix), and a multi-word entity gets a small bonus; a phrase with no distinctive specific stem
    is never used.
    """
    scored: list[tuple[float, int, str]] = []
    for order, phrase in enumerate(phrases):
        stems = {stem(w) for w in entity_words(phrase) if is_entity_word(w) and _informative([w])}
        distinct = stems - others
        if not distinct:
            continue
        value = sum((0.5 if s in ignored else 1.0) * max(salience[s], 1) for s in distinct)
        value += 0.5 if len(entity_words(phrase)) > 1 else 0.0
        scored.append((value, order, phrase))
    scored.sort(key=lambda item: (-item[0], item[1]))
    picked: list[str] = []
    used: set[str] = set()
    for _, _, phrase in scored:
        stems = {stem(w) for w in entity_words(phrase) if is_entity_word(w)}
        if stems <= used:  # "fuel" after "fuel supply" adds nothing
            continue
        picked.append(phrase)
        used |= stems
        if len(picked) >= MAX_LABEL_PHRASES:
            break
    return picked


def build_options(candidates: Sequence[tuple[str, Sequence[EDU]]], *, normalizer: TermSource,
                  max_options: int = 3, ignore_terms: Iterable[str] = ()) -> PendingChoice:
    """Return numbered options for ``candidates`` ((answer id, EDUs) best first) plus "none of these".

    Each label is at most ``MAX_LABEL_PHRASES`` informative phrases of 1-``MAX_LABEL_WORDS`` words
    that the other options do not share (``_label_phrases``); an option with none falls back to its
    most specific content words. ``ignore_terms`` (the question's terms) never distinguish an option
    when a reply is matched.
    """
    chosen = list(candidates)[:max_options]
    ignored = frozenset(ignore_terms)
    term_sets = [normalizer.terms_of_edus(edus) for _, edus in chosen]
    options: list[ClarifyOption] = []
    terms: dict[str, list[str]] = {}
    labels: set[str] = set()
    for k, (answer_id, edus) in enumerate(chosen):
        others: set[str] = set().union(*(t for j, t in enumerate(term_sets) if j != k)) if len(chosen) > 1 else set()
        phrases = _phrases(edus)
        salience = Counter(stem(w) for e in edus for w in entity_words(e.text) if is_entity_word(w))
        picked = _label_phrases(phrases, others=others, ignored=ignored, salience=salience)
        if not picked:  # nothing unique: the option's most specific words, still never generic ones
            words = [w for w in entity_words(" ".join(e.text for e in edus)) if is_entity_word(w) and _informative([w])]
            distinct = [w for w in dict.fromkeys(words) if stem(w) not in others] or list(dict.fromkeys(words))
            picked = [" ".join(distinct[:MAX_LABEL_WORDS - 2]) or answer_id.split("#")[0].replace("_", " ")]
        label = ", ".join(picked)
        if label in labels:  # two options must never read the same
            label = f"{label} ({k + 1})"
        labels.add(label)
        options.append(ClarifyOption(number=k + 1, label=label, answer_id=answer_id))
        terms[answer_id] = sorted(term_sets[k])
    options.append(ClarifyOption(number=len(options) + 1, label=NONE_LABEL, answer_id=""))
    return PendingChoice(options=options, terms=terms, ignore_terms=sorted(ignored))


def distinctive_terms(pending: PendingChoice, *, normalizer: TermSource) -> dict[str, frozenset[str]]:
    """Return, per offered answer id, the terms only that option has (label or answer text).

    Terms another option shares, and the question's terms (``pending.ignore_terms``), cannot tell
    the options apart, so a reply made of them ("I can't remove the *engine*") picks nothing.
    """
    own = {o.answer_id: normalizer.terms_of_text(o.label) | frozenset(pending.terms.get(o.answer_id, ()))
           for o in pending.options if o.answer_id}
    ignored = frozenset(pending.ignore_terms)
    out: dict[str, frozenset[str]] = {}
    for answer_id, terms in own.items():
        others: set[str] = set().union(*(t for k, t in own.items() if k != answer_id))
        out[answer_id] = frozenset(terms - others - ignored)
    return out


def match_reply(text: str, pending: PendingChoice, *, normalizer: TermSource,
                number: int | None = None) -> ClarifyOption | None:
    """Return the option a reply picks (by number, "none of these", or phrase), or None when it matches none.

    A phrase picks an option only through *distinctive* terms (``distinctive_terms``): each one in
    the option's label counts 1, in the rest of its answer text 1/2. The option with the highest
    count wins; no distinctive term, or a tie, matches nothing (the caller lists the options again).
    """
    if number is not None:
        return next((o for o in pending.options if o.number == number), None)
    lowered = text.lower().strip()
    if difflib.SequenceMatcher(None, lowered, NONE_LABEL).ratio() > 0.85:
        return pending.options[-1]
    reply_terms = normalizer.terms_of_text(text)
    if not reply_terms:
        return None
    distinctive = distinctive_terms(pending, normalizer=normalizer)
    scored: list[tuple[float, ClarifyOption]] = []
    for option in pending.options[:-1]:
        hits = reply_terms & distinctive.get(option.answer_id, frozenset())
        label_hits = hits & normalizer.terms_of_text(option.label)
        scored.append((len(label_hits) + 0.5 * len(hits - label_hits), option))
    scored.sort(key=lambda s: s[0], reverse=True)
    if not scored or scored[0][0] <= 0:
        return None
    if len(scored) > 1 and scored[1][0] == scored[0][0]:
        return None
    return scored[0][1]


def prompt_text(pending: PendingChoice, *, again: bool = False, replies: Replies = DEFAULT_REPLIES) -> str:
    """Return the question that lists the options (``again`` for a reply that matched none)."""
    return replies.options_text(pending.options, again=again)
