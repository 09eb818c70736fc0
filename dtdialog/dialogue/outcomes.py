"""How a turn ends: an answer delivered, options offered, a fallback, an abstention, a hand-off or a plain reply.

Each outcome sets the session's state and what stays pending, records the decision in the turn's trace, and
returns the ``TurnResult``; the policies (``abstain``, ``clarify``, ``handoff``) decide which one a turn gets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dtdialog.dialogue import memory
from dtdialog.dialogue.abstain import AGAIN, detail_to_ask
from dtdialog.dialogue.context import DialogueContext
from dtdialog.dialogue.handoff import HandoffReason
from dtdialog.dialogue.kinds import ReplyKind, State
from dtdialog.dialogue.result import TurnResult
from dtdialog.dialogue.session import SessionRecord
from dtdialog.dialogue.trace import TurnTrace
from dtdialog.selection.clarification import ClarifyOption, build_options
from dtdialog.understanding.requests import asks_for_guidance
from dtdialog.understanding.side_questions import SAFETY, side_question, told_in
from dtdialog.understanding.symptom_conditions import says_when
from dtdialog.understanding.tried import says_work_done
from dtdialog.understanding.unasked_response import without_unasked_response
from index.base import AnswerDocument

if TYPE_CHECKING:
    from dtdialog.selection.selector import RankOutcome


class Outcomes:
    """The ways a turn ends, over the manager's wording, settings and confidence rule."""

    def __init__(self, ctx: DialogueContext) -> None:
        self.ctx = ctx

    def reply(self, record: SessionRecord, trace: TurnTrace, kind: ReplyKind, text: str, *, state: State,
              options: list[ClarifyOption] | None = None) -> TurnResult:
        """Return a reply of ``kind`` that moves the session to ``state`` and changes nothing else."""
        record.state = state
        trace.decide(kind, state_after=state)
        return TurnResult(session_id=record.id, reply=text, kind=kind, options=list(options or []), state=state)

    def deliver(self, record: SessionRecord, trace: TurnTrace, answer_id: str, text: str, *,
                confidence: float | None = None) -> TurnResult:
        """Return the answer ``answer_id``: it is on screen, and the session waits for the customer's feedback.

        An opening yes or no that answers a question the customer never asked ("Not necessarily yet.") is left out.
        """
        shown = without_unasked_response(text, [record.question, *record.followups])
        if shown != text:
            trace.note("the answer's opening yes or no answers no question the customer asked: left out")
        record.delivered.append(answer_id)
        record.pending = None  # an answer on screen: no options, and no detail request, are pending any more
        record.state = State.AWAITING_FEEDBACK
        trace.decide(ReplyKind.ANSWER, state_after=State.AWAITING_FEEDBACK, answer_id=answer_id,
                     **({"confidence": confidence} if confidence is not None else {}))
        return TurnResult(session_id=record.id, reply=shown, kind=ReplyKind.ANSWER, state=State.AWAITING_FEEDBACK,
                          answer_id=answer_id, confidence=confidence)

    def deliver_if_sure(self, record: SessionRecord, trace: TurnTrace, chosen: Any,
                        outcome: RankOutcome) -> TurnResult:
        """Deliver ``chosen`` when the confidence rule accepts it against its ranking, else ask for a detail."""
        rule = self.ctx.rule
        confidence = rule.of_outcome(chosen, outcome)
        if rule.sure(confidence):
            return self.deliver(record, trace, chosen.document.id, chosen.document.text, confidence=confidence)
        return self.abstain(record, outcome, trace, confidence)

    def offer(self, record: SessionRecord, trace: TurnTrace, docs: list[AnswerDocument], *,
              head: str = "", question: str | None = None, why: str = "close") -> TurnResult:
        """Return a clarification over ``docs`` (best first); ``head`` is said before the options, ``question``
        asks instead of the usual "which one fits". ``why`` goes to the trace (``explanation.OFFERED_BECAUSE``):
        ``close`` (too close to pick one), ``unsure`` (the confidence ran out) or ``none_fit`` (others as strong after
        "none of these")."""
        selector, config = self.ctx.selector, self.ctx.config
        pending = build_options([(d.id, selector.answer_edus(d), selector.answer_tree(d)) for d in docs],
                                normalizer=selector, max_options=config.clarify.max_options,
                                ignore_terms=self.said_terms(record))
        record.pending = pending.to_dict()
        record.state = State.AWAITING_CHOICE
        trace.decide(ReplyKind.CLARIFY, state_after=State.AWAITING_CHOICE,
                     options=[o.to_dict() for o in pending.options], offered_because=why)
        return TurnResult(session_id=record.id, reply=head + self.ctx.replies.options_text(pending.options, question=question),
                          kind=ReplyKind.CLARIFY, options=pending.options, state=State.AWAITING_CHOICE)

    def said_terms(self, record: SessionRecord) -> frozenset[str]:
        """Return the terms of the question and the step's replies (they cannot pick one option over another)."""
        return self.ctx.selector.terms_of_text(" ".join([record.question, *record.step_followups]))

    def fallback(self, record: SessionRecord, outcome: RankOutcome, trace: TurnTrace) -> TurnResult:
        """No answer for the step: ask for a detail; it counts as a failed step, so it ends in the hand-off."""
        record.failures += 1
        if record.failures >= self.ctx.config.dialogue.max_failures:
            return self.hand_off(record, trace, HandoffReason.NO_ANSWER)
        missing = missing_text(outcome)
        reply = self.ctx.replies.fallback_text(missing, found_on_topic=bool(outcome.rejected))
        record.state = State.AWAITING_DETAIL
        trace.decide(ReplyKind.FALLBACK, state_after=State.AWAITING_DETAIL, missing=missing)
        return TurnResult(session_id=record.id, reply=reply, kind=ReplyKind.FALLBACK, state=State.AWAITING_DETAIL)

    def abstain(self, record: SessionRecord, outcome: RankOutcome, trace: TurnTrace, confidence: float, *,
                closest: Sequence[AnswerDocument] = (), held_back: bool = False) -> TurnResult:
        """Ask for the missing detail instead of an answer the engine is unsure of; the second time, offer the
        ``closest`` answers to pick from (``options_when_unsure``), else hand off.

        Counts as a failed step like a fallback, so a step that stays unsure ends with the hand-off (and its
        transcript) after ``max_failures``; "none of these" after the offer is one more failure, so it hands off.
        """
        config = self.ctx.config
        record.failures += 1
        if held_back:  # sure enough for a longer message: the brief opening's bar is what stopped it
            trace.note(f"a brief opening: confidence {confidence:.2f} is below {self.ctx.rule.bar(brief=True):.2f}, "
                       "so the detail is asked for first")
        else:
            trace.note(f"confidence {confidence:.2f} is below {config.abstention.abstain_below:.2f}: not answering")
        if record.failures >= config.dialogue.max_failures:
            return self.last_resort(record, trace, closest)
        detail = self.detail_for(record, outcome)
        record.state = State.AWAITING_DETAIL
        if detail == AGAIN:  # the reply to the question asked again is the one the answer on screen waits for
            record.screen_reply = len(record.step_followups)
        trace.decide(ReplyKind.ABSTAIN, state_after=State.AWAITING_DETAIL, confidence=confidence,
                     missing_detail=detail, best_id=outcome.candidates[0].document.id)
        return TurnResult(session_id=record.id, reply=self.ctx.replies.abstain_text(
                              detail, again=outcome.record.unanswered or ""), kind=ReplyKind.ABSTAIN,
                          state=State.AWAITING_DETAIL, confidence=confidence)

    def last_resort(self, record: SessionRecord, trace: TurnTrace, closest: Sequence[AnswerDocument]) -> TurnResult:
        """The confidence has run out on this step: offer the ``closest`` answers to pick from before a hand-off
        (``options_when_unsure``), else hand off."""
        config = self.ctx.config
        # the customer told more instead of picking: the options of the last turn, in any order, would repeat it
        shown = memory.last_offered(record)
        last = [d for d in closest if d.id not in shown]
        if record.context_ids:
            last = self.taking_up_replies(record, last, trace)
        last = last[: config.clarify.max_options]
        if config.dialogue.options_when_unsure and len(last) >= 2:
            trace.note("the confidence has run out: the closest answers are offered before a hand-off")
            return self.offer(record, trace, last, question=self.ctx.replies.unsure_options, why="unsure")
        if shown:
            trace.note("the closest answers left are the options of the last turn: not offered again")
        return self.hand_off(record, trace, HandoffReason.UNSURE)

    def taking_up_replies(self, record: SessionRecord, docs: Sequence[AnswerDocument],
                          trace: TurnTrace) -> list[AnswerDocument]:
        """Return the answers of ``docs`` that take up what the customer's replies to the answer on screen added to
        the question (a term of theirs the question lacked: "the fan doesn't come on", "I checked the fuse"); all of
        them when the replies added no term. Options that take up nothing of it answer the question again, not the
        customer."""
        selector = self.ctx.selector
        added = selector.terms_of_text(" ".join(record.step_followups)) - selector.terms_of_text(record.question)
        if not added:
            return list(docs)
        kept = [d for d in docs if added & selector.terms_of_edus(selector.answer_edus(d))]
        if len(kept) < len(docs):
            trace.note(f"{len(docs) - len(kept)} closest answer(s) take up nothing the customer's reply added "
                       f"({', '.join(sorted(added))}): not offered")
        return kept

    def detail_for(self, record: SessionRecord, outcome: RankOutcome) -> str:
        """Return the detail to ask for after ``outcome`` (``abstain.detail_to_ask``): never what the customer said."""
        said = " ".join([record.question, *record.followups])
        # "I already did that" or "had the tires balanced" said what was tried, even when no action we can read is named
        tried_known = bool(record.tried) or any(says_work_done(t) for t in [record.question, *record.followups])
        told = 0 < self.ctx.config.abstention.told_words <= len(said.split())
        return detail_to_ask(outcome, self.ctx.selector, tried_known=tried_known, when_known=says_when(said),
                             guidance=asks_for_guidance(said), told=told, asked_again=record.screen_reply > 0)

    def side_reply(self, record: SessionRecord, trace: TurnTrace, question: str, *,
                   back_to: memory.StepMark | None = None) -> TurnResult:
        """Answer a question about the repair (``side_questions``) from the answers already given, latest first, or
        say they do not tell it; the session stays where it was (``back_to``: a ``memory.step_mark``)."""
        if back_to is not None:
            memory.back_to(record, back_to)
        kind = side_question(question) or SAFETY
        selector = self.ctx.selector
        shown = [doc.text for doc in map(selector.document, reversed(record.delivered)) if doc is not None]
        sentence = told_in(kind, question, shown)
        trace.note(f"a question about the repair ({kind}): " + ("told by an answer given" if sentence else "untold"))
        replies = self.ctx.replies
        text = replies.side_told.format(sentence=sentence) if sentence else replies.side_untold_text(kind)
        pending = memory.pending_of(record) if record.state == State.AWAITING_CHOICE else None
        return self.reply(record, trace, ReplyKind.SIDE_ANSWER, text, state=record.state,
                          options=pending.options if pending else None)

    def hand_off(self, record: SessionRecord, trace: TurnTrace, why: HandoffReason) -> TurnResult:
        """Pass the session to a person, with the transcript and a true reason."""
        record.state = State.HANDED_OFF
        record.pending = None
        transcript = [{"role": m["role"], "text": m["text"]} for m in record.transcript]
        reason = why.text(self.ctx.replies, rejected=record.rejections)
        trace.decide(ReplyKind.HANDOFF, state_after=State.HANDED_OFF, reason=reason, reason_kind=why.value,
                     transcript=transcript, answers_shown=len(record.delivered), answers_rejected=record.rejections)
        reply = self.ctx.replies.handoff_text(reason, len(transcript))
        return TurnResult(session_id=record.id, reply=reply, kind=ReplyKind.HANDOFF, state=State.HANDED_OFF)

    def idle_prompt(self, record: SessionRecord) -> str:
        """Return the greeting to the session's first message, and an invitation to go on after anything was said."""
        replies = self.ctx.replies
        first = sum(1 for message in record.transcript if message.get("role") == "user") <= 1
        return replies.greeting if first and record.state == State.NEW and not record.question else replies.anything_else


def missing_text(outcome: RankOutcome) -> str:
    """Return the user's own words for what no answer addressed (never relation labels)."""
    if outcome.followup_tree is not None and outcome.part_index < len(outcome.plan.parts) - 1:
        source = outcome.plan.parts[outcome.part_index].text
    elif outcome.followup_tree is not None:
        source = outcome.followup_tree.text
    else:
        source = outcome.plan.parts[outcome.part_index].text
    words = source.split()
    return '"' + " ".join(words[:18]) + ("..." if len(words) > 18 else "") + '"'
