"""Abstain: one confidence rule for every answer the bot gives, and which detail to ask for instead.

First answers, follow-up answers, answers after a clarification and after a rejection all pass the same
rule: the calibrated probability that the answer is right (``dtdialog.selection.confidence.Calibrator``) must reach
``EngineConfig.abstention.abstain_below``. The learned ranker's calibrator reads every step (it is fitted on first and
later answers); the rule scorer's reads first answers, and its follow-up steps (ranked from the customer's
reply) have a calibrator of their own, fitted on later steps of real dialogues (``python -m
eval.calibrate_followup``), because their numbers lie where the first-answer one reads doubt. An answer the customer picked from offered options is the customer's choice, not the bot's guess,
and is delivered as picked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from index.vocabulary import stem, words_of


def followup_calibrator_path(ranker: str) -> Path:
    """Return where the follow-up calibrator of ``ranker`` (``learned`` or ``rules``) ships."""
    from dtdialog.selection.confidence import MODELS_DIR

    return MODELS_DIR / ("calibrator-v1-followup.json" if ranker == "learned" else "calibrator-v1-rules-followup.json")


def load_followup_calibrator(first: Any | None) -> Any | None:
    """Return the follow-up calibrator that goes with the first-answer calibrator ``first`` (None: use ``first``).

    It must be fitted for the same ranker and, for the learned ranker, the same model.
    """
    from dtdialog.selection.confidence import Calibrator
    from parsers.errors import ModelNotAvailableError

    if first is None:
        return None
    try:
        found = Calibrator.load(followup_calibrator_path(first.ranker))
    except ModelNotAvailableError:
        return None
    return found if (found.ranker, found.model_name) == (first.ranker, first.model_name) else None


@dataclass(frozen=True)
class ConfidenceRule:
    """Answer only at or above ``threshold`` calibrated confidence; without a calibrator every answer passes.

    ``followup``: the calibrator of follow-up steps (None: ``calibrator`` reads them too). ``brief_threshold``: the
    bar of a brief opening (``AbstentionConfig.brief_below``), where asking first is cheap; the higher one applies.
    """

    calibrator: Any | None
    threshold: float
    followup: Any | None = None
    brief_threshold: float = 0.0

    def confidence(self, chosen: Any, ranked: Sequence[Any], *, followup_step: bool = False) -> float | None:
        """Return the confidence that ``chosen`` is right, against the rest of its ranking ``ranked``."""
        calibrator = self.followup if followup_step and self.followup is not None else self.calibrator
        if calibrator is None:
            return None
        return calibrator.confidence([chosen, *(c for c in ranked if c is not chosen)])

    def of_outcome(self, chosen: Any, outcome: Any) -> float | None:
        """Return the confidence that ``chosen`` is right against its step's ranking ``outcome`` (a ``RankOutcome``;
        a step ranked from the customer's reply reads the follow-up calibrator)."""
        return self.confidence(chosen, outcome.candidates, followup_step=outcome.followup_tree is not None)

    def bar(self, *, brief: bool = False) -> float:
        """Return the confidence an answer needs (``brief``: the customer's opening alone, and a short one)."""
        return max(self.threshold, self.brief_threshold) if brief else self.threshold

    def sure(self, confidence: float | None, *, brief: bool = False) -> bool:
        """Return True when an answer of ``confidence`` may be given."""
        return confidence is None or confidence >= self.bar(brief=brief)

    def held_back(self, confidence: float | None, *, brief: bool) -> bool:
        """Return True when only a brief opening's bar stops an answer (or options) of ``confidence``."""
        return brief and self.sure(confidence) and not self.sure(confidence, brief=True)


#: The context questions, by what the customer already said: what they tried (ask when it happens), when it happens
#: (ask what they tried), or both (ask what else they notice): never ask again what was just said.
WHEN, TRIED, MORE = "when", "tried", "more"
#: The question for a customer who asks how to do something, or whether it is advisable, and reports no problem
#: (``dtdialog.understanding.requests``): what they are working on, never when "it" happens.
GOAL = "goal"
#: For a customer who already told a lot (``AbstentionConfig.told_words``): no context question at all. Read by hand on
#: held-out forum posts, the generic when / tried / what-else questions mostly asked for what the post had said or did
#: not fit it (a how-to, a part's name, whether to repair or sell): say so and offer the person instead.
TOLD = "told"
#: The kinds of evidence a leading answer may need that the customer never reported (``StepRecord.unreported_evidence``,
#: the first word of each ``observation_kinds`` group): "a single loud click with bright dash lights" asks about lights.
EVIDENCE = ("noise", "code", "light", "smell", "vibration")
#: The words that name a kind of evidence without describing it: "my car makes a weird noise" said which kind, so the
#: symptom question ("a noise, a warning light, a leak?") would ask it again; ask what that noise is like instead.
_BARE_KINDS = {"noise": "noise", "noises": "noise", "sound": "noise", "sounds": "noise", "light": "light",
               "lights": "light", "warning": "light", "smell": "smell", "smells": "smell", "odor": "smell",
               "smoke": "smell", "vibration": "vibration", "vibrates": "vibration", "shake": "vibration",
               "shakes": "vibration", "shaking": "vibration"}
#: The bot's own yes/no question, which the customer's reply left open (``StepRecord.unanswered``): asked again first,
#: since the answer after it depends on it ("Can you feel play in the link?" to "it's the front left I think").
AGAIN = "again"
DESCRIBE = "describe_"
WHEN_TOO = "+when"


def named_kind(texts: Sequence[str]) -> str | None:
    """Return the kind of evidence the customer named by a bare word ("a weird noise" -> ``noise``), or None."""
    for text in texts:
        for word in words_of(text):
            if word in _BARE_KINDS:
                return _BARE_KINDS[word]
    return None


def reports_evidence(texts: Sequence[str]) -> bool:
    """Return True when the customer's words report a kind of evidence, by its name or a word of it ("a weird noise",
    "it squeals", "a flashing light"; ``presupposition_triggers.json``'s ``observation_kinds``)."""
    stems = _evidence_stems()
    return any(stem(word) in stems for text in texts for word in words_of(text))


@lru_cache(maxsize=1)
def _evidence_stems() -> frozenset[str]:
    from dtdialog.understanding.opening_facts import trigger_words

    return frozenset(stem(word) for word in [*trigger_words().kinds, *_BARE_KINDS])


def names_which_light(texts: Sequence[str], vocabulary: Any) -> bool:
    """Return True when the customer's words name which light it is: a known light's compound term ("check engine
    light", "oil light"), not a bare or generic one ("a warning light", "the dash lights")."""
    return any(" " in term and term.rsplit(" ", 1)[1] == "light"
               for text in texts for term in vocabulary.terms_of_text(text))


def detail_to_ask(outcome: Any, selector: Any, *, tried_known: bool, when_known: bool = False,
                  guidance: bool = False, told: bool = False, asked_again: bool = False) -> str:
    """Return which detail the question lacks (``dtdialog.selection.abstention``), against the top answers' terms.

    ``tried_known``: the customer already said what they did; ``when_known``: when the symptom happens ("when I
    stop"); the context question asks only for what is still missing. ``guidance``: the customer's messages ask for
    guidance and report no problem, so a part they name gets the goal question instead of the symptom or context one.
    ``told``: the customer's messages are long, so a context or goal question becomes ``TOLD`` (none asked); a
    question about a part, a symptom or the evidence a leading answer needs is still asked. ``asked_again``: the bot
    already asked its own yes/no question again in this step (``AGAIN``), so it is not asked a third time.
    """
    from dtdialog.selection.abstention import CONTEXT, NAMED, PART, SYMPTOM, missing_detail

    if outcome.record.unanswered and not asked_again:  # asked once more at most: never the same question thrice
        return AGAIN
    terms: set[str] = set()
    for cand in outcome.candidates[:5]:
        terms |= selector.terms_of_edus(selector.answer_edus(cand.document))
    # a reply that names the part ("the fan doesn't come on at all") counts with the question that did not
    said = [*outcome.plan.tree.edus, *(outcome.followup_tree.edus if outcome.followup_tree is not None else ())]
    detail = missing_detail(said, answer_terms=terms, normalizer=selector)
    if guidance and detail not in (PART, NAMED):
        return TOLD if told else GOAL
    unreported = next(iter(outcome.record.unreported_evidence.values()), None)
    if unreported in EVIDENCE and detail not in (PART, NAMED):
        return unreported  # the leading answer needs evidence never reported: ask for it, it tells them apart
    if detail == SYMPTOM and (kind := named_kind([e.text for e in said])) is not None:
        # they said which kind ("a noise"): ask what it is like, not which kind it is; when, unless they said it
        if kind == "light" and names_which_light([e.text for e in said], selector):
            kind = "named_light"  # "the check engine light is on": which light it is was said
        return DESCRIBE + kind + ("" if when_known else WHEN_TOO)
    if detail != CONTEXT:
        return detail
    if told:
        return TOLD
    if not (tried_known or when_known):
        return detail
    if tried_known and when_known:
        # they said what they tried, when, and what they notice ("a noise", "it squeals"): "what else do you notice -
        # a noise, ..." asks it again
        return TOLD if reports_evidence([e.text for e in said]) else MORE
    return WHEN if tried_known else TRIED
