"""Stage 5f: demote the logged continuation of the answer just given when the customer's reply went another way.

A follow-up answer was written for the reply before it in its dialogue (``meta["reply_before"]``, stored at build
time). It is demoted when the customer answered the bot's yes/no question the other way, or asked back where the
logged customer reported something (``dtdialog.understanding.reply_branch``). A post-scoring factor
(``EngineConfig.demotions.branch_clash_penalty``), like the other demotions, so the ranker's features are untouched.
"""

from __future__ import annotations

from collections.abc import Sequence

from dtdialog.selection.scoring import RankedCandidate
from dtdialog.selection.stages.features_stage import continues
from dtdialog.selection.stages.plan import StepPlan
from dtdialog.selection.stages.record import StepRecord
from dtdialog.selection.stages.scoring_stage import Scored, demote
from dtdialog.selection.stages.tools import StageTools
from dtdialog.understanding.reply_branch import branch_clash


def demote_branch_clashes(scored: Scored, step: StepPlan, replies: Sequence[str], *, penalty: float,
                          tools: StageTools, record: StepRecord) -> Scored:
    """Return ``scored`` with the answers after ``step.previous`` in its dialogue demoted when the customer's reply
    to it is not the kind of reply the next one was written for: every later answer of that dialogue is on the
    branch the customer did not take. That reply is the step's first (``replies``, in order): a later one answers
    what the bot asked in between ("When does it happen?"), not the answer's closing question."""
    previous = step.previous
    reply = next((r for r in replies if r.strip()), "")
    if penalty <= 0 or previous is None or not step.is_followup or not reply or not scored.kept:
        return scored
    successor = next((c.document for c in scored.kept if continues(previous, c.document)), None) \
        or tools.document(f"{previous.dialogue_id}#{previous.position + 2}")
    logged = successor.meta.get("reply_before") if successor is not None else None
    if not isinstance(logged, str):
        return scored
    found = branch_clash(reply, logged, previous.text, tools.normalizer.terms_of_text)
    if found is None:
        return scored

    def reason(cand: RankedCandidate) -> str | None:
        doc = cand.document
        return found.explain() if doc.dialogue_id == previous.dialogue_id and doc.position > previous.position \
            else None

    scored, record.branch_clash = demote(scored, reason, penalty=penalty, feature="branch_clash")
    return scored
