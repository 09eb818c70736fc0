"""Question intake: a message that opens a question passes the scope gate, is planned, and its first step ranked.

A message the gate refuses as off-domain, or finds too vague to search with, is held: a short next message
completes it ("it's my car's headlight") instead of replacing it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from dtdialog.dialogue import memory
from dtdialog.dialogue.abstain import DESCRIBE, WHEN_TOO, named_kind
from dtdialog.dialogue.context import DialogueContext
from dtdialog.dialogue.explanation import describe_signals
from dtdialog.dialogue.kinds import ReplyKind
from dtdialog.dialogue.result import TurnResult
from dtdialog.dialogue.session import SessionRecord
from dtdialog.dialogue.steps import Steps
from dtdialog.dialogue.trace import TurnTrace
from dtdialog.understanding import intents
from dtdialog.understanding.constraints import extract_constraints
from dtdialog.understanding.scope import VAGUE
from dtdialog.understanding.subtrees import QuestionPlan
from index.vocabulary import words_of

if TYPE_CHECKING:
    from dtdialog.understanding.scope import ScopeVerdict

#: a new question shorter than this (in words) right after an off-domain refusal completes the refused message
#: ("it's my car's headlight"); a longer one is a question of its own
HELD_JOIN_WORDS = 8


class QuestionIntake:
    """Opens questions: the scope gate, the held message, the plan and the first step."""

    def __init__(self, ctx: DialogueContext, steps: Steps) -> None:
        self.ctx = ctx
        self.steps = steps

    def start(self, record: SessionRecord, question: str, trace: TurnTrace) -> TurnResult:
        """Open ``question``, joined to the held message when it completes it; refused messages are held."""
        held, record.held_text = record.held_text, ""
        vague, record.held_vague = record.held_vague, False
        if held and (vague or len(words_of(question)) < HELD_JOIN_WORDS):
            return self._join_held(record, held, question, trace, vague=vague)
        plans: list[QuestionPlan] = []
        # the question is parsed here while the gate's encoding of it runs on a worker (``ScopeGate.prefetch``):
        # spaCy holds the GIL in long stretches, which would starve the encoding thread if the parse ran there
        verdict = self.scope_verdict(question, trace,
                                     meanwhile=lambda: plans.append(self.ctx.selector.plan(question)))
        if verdict is not None and not verdict.in_scope:
            return self.refuse(record, question, verdict, trace)
        return self.plan_and_select(record, question, trace, plan=plans[0] if plans else None)

    def _join_held(self, record: SessionRecord, held: str, question: str, trace: TurnTrace, *,
                   vague: bool) -> TurnResult:
        # a reply to "could you describe the symptom?" completes the message before it; refused words may
        # still sink the joined text's domain share, so the reply alone may vouch for it
        joined = f"{held} {question}"[-self.ctx.config.dialogue.max_input_chars:]  # one message's limit, like any turn
        trace.note("joined to the message before it, which was too vague" if vague else
                   "joined to the message refused as off-domain before it")
        verdict = self.scope_verdict(joined, trace)
        if verdict is not None and not verdict.in_scope and verdict.reason != VAGUE:
            verdict = self.scope_verdict(question, trace)
        if verdict is None or verdict.in_scope:
            return self.plan_and_select(record, joined, trace, asked_before=True)
        return self.refuse(record, joined if verdict.reason == VAGUE else question, verdict, trace)

    def plan_and_select(self, record: SessionRecord, question: str, trace: TurnTrace, *,
                        plan: QuestionPlan | None = None, asked_before: bool = False) -> TurnResult:
        """Start ``question`` on the session and answer its first step (``asked_before``: see ``Steps.select``)."""
        if plan is None:
            plan = self.ctx.selector.plan(question)
        record.start_question(question, plan.to_dict())
        trace.plan(plan, full=True)
        # constraints stated up front ("... and I can't remove the engine") apply from the first answer
        memory.add_constraints(record, extract_constraints(question), trace)
        return self.steps.select(record, trace, plan=plan, asked_before=asked_before)

    def scope_verdict(self, text: str, trace: TurnTrace, *,
                      meanwhile: Callable[[], object] | None = None) -> ScopeVerdict | None:
        """Return the scope gate's verdict on a message that would start a question (None without a gate).

        ``meanwhile``: called when the gate is about to encode the message (``ScopeGate.check``).
        """
        scope = self.ctx.scope
        if scope is None:
            return None
        verdict = scope.check(text, meanwhile=meanwhile)
        if verdict.in_scope:
            trace.note("in scope: " + describe_signals(verdict.signals))
        return verdict

    def refuse(self, record: SessionRecord, question: str, verdict: ScopeVerdict, trace: TurnTrace) -> TurnResult:
        """Return the reply to a new question the scope gate refused (state unchanged, nothing retrieved).

        A vague opening in the domain ("my car", "brakes") is no refusal: the bot asks for the detail and joins the
        customer's next message to it.
        """
        replies = self.ctx.replies
        if verdict.reason == VAGUE:
            record.held_text, record.held_vague = question, True
            trace.decide(ReplyKind.ASK_DETAIL, state_after=record.state, reason=verdict.reason,
                         signals=verdict.signals)
            kind = named_kind([question])
            reply = (replies.vague_describe.format(question=replies.describe_question(f"{DESCRIBE}{kind}{WHEN_TOO}"))
                     if kind is not None else replies.vague_opening)
            return TurnResult(session_id=record.id, reply=reply, kind=ReplyKind.ASK_DETAIL, state=record.state)
        reply = replies.out_of_scope_text(verdict.reason or "domain", language=verdict.language)
        # only an off-domain question is worth keeping: greetings, gibberish and other languages add no words
        record.held_text = question if verdict.reason == "domain" else ""
        trace.decide(ReplyKind.OUT_OF_SCOPE, state_after=record.state, reason=verdict.reason, signals=verdict.signals)
        return TurnResult(session_id=record.id, reply=reply, kind=ReplyKind.OUT_OF_SCOPE, state=record.state)


def after_reset(text: str) -> str:
    """Return what follows a reset phrase ("new question: my brakes squeal" -> "my brakes squeal") if it has content."""
    match = intents.RESET_PHRASE.search(text.lower())
    rest = text[match.end():] if match else ""
    rest = rest.lstrip(" :,-.!?")
    return rest if len(intents.content_words(rest)) >= 2 else ""

