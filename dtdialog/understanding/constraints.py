"""User constraints ("I can't remove the engine", "no special tools", "I don't have a scan tool").

A constraint is the set of content words of what the user cannot do or does not have. A
candidate answer *violates* it when its text contains every one of those terms (stems and car
synonyms via ``EntityNormalizer``): "remove ... engine" is hit by "remove the engine mount
bolts" but not by "remove the air filter".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from dtdialog.understanding.entities import EntityNormalizer
from index.vocabulary import entity_words, is_entity_word

CANNOT = "cannot"
LACKS = "lacks"
AFFORD = "cannot afford"

_STOP_AT = (r"(?=\s*(?:[.,;:!?]|\bbut\b|\band\b|\bso\b|\bbecause\b|\bsince\b|\bor\b|\bwhat\b|\bhow\b|"
            r"\bright now\b|\bat the moment\b|\bnow\b|\banymore\b|\bcurrently\b|$))")
#: "I don't have a multimeter or any tools": what follows "or" after a lack is lacked too (a determiner opens it, so
#: "... or I would check it" is no object)
_OR_MORE = re.compile(r"\s+(?:or|nor)\s+(?:a|an|any|the)\s+(?P<what>[a-z][a-z' -]{1,40}?)" + _STOP_AT)
_CANNOT = re.compile(
    r"\b(?:i|we)\s*(?:can't|cant|cannot|can not|couldn't|could not|am not able to|'m not able to|m not able to|"
    r"am unable to|'m unable to|won't be able to|don't want to|dont want to|do not want to|refuse to|"
    r"have no way to|have no means to)\s+(?P<what>[a-z][a-z' -]{1,60}?)" + _STOP_AT)
_LACKS = re.compile(
    r"\b(?:i|we)\s*(?:don't|dont|do not|didn't|did not)\s+(?:have|own|got)\s+(?P<what>[a-z][a-z' -]{1,50}?)" + _STOP_AT
    + r"|\b(?:i|we)\s*(?:have|own|got)\s+no\s+(?P<what2>[a-z][a-z' -]{1,50}?)" + _STOP_AT)
#: "no X" / "without X" only counts as a constraint for equipment, so "no pressure" stays a symptom.
_EQUIPMENT = ("tool", "tools", "scanner", "scan tool", "lift", "jack", "jack stands", "garage", "gauge", "meter",
              "multimeter", "compressor", "welder", "torque wrench", "code reader", "socket set", "equipment",
              "hoist", "ramps")
_NO_EQUIPMENT = re.compile(
    r"\b(?:no|without(?:\s+a|\s+an|\s+any)?|not\s+(?:a|any))\s+(?P<what>(?:[a-z-]+\s+){0,2}?(?:"
    + "|".join(re.escape(e) for e in sorted(_EQUIPMENT, key=len, reverse=True)) + r"))\b")
_MAX_WORDS = 4
#: "I can't afford a new clutch": what cannot be paid for is a part to buy; an answer breaks it by telling the customer
#: to replace or buy that part, not by saying "afford"
_COST = re.compile(r"^(?:afford|pay\s+for|spend\s+(?:[a-z]+\s+){0,2}?on)\s+(?:to\s+(?:replace|buy|get|fix)\s+)?")
_REPLACEMENT = "replace replacement new buy swap"
#: "I don't have any tools" names no tool: it rules out an answer that needs any hand equipment ("when the car is
#: jacked up"), not only one that says "tool": the equipment words that never name a car part or place (a socket holds
#: a bulb, a compressor cools the cabin), and hand tools nobody says "no" to
_GENERIC_LACK = frozenset({"tool", "tools", "equipment"})
_ALSO_CAR_PARTS = frozenset({"socket", "lift", "compressor", "gauge", "garage", "equipment"})
_HAND_EQUIPMENT = " ".join([e for e in _EQUIPMENT if " " not in e and e not in _ALSO_CAR_PARTS]
                           + ["wrench", "screwdriver", "pliers", "voltmeter", "ohmmeter"])


#: "I don't have a multimeter" rules out every electrical reading, not only the answers that say "multimeter": "Check
#: the voltage across the battery terminals" needs one as much
_METERS = frozenset({"multimeter", "voltmeter", "ohmmeter", "meter", "dvom", "dmm"})
_ELECTRICAL_READINGS = "multimeter voltmeter ohmmeter voltage volts ohms resistance continuity amps amperage"


@dataclass(frozen=True)
class Constraint:
    """Something the user cannot do (``cannot``), does not have (``lacks``) or cannot pay for (``cannot afford``)."""

    kind: str
    text: str
    words: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "words": list(self.words)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Constraint:
        return cls(kind=str(data["kind"]), text=str(data["text"]), words=tuple(data.get("words", ())))

    def terms(self, normalizer: EntityNormalizer) -> frozenset[str]:
        """Return the stems a candidate must all mention to violate this constraint."""
        return normalizer.terms_of_text(" ".join(self.words))

    def violated_by(self, answer_terms: frozenset[str], normalizer: EntityNormalizer) -> bool:
        """Return True when an answer with ``answer_terms`` mentions everything this constraint excludes."""
        if self.kind == LACKS and set(self.words) <= _GENERIC_LACK:
            return bool(answer_terms & normalizer.terms_of_text(_HAND_EQUIPMENT))
        if self.kind == LACKS and set(self.words) & _METERS:
            return bool(answer_terms & normalizer.terms_of_text(_ELECTRICAL_READINGS))
        terms = self.terms(normalizer)
        singles = {t for t in terms if " " not in t}
        if self.kind == AFFORD and not answer_terms & normalizer.terms_of_text(_REPLACEMENT):
            return False
        return bool(singles) and singles <= answer_terms


def _content(phrase: str) -> tuple[str, ...]:
    words = [w for w in entity_words(phrase) if is_entity_word(w) or w in {"remove", "use", "take", "get", "lift", "buy"}]
    return tuple(words[:_MAX_WORDS])


def extract_constraints(text: str) -> list[Constraint]:
    """Return the constraints stated in ``text`` (possibly none), in order, without duplicates."""
    lowered = text.lower().replace("\u2019", "'")
    found: list[tuple[int, Constraint]] = []
    for match in _CANNOT.finditer(lowered):
        what = match.group("what")
        cost = _COST.match(what)
        words = _content(what[cost.end():] if cost else what)
        if cost:  # "a new clutch": what is ruled out is buying the clutch, whatever the answer calls it
            words = tuple(w for w in words if w != "new")
        if words:
            found.append((match.start(), Constraint(AFFORD if cost else CANNOT, match.group(0).strip(), words)))
    for match in _LACKS.finditer(lowered):
        what = match.group("what") or match.group("what2") or ""
        words = _content(what)
        if words:
            found.append((match.start(), Constraint(LACKS, match.group(0).strip(), words)))
        end = match.end()
        while (more := _OR_MORE.match(lowered, end)) is not None:
            if words := _content(more.group("what")):
                found.append((more.start(), Constraint(LACKS, more.group(0).strip(), words)))
            end = more.end()
    for match in _NO_EQUIPMENT.finditer(lowered):
        words = _content(match.group("what"))
        if words and not any(start <= match.start() < start + len(c.text) for start, c in found):
            found.append((match.start(), Constraint(LACKS, match.group(0).strip(), words)))
    out: list[Constraint] = []
    for _, c in sorted(found, key=lambda x: x[0]):
        if all(c.words != o.words for o in out):
            out.append(c)
    return out
