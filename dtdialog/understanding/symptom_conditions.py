"""When a symptom happens, and when an answer says it goes away: a clash means the answer is about another fault.

The case it guards against: "My brakes squeal when I stop" got "A squeal that is present while driving and stops when you press
the brakes is very typical of the wear indicator" - an answer for the opposite symptom, delivered as sure.

* ``occurrence_clauses(question)``: the clauses a customer uses to say when the symptom happens ("when I stop",
  "every time I turn", "while idling"), not those after a verb of ceasing ("it goes away when ...").
* ``cessation_clauses(answer)``: the clauses an answer uses to say when the symptom *stops* ("stops when you
  press the brakes", "goes away once the engine warms up").
* ``clash(question, answer)``: an occurrence and a cessation clause that name the same driving situation
  (``resources/condition_concepts.json``: braking, turning, cold, ... matched by Porter stem), or None.

The situations are a short hand-made list because a word's situation is world knowledge ("stop" and "press the
brakes" are the same moment; MiniLM rates "when I stop" closer to "when I drive" than to "when you press the
brakes"); the file says why each word is in or out. An index of another domain without such clauses is never
affected: no cessation clause, no clash.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from index.vocabulary import stem, words_of

CONCEPTS_PATH = Path(__file__).resolve().parent.parent / "resources" / "condition_concepts.json"

_CEASE = r"(?:stops?|stopped|goes away|go away|went away|disappears?|disappeared|vanish(?:es)?|quiets? down|fades?|ceases?)"
_WHEN = r"(?:whenever|when|once|as soon as|while|after|if)"
#: "stops when you press the brakes", "goes away once it warms up", "disappears completely after a few minutes"
_CEASES = re.compile(rf"\b{_CEASE}\b(?:\s+\w+){{0,3}}?\s+{_WHEN}\s+([^.;:!?,]+)", re.I)
#: "when I stop", "every time I turn", "whenever it rains", "while idling"
_OCCURS = re.compile(rf"\b(?:every time|each time|{_WHEN})\s+([^.;:!?,]+)", re.I)
#: words before an occurrence marker that make it a cessation ("it goes away when ...")
_CEASED_BEFORE = re.compile(rf"\b{_CEASE}\b(?:\s+\w+){{0,3}}?\s*$", re.I)


@dataclass(frozen=True)
class Clash:
    """An answer's cessation clause and the customer's occurrence clause that name the same ``situation``."""

    situation: str
    answer_clause: str
    question_clause: str

    def explain(self) -> str:
        return (f'it is for a symptom that "{self.answer_clause}", but you said it happens "{self.question_clause}" '
                f"({self.situation})")


@lru_cache(maxsize=1)
def _concepts() -> tuple[dict[str, str], tuple[tuple[tuple[str, ...], str], ...]]:
    """Return ``(stem -> situation, ((phrase stems), situation) ...)`` from the concepts file."""
    raw = _raw_concepts()
    single: dict[str, str] = {}
    phrases: list[tuple[tuple[str, ...], str]] = []
    for situation, words in raw.items():
        if situation.startswith("_"):
            continue
        for word in words:
            stems = tuple(stem(w) for w in words_of(word))
            if len(stems) == 1:
                single[stems[0]] = situation
            elif stems:
                phrases.append((stems, situation))
    return single, tuple(phrases)


def situations(clause: str) -> set[str]:
    """Return the driving situations ``clause`` names."""
    single, phrases = _concepts()
    stems = [stem(w) for w in words_of(clause)]
    found = {single[s] for s in stems if s in single}
    for phrase, situation in phrases:
        n = len(phrase)
        if any(tuple(stems[i:i + n]) == phrase for i in range(len(stems) - n + 1)):
            found.add(situation)
    return found


#: a clause ends at the next verb of being or coordinating word ("stops when you press the brakes | is typical")
_CLAUSE_END = re.compile(r"\s+(?:is|are|was|were|and|but|so|which|because)\s+", re.I)


def _clause(text: str, words: int = 8) -> str:
    return " ".join(_CLAUSE_END.split(text, maxsplit=1)[0].split()[:words])


@lru_cache(maxsize=1)
def _raw_concepts() -> dict:
    """Return the condition-concepts file as read (once): the situations, symptom verbs and symptom states."""
    return json.loads(CONCEPTS_PATH.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def symptom_verbs() -> frozenset[str]:
    return frozenset(stem(w) for w in _raw_concepts().get("_symptom_verbs", ()))


@lru_cache(maxsize=1)
def symptom_states() -> frozenset[str]:
    """Return the stems of states a working part does not have ("spongy", "sticky"): a message naming one reports trouble."""
    return frozenset(stem(w) for w in _raw_concepts().get("_symptom_states", ()))


def _ceases_an_action(match: re.Match) -> bool:
    """Return True for "stops turning when ...": a gerund after the verb of ceasing that is not a symptom's."""
    after = match.group(0).split()[1:2] if match.group(0).split()[0].lower().startswith("stop") else []
    return bool(after) and after[0].lower().endswith("ing") and stem(after[0].lower()) not in symptom_verbs()


def cessation_clauses(text: str) -> list[str]:
    """Return the clauses of ``text`` that say when a symptom stops ("stops when you press the brakes")."""
    return [_clause(m.group(0)) for m in _CEASES.finditer(text) if not _ceases_an_action(m)]


def occurrence_clauses(text: str) -> list[str]:
    """Return the clauses of ``text`` that say when a symptom happens, skipping those after a verb of ceasing."""
    out = []
    for m in _OCCURS.finditer(text):
        if not _CEASED_BEFORE.search(text[max(0, m.start() - 40):m.start()]):
            out.append(_clause(m.group(0)))
    return out


#: "in traffic", "at highway speed", "on cold mornings", "over bumps", "overnight": a phrase that says when, with no
#: clause marker
_OCCASION = re.compile(
    r"\b(?:(?:in|at|on|during|over|under)\s+(?:the\s+|a\s+|an\s+)?(?:[\w/-]+\s+){0,2}?"
    r"(?:traffic|idle|highways?|freeways?|motorways?|speeds?|mph|km/h|rpm|start-?ups?|starts?|mornings?|nights?|"
    r"evenings?|rain|bumps|hills?|(?:red |stop ?)?lights?|turns|corners|load|acceleration|take-?off)"
    r"|every\s+(?:morning|night|day|start|trip|time)|overnight|after\s+(?:it\s+)?sit(?:s|ting)|while\s+parked)\b", re.I)


def says_when(text: str) -> bool:
    """Return True when ``text`` says when the symptom happens: a clause ("when I stop") or an occasion phrase
    ("in traffic", "at highway speed"); the detail question never asks for it again."""
    return bool(occurrence_clauses(text) or _OCCASION.search(text))


def customer_situations(text: str) -> list[tuple[str, set[str]]]:
    """Return each clause of ``text`` that says when the symptom happens, with the situations it names (those
    naming none are left out: they cannot clash)."""
    return [(c, named) for c in occurrence_clauses(text) if (named := situations(c))]


def clash_with(occurs: list[tuple[str, set[str]]], answer: str) -> Clash | None:
    """Return the first clash between the customer's clauses ``occurs`` (``customer_situations``) and when
    ``answer`` says the symptom stops, or None."""
    if not occurs:
        return None
    stops = [(c, situations(c)) for c in cessation_clauses(answer)]
    for occurs_clause, named in occurs:
        for clause, where in stops:
            shared = named & where
            if shared:
                return Clash(situation=sorted(shared)[0], answer_clause=clause, question_clause=occurs_clause)
    return None


def clash(question: str, answer: str) -> Clash | None:
    """Return the first clash between when ``question`` says the symptom happens and when ``answer`` says it
    stops, or None."""
    return clash_with(customer_situations(question), answer)
