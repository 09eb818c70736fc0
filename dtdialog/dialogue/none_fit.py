"""None of these: when no offered answer fits, offer others as strong and on topic, else ask for the missing detail.

The step is ranked with the offered answers still in it: they are the yardstick an alternative must reach
(``clarify.strong_others``), so an answer that merely shares a word ("starting fluid" for a leak) is never the
consolation prize. Each "none of these" counts as a failed step, so the hand-off ends any loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dtdialog.dialogue import memory
from dtdialog.dialogue.abstain import AGAIN
from dtdialog.dialogue.clarify import strong_others
from dtdialog.dialogue.context import DialogueContext
from dtdialog.dialogue.handoff import HandoffReason
from dtdialog.dialogue.kinds import ReplyKind, State
from dtdialog.dialogue.outcomes import Outcomes
from dtdialog.dialogue.result import TurnResult
from dtdialog.dialogue.session import SessionRecord
from dtdialog.dialogue.steps import Steps
from dtdialog.dialogue.trace import TurnTrace
from dtdialog.selection.abstention import CONTEXT
from dtdialog.selection.clarification import ClarifyOption, PendingChoice

if TYPE_CHECKING:
    from dtdialog.selection.selector import RankOutcome


class NoneFits:
    """Answers "none of these" and the detail asked for after it."""

    def __init__(self, ctx: DialogueContext, steps: Steps, outcomes: Outcomes) -> None:
        self.ctx = ctx
        self.steps = steps
        self.outcomes = outcomes

    def answer_on_screen(self, record: SessionRecord, detail: str | None, trace: TurnTrace) -> TurnResult:
        """"None of these" with an answer on screen: that answer is the one option that did not fit."""
        shown = record.delivered[-1:]
        options = [ClarifyOption(number=1, label="", answer_id=a) for a in shown]
        pending = PendingChoice(options=[*options, ClarifyOption(number=len(options) + 1, label="", answer_id="")])
        return self.none_fits(record, pending, detail, trace)

    def none_fits(self, record: SessionRecord, pending: PendingChoice, detail: str | None,
                  trace: TurnTrace, *, reason: HandoffReason = HandoffReason.NONE_FIT) -> TurnResult:
        """None of the offered answers fits: offer the other candidates that are as strong and on topic, else
        ask for the one missing detail. ``detail`` (the reply's own words, if any) joins the step's replies;
        ``reason``: the hand-off's when the failures run out."""
        offered = [o.answer_id for o in pending.options if o.answer_id]
        record.pending = None
        record.failures += 1
        if record.failures >= self.ctx.config.dialogue.max_failures:
            record.skipped.extend(offered)
            return self.outcomes.hand_off(record, trace, reason)
        if detail:
            memory.add_reply(record, detail)
        first = pending.yardstick or offered
        # the first options stay in the ranking (same scale as when they were offered) as the bar to reach
        outcome = self.steps.rank(record, self.steps.plan(record), record.step_followups, keep=first)
        trace.step(outcome, step=record.step)
        record.skipped.extend(offered)
        others = strong_others(outcome.candidates, [*first, *offered], first, self.ctx.config)
        trace.note(f"none of the offered answers fits; {len(others)} other candidate(s) as strong and on topic")
        rule = self.ctx.rule
        if len(others) > 1 or (others and rule.sure(rule.of_outcome(others[0], outcome))):
            return self.offer_others(record, trace, others, first, outcome=outcome)
        if others:  # an answer the bot is unsure of is no next step: this "none of these" already counted a failure
            trace.note("the other candidate is below the confidence to answer: the missing detail is asked for")
        record.state = State.AWAITING_DETAIL
        record.pending = PendingChoice(options=[], asked_detail=True, yardstick=list(first),
                                       ignore_terms=sorted(self.outcomes.said_terms(record))).to_dict()
        detail = self.outcomes.detail_for(record, outcome)
        if detail == AGAIN:  # the bot's own question is the answer on screen's, and none is on screen now
            detail = CONTEXT
        trace.decide(ReplyKind.FALLBACK, state_after=State.AWAITING_DETAIL,
                     missing="detail after none of the options fitted", missing_detail=detail)
        return TurnResult(session_id=record.id, reply=self.ctx.replies.none_fit_text(detail), kind=ReplyKind.FALLBACK,
                          state=State.AWAITING_DETAIL)

    def offer_others(self, record: SessionRecord, trace: TurnTrace, others: list[Any],
                     first: Sequence[str], *, outcome: RankOutcome) -> TurnResult:
        """Deliver the one alternative, or offer several, keeping ``first`` as the bar for the next round.

        A lone alternative is an answer the bot gives: it passes the confidence rule against its step's ``outcome``.
        """
        if len(others) == 1:
            return self.outcomes.deliver_if_sure(record, trace, others[0], outcome)
        result = self.outcomes.offer(record, trace, [c.document for c in others[: self.ctx.config.clarify.max_options]],
                                     head=self.ctx.replies.none_fit_others, why="none_fit")
        record.pending = {**(record.pending or {}), "yardstick": list(first)}
        return result

    def detail_after_none(self, record: SessionRecord, text: str, trace: TurnTrace) -> TurnResult:
        """Rank the step again with the detail asked for after "none of these"; hand off when it finds nothing.

        An answer found with the detail must clear the same bar as before (``strong_others`` against the
        answers that did not fit, ranked with the detail) and share a term with the detail beyond what was
        already said. Words no answer contains ("purple elephants") end in the hand-off, not in a guess.
        """
        selector = self.ctx.selector
        pending = memory.pending_of(record)
        record.pending = None
        memory.add_reply(record, text)
        new_terms = selector.terms_of_text(text) - frozenset(pending.ignore_terms)
        outcome = self.steps.rank(record, self.steps.plan(record), record.step_followups, keep=pending.yardstick)
        trace.step(outcome, step=record.step)
        others = [c for c in strong_others(outcome.candidates, pending.yardstick, pending.yardstick, self.ctx.config)
                  if new_terms & selector.terms_of_edus(selector.answer_edus(c.document))]
        if not others:
            trace.note("the detail asked for after none of these leads to no answer as strong and on topic")
            record.failures += 1
            return self.outcomes.hand_off(record, trace, HandoffReason.NO_DETAIL)
        trace.note(f"the detail points to {len(others)} answer(s) as strong and on topic")
        return self.offer_others(record, trace, others, pending.yardstick, outcome=outcome)
