"""A dialogue step: rank the session's current step and answer, clarify, abstain or fall back.

A step is one part of the question (DT-Q) with the customer's replies to it. The ranking excludes the answers
already shown and honours the session's constraints and tried actions (``memory``); the policies decide what the
ranking is worth: close alternatives are offered (``clarify``), an answer the confidence rule doubts is not given
(``abstain``), and after a rejection only fresh answers count, then the next part (``reject``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from dtdialog.dialogue import memory
from dtdialog.dialogue.clarify import close_alternatives
from dtdialog.dialogue.context import DialogueContext
from dtdialog.dialogue.handoff import HandoffReason
from dtdialog.dialogue.outcomes import Outcomes
from dtdialog.dialogue.reject import fresh_candidates, next_part
from dtdialog.dialogue.result import TurnResult
from dtdialog.dialogue.session import SessionRecord
from dtdialog.dialogue.trace import TurnTrace
from dtdialog.understanding.subtrees import QuestionPlan
from dtdialog.understanding.symptom_conditions import says_when

if TYPE_CHECKING:
    from dtdialog.selection.selector import RankOutcome


class Steps:
    """Ranks the session's current step and turns the ranking into the turn's outcome."""

    def __init__(self, ctx: DialogueContext, outcomes: Outcomes) -> None:
        self.ctx = ctx
        self.outcomes = outcomes

    def plan(self, record: SessionRecord) -> QuestionPlan:
        """Return the session's question plan (stored with the session, else planned again)."""
        return QuestionPlan.from_dict(record.plan) if record.plan else self.ctx.selector.plan(record.question)

    def rank(self, record: SessionRecord, plan: QuestionPlan, followups: list[str],
             keep: Sequence[str] = ()) -> RankOutcome:
        """Return the ranking of the session's current step with ``followups`` as the step's replies.

        ``keep``: answers ranked even though they were skipped (a yardstick, not a candidate to deliver).
        """
        outcome = self.ctx.selector.rank_outcome(
            question=plan, step=record.step, followups=followups,
            exclude_ids=[i for i in record.excluded_ids if i not in keep],
            constraints=memory.constraints_of(record), size=self.ctx.config.retrieval.candidates,
            context_ids=record.context_ids, **memory.tried_kwargs(record),
            # the step's first reply answers the answer on screen, later ones the bot's own questions: unless the bot
            # asked that answer's question again, when the reply to it does
            context_reply=memory.screen_reply(record))
        memory.remember_tried(record, outcome)
        return outcome

    def select(self, record: SessionRecord, trace: TurnTrace, *, plan: QuestionPlan | None = None,
               allow_clarify: bool = True, after_rejection: bool = False,
               on_unsure: Callable[[], TurnResult] | None = None, asked_before: bool = False) -> TurnResult:
        """Rank the current step and answer, clarify, abstain or fall back.

        ``on_unsure``: the reply when no answer is sure, instead of asking for a detail the customer has no reason
        to lack (they cannot do what the answer on screen asks, or asked about the repair itself). ``asked_before``:
        the question is an opening joined to the customer's reply to a request for more ("my car" + "the brakes
        grind"), so it gets no brief-opening question again.

        The step's context is the answer its follow-up replied to (``record.context_ids``), never the
        answer just rejected: a retry ranks the same part again with the shown answers excluded, and keeps
        only answers that repeat none shown. When none is left, or none the confidence rule accepts, the next
        part of the question is tried before asking for a detail.
        """
        config, rule = self.ctx.config, self.ctx.rule
        if plan is None:
            plan = self.plan(record)
            trace.plan(plan, full=True)
        outcome = self.rank(record, plan, record.step_followups)
        trace.step(outcome, step=record.step)
        ranked = self.fresh(record, outcome.candidates)
        # the customer's reply took the branch the logged next answer was written for: that answer, not a choice
        follows = bool(ranked) and ranked[0].document.id == outcome.record.branch_follows
        close = [] if follows else close_alternatives(ranked, config)[: config.clarify.max_options]
        followup_step = outcome.followup_tree is not None
        brief = not asked_before and self.brief_opening(record)
        if allow_clarify and len(close) >= 2 and self.worth_offering(close, ranked, trace, followup_step, brief=brief):
            return self.outcomes.offer(record, trace, [c.document for c in close])
        confidence = rule.confidence(ranked[0], ranked, followup_step=followup_step) if ranked else None
        if ranked and rule.sure(confidence, brief=brief):
            return self.outcomes.deliver(record, trace, ranked[0].document.id, ranked[0].document.text,
                                         confidence=confidence)
        following = next_part(outcome.part_index, len(plan.parts)) if after_rejection else None
        if following is not None and record.step == outcome.part_index:
            trace.note(f"part {outcome.part_index + 1} of the question has no answer left; on to part {following + 1}")
            record.step, record.step_followups, record.screen_reply = following, [], 0
            return self.select(record, trace, plan=plan, allow_clarify=allow_clarify, after_rejection=True,
                               on_unsure=on_unsure)
        if on_unsure is not None:
            return on_unsure()
        if not ranked:
            return self.outcomes.fallback(record, outcome, trace)
        return self.outcomes.abstain(record, outcome, trace, confidence, closest=self.closest(ranked, trace),
                                     held_back=rule.held_back(confidence, brief=brief))

    def last_resort(self, record: SessionRecord, trace: TurnTrace) -> TurnResult:
        """The customer has no detail to give ("no", "still the same") and the confidence has run out: rank the step
        as it stands and offer its closest answers before a hand-off (``Outcomes.last_resort``), as when the detail
        they gave left the bot unsure."""
        outcome = self.rank(record, self.plan(record), record.step_followups)
        trace.step(outcome, step=record.step)
        return self.outcomes.last_resort(record, trace, self.closest(self.fresh(record, outcome.candidates), trace))

    @staticmethod
    def closest(ranked: Sequence[Any], trace: TurnTrace) -> list[Any]:
        """Return the answers of ``ranked`` that may be offered as the closest ones: none that a stage demoted for
        contradicting the customer ("Replace it" to "the battery is new"), which a pick would only undo."""
        kept = [c.document for c in ranked if not c.objected]
        if len(kept) < len(ranked):
            trace.note(f"{len(ranked) - len(kept)} closest answer(s) go against what the customer said: not offered")
        return kept

    def brief_opening(self, record: SessionRecord) -> bool:
        """Return True while the session holds only the customer's opening and it is brief
        (``AbstentionConfig.brief_words``): nothing asked, offered or shown yet. An opening that already says when it
        happens and what was tried ("My brakes squeal when I stop, I already replaced the pads") is not: those are
        what the bot would ask, so asking first gains nothing (``record.tried``: the ranking has just read it)."""
        limit = self.ctx.config.abstention.brief_words
        if not (0 < limit and not record.followups and not record.delivered and not record.failures
                and not record.pending and len(record.question.split()) < limit):
            return False
        return not (record.tried and says_when(record.question))

    def worth_offering(self, options: Sequence[Any], ranked: Sequence[Any], trace: TurnTrace,
                       followup_step: bool, *, brief: bool = False) -> bool:
        """Return True when the chance that one of ``options`` is right reaches the bar for answering
        (``ClarifyConfig.confident_options``): options none of which is likely are a guess list, not a choice.
        ``brief``: a brief opening's bar, as for an answer (``brief_opening``)."""
        rule = self.ctx.rule
        if not self.ctx.config.clarify.confident_options:
            return True
        chances = [rule.confidence(c, ranked, followup_step=followup_step) for c in options]
        if any(c is None for c in chances):
            return True  # no calibrator: nothing to weigh the options with
        if rule.sure(sum(chances), brief=brief):
            return True
        trace.note(f"{len(options)} close answers, together {sum(chances):.2f} likely: not offered as options"
                   + (" on a brief opening" if rule.held_back(sum(chances), brief=brief) else ""))
        return False

    def fresh(self, record: SessionRecord, ranked: Sequence[Any]) -> list[Any]:
        """Return the candidates that repeat no answer already shown."""
        if not record.delivered:
            return list(ranked)
        selector = self.ctx.selector
        shown = [selector.answer_terms(doc) for doc in map(selector.document, record.delivered) if doc is not None]
        # the answer, its runner-up (the confidence's margin) and the options are all a turn reads
        return fresh_candidates(ranked, shown, self.candidate_terms, limit=self.ctx.config.clarify.max_options + 2)

    def candidate_terms(self, cand: Any) -> frozenset[str]:
        """Return a candidate's answer terms (from its analysis when the ranking made one)."""
        return cand.analysis.terms if cand.analysis is not None else self.ctx.selector.answer_terms(cand.document)

    def next_step(self, record: SessionRecord, text: str, trace: TurnTrace, *, allow_clarify: bool = True,
                  on_unsure: Callable[[], TurnResult] | None = None) -> TurnResult:
        """Take ``text`` as the follow-up to the answer on screen and rank the next dialogue step (``allow_clarify``,
        ``on_unsure``: as in ``select``)."""
        record.followups.append(text)
        record.step += 1
        record.step_followups, record.screen_reply = [text], 0
        # C_i replies to the answer on screen: it (and only it) lends the next step its referents
        record.context_id = record.delivered[-1] if record.delivered else None
        return self.select(record, trace, allow_clarify=allow_clarify, on_unsure=on_unsure)

    def retry(self, record: SessionRecord, extra: str | None, trace: TurnTrace, *, reason: str,
              rejected: bool = True, on_unsure: Callable[[], TurnResult] | None = None) -> TurnResult:
        """Offer the next answer for the same part; ``rejected``: the customer turned the answer on screen down;
        ``on_unsure``: the reply when no other answer is sure (``select``)."""
        if rejected:
            record.rejections += 1
            if record.rejections >= self.ctx.config.dialogue.max_rejections:
                return self.outcomes.hand_off(record, trace, HandoffReason.REJECTED)
        if extra:
            memory.add_reply(record, extra)
        trace.note(f"next candidate for the same step: {reason}")
        return self.select(record, trace, after_rejection=rejected, on_unsure=on_unsure)
