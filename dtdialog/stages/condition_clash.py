"""Stage 5d: demote an answer for a symptom that stops in the situation the customer says it happens in.

Runs beside the already-tried stage, after scoring and before choose: a post-scoring score factor
(``EngineConfig.condition_clash_penalty``), so the learned ranker's features are untouched. The customer's
words are the question and every reply so far; the answer's are its text (``dtdialog.symptom_conditions``).
"""

from __future__ import annotations

from collections.abc import Sequence

from dtdialog.stages.record import StepRecord
from dtdialog.stages.scoring_stage import Scored
from dtdialog.symptom_conditions import clash, occurrence_clauses


def demote_clashes(scored: Scored, customer_texts: Sequence[str], *, penalty: float, record: StepRecord) -> Scored:
    """Return ``scored`` with clashing answers' scores multiplied by ``1 - penalty`` and re-sorted (stable)."""
    said = " . ".join(t for t in customer_texts if t)
    if penalty <= 0 or not scored.kept or not occurrence_clauses(said):
        return scored
    why: dict[str, str] = {}
    for cand in scored.kept:
        found = clash(said, cand.document.text)
        if found is not None:
            cand.score *= 1.0 - penalty
            cand.features["condition_clash"] = 1.0
            why[cand.document.id] = found.explain()
    record.condition_clash = why
    if not why:
        return scored
    order = {c.document.id: i for i, c in enumerate(scored.kept)}
    return Scored(kept=sorted(scored.kept, key=lambda c: (-c.score, order[c.document.id])), rescued=scored.rescued)
