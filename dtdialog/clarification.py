"""Clarification (paper section 3.5): let the user pick among close, agreeing candidates.

Options are labelled by *distinguishing phrases*: noun phrases (or content words) of a
candidate's EDUs whose terms the other offered candidates do not contain, so the user chooses
between "fuel pressure gauge" and "crankshaft position sensor", never between relation labels
or ids. The last option is always "none of these".
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dtdialog.entities import EntityNormalizer, is_content, stem, words_of
from parsers.tree import EDU

NONE_LABEL = "none of these"
MAX_LABEL_PHRASES = 3


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

    def to_dict(self) -> dict[str, Any]:
        return {"options": [o.to_dict() for o in self.options], "terms": self.terms, "reprompts": self.reprompts}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PendingChoice:
        return cls(options=[ClarifyOption.from_dict(o) for o in data.get("options", [])],
                   terms={k: list(v) for k, v in (data.get("terms") or {}).items()},
                   reprompts=int(data.get("reprompts", 0)))

    @property
    def none_number(self) -> int:
        return len(self.options)


def _phrases(edus: Sequence[EDU]) -> list[str]:
    """Return candidate label phrases of ``edus`` in text order: noun phrases, else content words."""
    phrases: list[str] = []
    for edu in edus:
        for ent in edu.entities:
            words = [w for w in words_of(ent) if is_content(w)]
            if words:
                phrases.append(" ".join(words))
    if not phrases:
        phrases = [w for e in edus for w in words_of(e.text) if is_content(w)]
    return list(dict.fromkeys(phrases))


def build_options(candidates: Sequence[tuple[str, Sequence[EDU]]], *, normalizer: EntityNormalizer,
                  max_options: int = 3) -> PendingChoice:
    """Return numbered options for ``candidates`` ((answer id, EDUs) best first) plus "none of these"."""
    chosen = list(candidates)[:max_options]
    term_sets = [normalizer.terms_of_edus(edus) for _, edus in chosen]
    options: list[ClarifyOption] = []
    terms: dict[str, list[str]] = {}
    for k, (answer_id, edus) in enumerate(chosen):
        others: set[str] = set().union(*(t for j, t in enumerate(term_sets) if j != k)) if len(chosen) > 1 else set()
        picked: list[str] = []
        used: set[str] = set()
        for phrase in _phrases(edus):
            stems = {stem(w) for w in words_of(phrase) if is_content(w)}
            new = stems - others - used
            if new:
                picked.append(phrase)
                used |= stems
            if len(picked) >= MAX_LABEL_PHRASES:
                break
        if not picked:  # nothing unique: fall back to the opening content words
            picked = [" ".join(w for w in words_of(" ".join(e.text for e in edus)) if is_content(w))[:60].strip()]
        label = ", ".join(picked)
        options.append(ClarifyOption(number=k + 1, label=label, answer_id=answer_id))
        terms[answer_id] = sorted(term_sets[k])
    options.append(ClarifyOption(number=len(options) + 1, label=NONE_LABEL, answer_id=""))
    return PendingChoice(options=options, terms=terms)


def match_reply(text: str, pending: PendingChoice, *, normalizer: EntityNormalizer,
                number: int | None = None) -> ClarifyOption | None:
    """Return the option a reply picks (by number, "none of these", or phrase), or None when it matches none.

    A phrase matches the option whose label shares the most terms with it (the candidate's whole
    text counts half), ties broken by string similarity; a tie that stays a tie matches nothing.
    """
    if number is not None:
        return next((o for o in pending.options if o.number == number), None)
    lowered = text.lower().strip()
    if difflib.SequenceMatcher(None, lowered, NONE_LABEL).ratio() > 0.85:
        return pending.options[-1]
    reply_terms = normalizer.terms_of_text(text)
    if not reply_terms:
        return None
    scored = []
    for option in pending.options[:-1]:
        label_terms = normalizer.terms_of_text(option.label)
        body = set(pending.terms.get(option.answer_id, ()))
        overlap = len(reply_terms & label_terms) + 0.5 * len((reply_terms & body) - label_terms)
        similarity = difflib.SequenceMatcher(None, lowered, option.label.lower()).ratio()
        scored.append((overlap, similarity, option))
    scored.sort(key=lambda s: (s[0], s[1]), reverse=True)
    if not scored or scored[0][0] <= 0:
        return None
    if len(scored) > 1 and scored[1][0] == scored[0][0] and abs(scored[1][1] - scored[0][1]) < 1e-9:
        return None
    return scored[0][2]


def prompt_text(pending: PendingChoice, *, again: bool = False) -> str:
    """Return the question that lists the options (``again`` for a reply that matched none)."""
    head = ("Sorry, I could not match that to an option. " if again else
            "A few different fixes match your description. Which one fits your situation best?")
    if again:
        head += "Reply with a number, a few words from an option, or 'none of these':"
    lines = [head] + [f"  {o.number}) {o.label}" for o in pending.options]
    return "\n".join(lines)
