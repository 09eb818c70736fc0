"""Session bookkeeping: what a session remembers across turns besides its question.

The constraints the customer stated, the actions they reported done (``dtdialog.understanding.tried``), and the options on
offer (``PendingChoice``), all kept on the ``SessionRecord`` as plain data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dtdialog.dialogue.context import SelectorPort
from dtdialog.dialogue.session import SessionRecord
from dtdialog.dialogue.trace import TurnTrace
from dtdialog.selection.clarification import PendingChoice
from dtdialog.understanding.constraints import Constraint
from dtdialog.understanding.reply_branch import polar_question
from dtdialog.understanding.tried import merge_tried, tried_from_dicts, tried_from_reply

if TYPE_CHECKING:
    from dtdialog.selection.selector import RankOutcome


def add_reply(record: SessionRecord, text: str) -> None:
    """Add a customer's reply to the current step (``step_followups``) and to the whole conversation's replies."""
    record.step_followups = record.step_followups + [text]
    record.followups.append(text)


def screen_reply(record: SessionRecord) -> str | None:
    """Return the step's reply to the answer on screen (``SessionRecord.screen_reply``), or None before any reply."""
    replies = record.step_followups
    if not replies:
        return None
    return replies[record.screen_reply] if 0 <= record.screen_reply < len(replies) else replies[0]


@dataclass(frozen=True)
class StepMark:
    """Where a session's step stood (``step_mark``), to put it back (``back_to``)."""

    step: int
    step_followups: tuple[str, ...]
    screen_reply: int
    followups: int
    context_id: str | None
    tried: tuple[dict, ...]


def step_mark(record: SessionRecord) -> StepMark:
    """Return where the session's step stands, for ``back_to`` (a reply that turned out not to be a step)."""
    return StepMark(record.step, tuple(record.step_followups), record.screen_reply, len(record.followups),
                    record.context_id, tuple(dict(t) for t in record.tried))


def back_to(record: SessionRecord, mark: StepMark) -> None:
    """Put the session's step, its replies and what it remembers as tried back where ``step_mark`` found them."""
    record.step, record.step_followups, record.context_id = mark.step, list(mark.step_followups), mark.context_id
    record.screen_reply = mark.screen_reply
    del record.followups[mark.followups:]
    record.tried = [dict(t) for t in mark.tried]


def question_on_screen(record: SessionRecord, selector: SelectorPort) -> str | None:
    """Return the yes/no question the bot's last message asked the customer (``reply_branch.polar_question`` of the
    answer on screen, as its closing question or asked again), or None."""
    if not record.delivered:
        return None
    doc = selector.document(record.delivered[-1])
    question = polar_question(doc.text) if doc is not None else None
    return question if question and question in str(last_bot_message(record).get("text", "")) else None


def last_bot_message(record: SessionRecord) -> dict[str, Any]:
    """Return the bot's last message of the transcript (empty before any)."""
    return next((m for m in reversed(record.transcript) if m.get("role") == "bot"), {})


def last_offered(record: SessionRecord) -> frozenset[str]:
    """Return the answers the bot's last message offered as options (empty when it offered none)."""
    return frozenset(last_bot_message(record).get("options") or ())


def pending_of(record: SessionRecord) -> PendingChoice:
    """Return the options on offer (none when the record holds no pending choice)."""
    return PendingChoice.from_dict(record.pending or {})


def constraints_of(record: SessionRecord) -> list[Constraint]:
    """Return the constraints the customer stated in this question."""
    return [Constraint.from_dict(c) for c in record.constraints]


def add_constraints(record: SessionRecord, found: list[Constraint], trace: TurnTrace) -> None:
    """Record the constraints of ``found`` the session does not hold yet."""
    known = {tuple(c.get("words", ())) for c in record.constraints}
    for c in found:
        if c.words not in known:
            record.constraints.append(c.to_dict())
            known.add(c.words)
            trace.note(f"constraint added: {c.kind} {' '.join(c.words)}")


def tried_kwargs(record: SessionRecord) -> dict[str, Any]:
    """Return ``{"tried": [...]}`` from the session's memory ({} when empty, for selectors without it)."""
    remembered = tried_from_dicts(record.tried)
    return {"tried": remembered} if remembered else {}


def remember_tried(record: SessionRecord, outcome: RankOutcome) -> None:
    """Keep what this step's question and reply reported done (the selector read it from their DTs)."""
    record.tried = [a.to_dict() for a in merge_tried(tried_from_dicts(record.tried), outcome.tried)]


def remember_rejected(record: SessionRecord, text: str, selector: SelectorPort, trace: TurnTrace) -> None:
    """On "already tried that", remember the rejected answer's recommendation, so no other answer repeats it."""
    if not getattr(selector, "remembers_tried", True):  # the engine without the tree keeps no memory of it
        return
    doc = selector.document(record.delivered[-1]) if record.delivered else None
    action = tried_from_reply(text, selector.answer_edus(doc), selector) if doc is not None else None
    if action is not None:
        record.tried = [a.to_dict() for a in merge_tried(tried_from_dicts(record.tried), [action])]
        trace.note(f"remembered as already tried: {action.text}")


def last_violates(record: SessionRecord, selector: SelectorPort) -> bool:
    """Return True when the answer on screen needs something a recorded constraint rules out."""
    if not record.delivered or not record.constraints:
        return False
    doc = selector.document(record.delivered[-1])
    if doc is None:
        return False
    return selector.violates(doc, constraints_of(record))
