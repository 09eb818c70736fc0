"""How well the engine reads what was tried: its extracted actions against the judges' ``tried`` phrases, and its
reading of which candidate answers repeat them against the judges' ``repeats_tried``.

A judged phrase ("replaced the battery") is found when an extracted action names one of its part terms (entity
terms, synonyms and stems applied); an extracted action is right when its part is in some judged phrase. This is
measured on the real questions, so the extraction is checked where customers write, not on examples made for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dtdialog.understanding.entities import EntityNormalizer
from dtdialog.understanding.tried import extract_tried, head_terms, main_recommendation, repeated_action
from eval.already_tried.gold import TriedQuestion


@dataclass(frozen=True)
class ExtractionScore:
    """Questions where anything was extracted, and phrase recall / action precision over all questions."""

    questions: int
    detected: int
    phrases: int
    phrases_found: int
    actions: int
    actions_right: int

    def to_dict(self) -> dict:
        return {**self.__dict__, "recall": round(self.phrases_found / max(self.phrases, 1), 3),
                "precision": round(self.actions_right / max(self.actions, 1), 3)}


def score_extraction(questions: Sequence[TriedQuestion], parser, normalizer: EntityNormalizer | None = None,
                     *, progress=None) -> ExtractionScore:
    """Return how the engine's ``extract_tried`` on each question compares with the judges' phrases."""
    normalizer = normalizer or EntityNormalizer()
    detected = phrases = found_phrases = actions = right = 0
    for q in questions:
        extracted = extract_tried(parser.parse(q.question), normalizer)
        parts = [head_terms(a.objects) or a.objects for a in extracted]
        judged = [t for t in (normalizer.terms_of_text(p) for p in q.tried) if t]
        detected += bool(extracted)
        phrases += len(judged)
        found_phrases += sum(1 for terms in judged if any(terms & p for p in parts))
        actions += len(parts)
        right += sum(1 for p in parts if any(p & terms for terms in judged))
        if progress is not None:
            progress.update(1)
    return ExtractionScore(questions=len(questions), detected=detected, phrases=phrases, phrases_found=found_phrases,
                           actions=actions, actions_right=right)


@dataclass(frozen=True)
class RepeatScore:
    """Judged candidates, those judged to repeat what was tried, and how many of each the engine's reading flags."""

    candidates: int
    repeats: int
    caught: int
    flagged_wrong: int

    def to_dict(self) -> dict:
        flagged = self.caught + self.flagged_wrong
        return {**self.__dict__, "recall": round(self.caught / max(self.repeats, 1), 3),
                "precision": round(self.caught / max(flagged, 1), 3)}


def score_repeats(questions: Sequence[TriedQuestion], parser, normalizer: EntityNormalizer | None = None,
                  *, progress=None) -> RepeatScore:
    """Return how often the engine's demotion rule (the question's extracted actions against each candidate's main
    recommendation, ``repeated_action``) flags the candidates the judges marked ``repeats_tried``, and the others."""
    normalizer = normalizer or EntityNormalizer()
    candidates = repeats = caught = wrong = 0
    for q in questions:
        tried = extract_tried(parser.parse(q.question), normalizer)
        for cand in q.candidates:
            flagged = bool(tried) and repeated_action(main_recommendation(parser.parse(cand.text), normalizer),
                                                      tried) is not None
            candidates += 1
            repeats += cand.repeats_tried
            caught += flagged and cand.repeats_tried
            wrong += flagged and not cand.repeats_tried
        if progress is not None:
            progress.update(1)
    return RepeatScore(candidates=candidates, repeats=repeats, caught=caught, flagged_wrong=wrong)
