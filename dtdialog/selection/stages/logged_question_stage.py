"""Stage 5g: the logged opening the customer's first message repeats in other words (``dtdialog.ranking.logged_questions``).

On the first step only (nothing delivered yet), the first stored answer of the dialogue whose logged opening is
nearest the customer's words gets the feature ``logged_question``: the probability, from how near that opening is,
how much nearer than any other dialogue's, and how much of the customer's words it uses, that the team's reply to it
is right here, when that probability reaches ``at``. Scores and order are left alone: the evidence only raises the
confidence of that answer when it is chosen (``Calibrator.confidence``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dtdialog.ranking.logged_questions import term_coverage
from dtdialog.selection.stages.record import StepRecord
from dtdialog.selection.stages.scoring_stage import Scored
from dtdialog.selection.stages.tools import StageTools


def mark_logged_opening(scored: Scored, question: str, followups: Sequence[str], *, first_step: bool,
                        logged: Any | None, at: float, tools: StageTools, record: StepRecord) -> Scored:
    """Return ``scored`` with the ``logged_question`` feature on the answer that replied to the logged opening nearest
    the customer's messages so far, when that answer is a candidate and the match's probability reaches ``at``; the
    match goes to ``record.logged_question``.

    ``logged``: the engine's ``LoggedQuestions`` (None: no evidence, the rule scorer or an index without openings).
    """
    if logged is None or not first_step or not scored.kept or at >= 1.0:
        return scored
    match = logged.match(question, followups)
    if match is None:
        return scored
    terms = tools.normalizer.terms_of_text
    coverage = term_coverage(terms("\n".join([question, *followups])), terms(match.opening))
    probability = round(logged.model.probability(match.cosine, match.gap, coverage), 4)
    found = next((c for c in scored.kept if c.document.id == match.answer_id), None)
    record.logged_question = {"dialogue": match.dialogue_id, "answer": match.answer_id, "cosine": match.cosine,
                              "gap": match.gap, "coverage": round(coverage, 4), "probability": probability,
                              "candidate": found is not None, "counts": found is not None and probability >= at}
    if found is not None and probability >= at:
        found.features["logged_question"] = probability
    return scored
