"""Choosing among offered options: a number, an option's words, a clarifying description, or a constraint.

A reply that names no option but describes the problem is the customer clarifying: the step is ranked again with
it, and the offered answer on top is delivered when no other offered one still competes; else, when it reports what
was done or names something new the index knows, it is the step's next detail. After ``MAX_REPROMPTS`` replies that
match nothing, the options are dropped and the reply is read as "none of these".
"""

from __future__ import annotations

from dataclasses import replace

from dtdialog.dialogue import memory
from dtdialog.dialogue.clarify import competes
from dtdialog.dialogue.context import DialogueContext
from dtdialog.dialogue.kinds import ReplyKind, State
from dtdialog.dialogue.none_fit import NoneFits
from dtdialog.dialogue.outcomes import Outcomes
from dtdialog.dialogue.result import TurnResult
from dtdialog.dialogue.session import SessionRecord
from dtdialog.dialogue.steps import Steps
from dtdialog.dialogue.trace import TurnTrace
from dtdialog.selection.clarification import ClarifyOption, PendingChoice
from dtdialog.understanding import intents
from dtdialog.understanding.constraints import Constraint
from dtdialog.understanding.scope import message_stems
from index.base import AnswerDocument

#: After this many replies that match no option, the options are dropped: the reply is read as "none of these"
#: (with its words as detail), so "purple elephants" cannot keep the options on screen forever.
MAX_REPROMPTS = 2


class Choices:
    """Settles a reply to offered options: deliver the pick, clarify, re-offer, or none of these."""

    def __init__(self, ctx: DialogueContext, steps: Steps, outcomes: Outcomes, none_fit: NoneFits) -> None:
        self.ctx = ctx
        self.steps = steps
        self.outcomes = outcomes
        self.none_fit = none_fit

    def settle(self, record: SessionRecord, pending: PendingChoice, text: str, intent: intents.Intent,
               option: ClarifyOption | None, trace: TurnTrace) -> TurnResult:
        """Deliver (or skip past) the picked ``option``; with none, take the reply as detail, a clarification,
        or list the options again."""
        if option is None and pending.reprompts >= MAX_REPROMPTS:
            # the user keeps not choosing: drop the options, keep any words as detail, never list them again
            trace.note("no option matched again; reading the reply as none of these")
            return self.none_fit.none_fits(record, pending, text if intent.has_content else None, trace)
        if option is None and intent.has_content and intent.kind != intents.CHOICE:
            clarified = self.clarify(record, pending, text, trace)
            if clarified is not None:
                return clarified
            if self._tells_more(record, text):
                return self.detail(record, text, trace)
        if option is None:
            pending.reprompts += 1
            record.pending = pending.to_dict()
            trace.note("reply matched no option")
            return self.outcomes.reply(record, trace, ReplyKind.CLARIFY,
                                       self.ctx.replies.options_text(pending.options, again=True),
                                       state=State.AWAITING_CHOICE, options=pending.options)
        record.pending = None
        if not option.answer_id:  # "none of these"
            return self.none_fit.none_fits(record, pending, None, trace)
        doc = self.ctx.selector.document(option.answer_id)
        if doc is None:
            trace.note(f"chosen answer {option.answer_id} is no longer in the index")
            return self.steps.select(record, trace)
        record.skipped.extend(o.answer_id for o in pending.options if o.answer_id and o.answer_id != option.answer_id)
        trace.note(f"user chose option {option.number}: {option.label}")
        return self.outcomes.deliver(record, trace, doc.id, doc.text)

    def clarify(self, record: SessionRecord, pending: PendingChoice, text: str,
                trace: TurnTrace) -> TurnResult | None:
        """Return the delivered answer when a descriptive reply makes one offered answer clearly best, else None.

        A reply that names no option but describes the problem ("it did at first but not anymore",
        "the fan never comes on") is the user clarifying: the step is re-ranked with it as detail
        (a new ranking: the reply's words change the query), and the offered answer on top is
        delivered when no other offered one still competes (``clarify.competes``). The reply must share a
        term, beyond the question's own, with that answer: words that touch no option ("purple
        elephants") only re-list the options.
        """
        offered = [o.answer_id for o in pending.options if o.answer_id]
        reply_terms = self.ctx.selector.terms_of_text(text) - frozenset(pending.ignore_terms)
        if not offered or not reply_terms:
            return None
        followups = record.step_followups + [text]
        outcome = self.steps.rank(record, self.steps.plan(record), followups)
        ranked = [c for c in outcome.candidates if c.document.id in offered]
        if not ranked or not reply_terms & frozenset(pending.terms.get(ranked[0].document.id, ())):
            return None
        if any(competes(c, ranked[0], self.ctx.config) for c in ranked[1:]):
            return None
        trace.step(outcome, step=record.step)
        trace.note(f"reply read as a clarification of the problem; it points to {ranked[0].document.id}")
        record.pending = None
        record.step_followups = followups
        record.followups.append(text)
        record.skipped.extend(a for a in offered if a != ranked[0].document.id)
        return self.outcomes.deliver_if_sure(record, trace, ranked[0], outcome)

    def detail(self, record: SessionRecord, text: str, trace: TurnTrace) -> TurnResult:
        """Take a reply given instead of a pick (a report of what was done, or new words about the problem) as
        the step's next detail.

        The options are dropped, not rejected: the step is ranked again with the reply, whose reported actions the
        ranking remembers and whose repeats it demotes, and the usual rule answers, offers or asks. When that offers
        the very answers on screen, the bot says the detail does not tell them apart instead of listing them as if
        new, and it counts as a reply that matched no option (``MAX_REPROMPTS``).
        """
        trace.note("the reply tells more instead of picking; ranking the step again with it")
        before = memory.pending_of(record) if record.pending else None
        record.pending = None
        memory.add_reply(record, text)
        result = self.steps.select(record, trace)
        if before is None or result.kind != ReplyKind.CLARIFY or not record.pending:
            return result
        if {o.answer_id for o in result.options} != {o.answer_id for o in before.options}:
            return result
        offered = memory.pending_of(record)
        offered.reprompts = before.reprompts + 1
        record.pending = offered.to_dict()
        trace.note("the detail leaves the same options: said so, not listed as new")
        return replace(result, reply=self.ctx.replies.options_text(result.options, question=self.ctx.replies.choose_same))

    def _tells_more(self, record: SessionRecord, text: str) -> bool:
        """Return True when the reply names something the index knows and can tell apart ("already did an alignment")
        that the question and the step's replies did not: words it never saw ("purple elephants") are no detail."""
        scope = self.ctx.scope
        if scope is None:
            return False
        said = set(message_stems(" ".join([record.question, *record.step_followups])))
        profile = scope.profile()
        return any(profile.specific(s) for s in message_stems(text) if s not in said)

    def constrain(self, record: SessionRecord, pending: PendingChoice, text: str,
                  found: list[Constraint], trace: TurnTrace) -> TurnResult:
        """Record the constraints, drop the offered answers that violate them, and re-offer or deliver the rest.

        The offered answers were ranked best first and a constraint only lowers violators, so the
        survivors keep their order. One survivor is offered alone: the customer did not pick it, and the options may
        have been the bot's last guesses, so delivering it would skip the confidence rule. None means the next
        candidates.
        """
        memory.add_constraints(record, found, trace)
        survivors = self._survivors(record, pending, trace)
        record.pending = None
        said = text if len(text) <= 80 else text[:77].rstrip() + "..."
        if not survivors:
            trace.note("every offered answer violates a constraint; trying the next candidates")
            return self.steps.select(record, trace)
        offered = sum(1 for option in pending.options if option.answer_id)
        head = self.ctx.replies.constraint_noted_text(said, spares_all=len(survivors) == offered)
        if len(survivors) == 1:
            trace.note(f"only one offered answer fits the constraint: {survivors[0].id}, asked about")
            return self.outcomes.offer(record, trace, survivors, head=head, question=self.ctx.replies.choose_one_left)
        trace.note("constraint recorded; offering the remaining options again")
        return self.outcomes.offer(record, trace, survivors, head=head)

    def _survivors(self, record: SessionRecord, pending: PendingChoice, trace: TurnTrace) -> list[AnswerDocument]:
        # the offered answers no recorded constraint rules out; the others are skipped for good
        selector = self.ctx.selector
        active = memory.constraints_of(record)
        survivors: list[AnswerDocument] = []
        for option in pending.options:
            doc = selector.document(option.answer_id) if option.answer_id else None
            if doc is None:
                continue
            if selector.violates(doc, active):
                record.skipped.append(doc.id)
                trace.note(f"option {option.number} needs something you ruled out: {option.label}")
            else:
                survivors.append(doc)
        return survivors
