"""Stage 5f: the logged dialogue of the answer just given, as a tested path the customer's reply follows or leaves.

A follow-up answer was written for the reply before it in its dialogue (``meta["reply_before"]``, stored at build
time). When the customer answered the bot's yes/no question the other way, asked back where the logged customer
reported something, or did not report the finding the next answer opens on ("That confirms ...": a yes is not
enough, most of the logged reply's words are) (``dtdialog.understanding.reply_branch``), every later answer of that
dialogue is demoted. When the reply took the logged branch (the same yes or no, or most of the logged reply's words),
the logged next answer goes first, and the dialogue manager gives it without offering a choice. Either way, the
answers further on in that dialogue are demoted: they were written for replies the customer has not given. A
post-scoring factor (``EngineConfig.demotions.branch_clash_penalty``), like the other demotions, so the ranker's
features are untouched.
"""

from __future__ import annotations

from dataclasses import replace

from dtdialog.selection.scoring import BRANCH_CLASH, RankedCandidate
from dtdialog.selection.stages.features_stage import continues
from dtdialog.selection.stages.plan import StepPlan
from dtdialog.selection.stages.record import StepRecord
from dtdialog.selection.stages.scoring_stage import Scored, demote
from dtdialog.selection.stages.tools import StageTools
from dtdialog.understanding.reply_branch import branch_agrees, branch_clash, polar_question
from index.base import AnswerDocument

#: Why an answer further on in the dialogue of the answer just given is demoted: it was written for replies that
#: came after the one the customer is giving ("Follow a bedding procedure" presupposes the new pads are on).
SKIPS_AHEAD = "it was written for a later point of its conversation, after replies you have not given"


def demote_branch_clashes(scored: Scored, step: StepPlan, reply: str, *, penalty: float,
                          tools: StageTools, record: StepRecord) -> Scored:
    """Return ``scored`` with the later answers of ``step.previous``'s dialogue demoted when the customer's reply
    to it is not the kind of reply the next one was written for (every later answer of that dialogue is on the
    branch the customer did not take), and else those beyond its next answer (``SKIPS_AHEAD``). ``reply`` is the
    customer's reply to ``step.previous`` (``AnswerSelector.rank_outcome``'s ``context_reply``)."""
    previous = step.previous
    if penalty <= 0 or previous is None or not step.is_followup or not scored.kept:
        return scored
    reply = reply.strip()
    successor, logged = _logged_next(previous, scored, tools)
    terms = tools.normalizer.terms_of_text
    found = branch_clash(reply, logged, previous.text, terms, answer_after=successor.text) if reply and logged else None
    if found is not None and found.kind == "unanswered":
        record.unanswered = polar_question(previous.text)
    if found is None and reply and logged and branch_agrees(reply, logged, previous.text, terms):
        scored = _first(scored, successor.id, record)

    def reason(cand: RankedCandidate) -> str | None:
        doc = cand.document
        if doc.dialogue_id != previous.dialogue_id or doc.position <= previous.position:
            return None
        if found is not None:
            return found.explain()
        return SKIPS_AHEAD if doc.position > previous.position + 2 else None

    scored, record.branch_clash = demote(scored, reason, penalty=penalty, feature=BRANCH_CLASH)
    return scored


def _logged_next(previous: AnswerDocument, scored: Scored, tools: StageTools) -> tuple[AnswerDocument | None, str]:
    """Return the logged next answer after ``previous`` and the reply it was written for ("" when not stored)."""
    successor = next((c.document for c in scored.kept if continues(previous, c.document)), None) \
        or tools.document(f"{previous.dialogue_id}#{previous.position + 2}")
    logged = successor.meta.get("reply_before") if successor is not None else None
    return successor, logged if isinstance(logged, str) else ""


def _first(scored: Scored, successor_id: str, record: StepRecord) -> Scored:
    """Return ``scored`` with the logged next answer first, at the best score: the customer's reply took the branch
    it was written for, so the logged dialogue is the tested path from here."""
    found = next((c for c in scored.kept if c.document.id == successor_id), None)
    if found is None:
        return scored
    record.branch_follows = successor_id
    if scored.kept[0] is found:
        return scored
    found.features["score_before_branch"] = found.score
    found.score = scored.kept[0].score
    return replace(scored, kept=[found, *(c for c in scored.kept if c is not found)])
