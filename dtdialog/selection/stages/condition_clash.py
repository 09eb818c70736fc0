"""Stage 5d: demote an answer for a symptom that stops in the situation the customer says it happens in.

Runs beside the already-tried stage, after scoring and before choose: a post-scoring score factor
(``EngineConfig.demotions.condition_clash_penalty``), so the learned ranker's features are untouched. The customer's
words are the question and every reply so far; the answer's are its text (``dtdialog.understanding.symptom_conditions``).
"""

from __future__ import annotations

from collections.abc import Sequence

from dtdialog.selection.scoring import CONDITION_CLASH, RankedCandidate
from dtdialog.selection.stages.record import StepRecord
from dtdialog.selection.stages.scoring_stage import Scored, demote
from dtdialog.understanding.symptom_conditions import clash_with, customer_situations


def demote_clashes(scored: Scored, customer_texts: Sequence[str], *, penalty: float, record: StepRecord) -> Scored:
    """Return ``scored`` with clashing answers' scores multiplied by ``1 - penalty`` and re-sorted (stable)."""
    said = customer_situations(" . ".join(t for t in customer_texts if t))
    if penalty <= 0 or not scored.kept or not said:
        return scored

    def reason(cand: RankedCandidate) -> str | None:
        found = clash_with(said, cand.document.text)
        return found.explain() if found is not None else None

    scored, record.condition_clash = demote(scored, reason, penalty=penalty, feature=CONDITION_CLASH)
    return scored
