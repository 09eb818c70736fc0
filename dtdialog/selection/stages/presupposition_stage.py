"""Stage 5e: demote an answer whose opening takes for granted a fact nobody in the conversation stated or states
evidence the customer said is absent ("white smoke" to "no white smoke"), or whose premise says the opposite of the
customer ("Since your coolant isn't dropping" to one whose coolant keeps dropping).

Runs beside the already-tried and condition-clash stages, after scoring and before choose: a post-scoring score
factor (``EngineConfig.demotions.presupposition_penalty``), so the learned ranker's features are untouched. What was
stated is the customer's question and every reply so far, and the answers already given (the bot's own words are
common ground too); the answer's facts are read from its opening sentence (``dtdialog.understanding.presupposition``).
A leading answer taken out only because the customer never reported a kind of evidence it needs ("a single loud click
with bright dash lights") is recorded with that kind, so an abstention can ask for it.
"""

from __future__ import annotations

from collections.abc import Sequence

from dtdialog.selection.scoring import PRESUPPOSITION, RankedCandidate
from dtdialog.selection.stages.record import StepRecord
from dtdialog.selection.stages.scoring_stage import Scored, demote
from dtdialog.selection.stages.tools import StageTools
from dtdialog.understanding.presupposition import CommonGround, Presupposition, common_ground, misfit

#: the answers that led before this stage whose unreported evidence is recorded: what a detail question may ask for
LEADING = 3
#: the answers that led before this stage whose logged question is read for a sibling of the customer's part: reading
#: it tags the question's sentences with the customer's head (spaCy, a few ms the first time); an answer further down
#: is rarely the one given
LEADING_PARTS = 3


def demote_presuppositions(scored: Scored, said: Sequence[str], *, penalty: float, tools: StageTools,
                           record: StepRecord, customer: Sequence[str] | None = None) -> Scored:
    """Return ``scored`` with presupposing answers' scores multiplied by ``1 - penalty`` and re-sorted (stable).

    ``said``: the customer's messages and the texts of the answers already delivered; ``customer``: the customer's
    messages alone, whose negations deny (default: ``said``).
    """
    if penalty <= 0 or not scored.kept:
        return scored
    ground = common_ground(said, tools.normalizer, customer=customer)
    leading = {c.document.id for c in scored.kept[:LEADING]}
    parts_read = {c.document.id for c in scored.kept[:LEADING_PARTS]}

    def reason(cand: RankedCandidate) -> str | None:
        found = _presupposition(cand, ground, tools, parts=cand.document.id in parts_read)
        if found is not None and found.fact.evidence and not found.contradicted and cand.document.id in leading:
            record.unreported_evidence[cand.document.id] = found.fact.evidence
        return found.explain() if found is not None else None

    scored, record.presupposition = demote(scored, reason, penalty=penalty, feature=PRESUPPOSITION)
    return scored


def _presupposition(cand: RankedCandidate, ground: CommonGround, tools: StageTools, *,
                    parts: bool) -> Presupposition | None:
    analysis = cand.analysis or tools.analyze(cand.document)
    logged = str((cand.document.meta or {}).get("question", "")) if parts else ""
    return misfit(cand.document.text, ground, tools.normalizer, tree=analysis.tree, logged_question=logged)
