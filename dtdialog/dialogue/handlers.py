"""The turn handlers: one per handler the state machine names (``dtdialog.dialogue.transitions.HANDLERS``).

``TurnHandlers.dispatch`` classifies a turn, looks its intent up in the table for the session's state and runs
the handler it names (``on_<name>``). The handlers hold only the guards that need the text itself; the work is
done by the units they consult: question intake (``opening``), the step's ranking (``steps``), choosing among
options (``choice``, ``none_fit``), session bookkeeping (``memory``) and how a turn ends (``outcomes``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from dtdialog.dialogue import memory, transitions
from dtdialog.dialogue.choice import Choices
from dtdialog.dialogue.context import DialogueContext
from dtdialog.dialogue.handoff import HandoffReason
from dtdialog.dialogue.kinds import IntentKind, ReplyKind, State
from dtdialog.dialogue.none_fit import NoneFits
from dtdialog.dialogue.opening import QuestionIntake, after_reset
from dtdialog.dialogue.outcomes import Outcomes
from dtdialog.dialogue.result import TurnResult
from dtdialog.dialogue.session import SessionRecord
from dtdialog.dialogue.steps import Steps
from dtdialog.dialogue.topic_shift import TopicShift
from dtdialog.dialogue.trace import TurnTrace
from dtdialog.selection.clarification import match_reply
from dtdialog.understanding import intents
from dtdialog.understanding.reply_branch import asks_outcome
from index.vocabulary import SENTENCE_BREAK

Handler = Callable[[SessionRecord, str, intents.Intent, TurnTrace], TurnResult]

_IDLE_STATES = (State.NEW, State.CONCLUDED, State.HANDED_OFF)
#: States with no question open: a longer message there opens one, whatever courtesy words it holds.
_OPENING_STATES = (State.NEW, State.CONCLUDED)


class TurnHandlers:
    """Runs one turn through the state machine over the units of the dialogue."""

    def __init__(self, ctx: DialogueContext) -> None:
        self.ctx = ctx
        self.outcomes = Outcomes(ctx)
        self.steps = Steps(ctx, self.outcomes)
        self.intake = QuestionIntake(ctx, self.steps)
        self.none_fit = NoneFits(ctx, self.steps, self.outcomes)
        self.choices = Choices(ctx, self.steps, self.outcomes, self.none_fit)
        self.topic = TopicShift(ctx, self.steps)
        # every handler the table names must exist: a typo fails here, not on some rare turn
        self.handlers: dict[str, Handler] = {name: getattr(self, f"on_{name}") for name in transitions.HANDLERS}

    def dispatch(self, record: SessionRecord, text: str, trace: TurnTrace) -> TurnResult:
        """Classify the cleaned ``text`` and run the handler the table names for it in the session's state."""
        intent = intents.classify(text, opening=record.state in _OPENING_STATES)
        intent = self._answers_question(record, text, intent)
        handler = transitions.handler_for(record.state, intent.kind)
        # with no question open, a turn with content starts one: the trace says so, not the classifier's default
        opens = transitions.opens_question(record.state, intent)
        trace.intent(IntentKind.NEW_QUESTION if opens else intent.kind,
                     **({"constraints": [c.to_dict() for c in intent.constraints]} if intent.constraints else {}))
        return self.handlers[handler](record, text, intent, trace)

    def _answers_question(self, record: SessionRecord, text: str, intent: intents.Intent) -> intents.Intent:
        """Return ``intent`` as ``YES_NO`` when a bare yes or no answers the bot's own yes/no question: "yes" to
        "Does the fan come on with the AC?" is the reply the next step waits for, never a goodbye. A bare no under an
        answer stays its rejection (the next answer of the part follows); asked again, the question has no answer
        on screen to reject."""
        if intent.kind not in (intents.CONCLUDE, intents.REJECT) or \
                record.state not in (State.AWAITING_FEEDBACK, State.AWAITING_DETAIL):
            return intent
        says = intents.bare_yes_no(text)
        if not says or (says < 0 and record.state != State.AWAITING_DETAIL):
            return intent
        question = memory.question_on_screen(record, self.ctx.selector)
        if question is None or (says > 0 and asks_outcome(question)):
            return intent  # "yes" to "Does the slipping improve after that?" says it is fixed
        return replace(intent, kind=intents.YES_NO, has_content=True)

    def _asked_open_question(self, record: SessionRecord) -> bool:
        """Return True when the bot's last message asked something a bare "yes" or "ok" does not answer: a request for
        detail, or an answer closing on a question that is not whether the advice worked."""
        if record.state == State.AWAITING_DETAIL:
            return True
        last = memory.last_bot_message(record)
        sentences = [s for s in SENTENCE_BREAK.split(str(last.get("text", "")).strip()) if s.strip()]
        closing = sentences[-1].strip() if sentences else ""
        return closing.endswith("?") and not asks_outcome(closing)

    def bad_input(self, record: SessionRecord, problem: IntentKind, trace: TurnTrace) -> TurnResult:
        """Answer a turn ``intents.sanitize`` refused (empty or too long): say what the state expects."""
        replies = self.ctx.replies
        trace.intent(problem)
        choosing = record.state == State.AWAITING_CHOICE
        options = memory.pending_of(record).options if choosing and record.pending else []
        if problem == IntentKind.TOO_LONG:
            message = replies.too_long_text(self.ctx.config.dialogue.max_input_chars)
        elif choosing:
            message = replies.options_text(memory.pending_of(record).options, again=True)
        elif record.state == State.HANDED_OFF:
            message = replies.handed_off_wait
        else:
            message = self.outcomes.idle_prompt(record) if record.state in _IDLE_STATES else replies.did_it_help
        return self.outcomes.reply(record, trace, ReplyKind.PROMPT, message, state=record.state, options=options)

    def new_problem(self, record: SessionRecord, text: str, trace: TurnTrace) -> TurnResult | None:
        """Start ``text`` as a question of its own when it tells a new problem (``topic_shift``), else None."""
        found = self.topic.new_problem(record, text)
        if found is None:
            return None
        # the rule has passed it through the scope gate and planned it: start it without doing either again
        trace.note(f"a new problem, not a reply to the open question: {found.why}")
        result = self.intake.plan_and_select(record, text, trace, plan=found.plan)
        result.reply = self.ctx.replies.new_problem + result.reply
        return result

    def unreadable(self, record: SessionRecord, error: Exception, trace: TurnTrace) -> TurnResult:
        """Explain a turn the engine could not read (e.g. a question the parser cannot use); the session goes on."""
        return self.outcomes.reply(record, trace, ReplyKind.PROMPT, self.ctx.replies.unreadable_text(error),
                                   state=record.state)

    # --- one handler per row of dtdialog.dialogue.transitions.TABLE ---------------------
    def on_handoff(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        return self.outcomes.hand_off(record, trace, HandoffReason.ASKED)

    def on_await_person(self, record: SessionRecord, text: str, intent: intents.Intent,
                        trace: TurnTrace) -> TurnResult:
        trace.note("handed off: the message joins the transcript for the person")
        return self.outcomes.reply(record, trace, ReplyKind.WAITING, self.ctx.replies.handed_off_wait,
                                   state=State.HANDED_OFF)

    def on_reset(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        record.held_text = ""
        rest = after_reset(text)
        if rest:
            trace.note("reset with a new question in the same message")
            return self.intake.start(record, rest, trace)
        record.state = State.NEW
        record.pending = None
        return self.outcomes.reply(record, trace, ReplyKind.RESET, self.ctx.replies.reset, state=State.NEW)

    def on_greet_or_start(self, record: SessionRecord, text: str, intent: intents.Intent,
                          trace: TurnTrace) -> TurnResult:
        if not intent.has_content:
            if record.held_vague and record.held_text:
                # "no, that didn't help" to the detail question of a vague opening: no detail to give, as after an
                # abstention (the opening stays held, so a later detail still completes it)
                return self.on_no_detail(record, text, intent, trace)
            return self.outcomes.reply(record, trace, ReplyKind.PROMPT, self.outcomes.idle_prompt(record),
                                       state=record.state)
        return self.intake.start(record, text, trace)

    def on_start(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        return self.intake.start(record, text, trace)

    def on_conclude(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        if not intents.closes(text) and self._asked_open_question(record):
            # "yes" or "ok" to "What have you already checked?" or "What does it read?" neither answers nor says goodbye
            return self.on_ask_again(record, text, intent, trace)
        # "yes" to "Does the slipping improve after that?" says it is fixed as much as "that fixed it" does
        question = memory.question_on_screen(record, self.ctx.selector) if intents.bare_yes_no(text) > 0 else None
        fixed = intents.says_fixed(text) or (question is not None and asks_outcome(question))
        record.state = State.CONCLUDED
        replies = self.ctx.replies
        return self.outcomes.reply(record, trace, ReplyKind.CONCLUDED,
                                   replies.concluded if fixed else replies.concluded_thanks, state=State.CONCLUDED)

    def on_ask_again(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        # "2" with no options on offer, or "hmm": nothing a search could use - ask instead of guessing
        trace.note("reply has no content to search with and no options are pending")
        replies = self.ctx.replies
        prompt = replies.feedback_prompt if record.state == State.AWAITING_FEEDBACK else replies.detail_prompt
        return self.outcomes.reply(record, trace, ReplyKind.PROMPT, prompt, state=record.state)

    def on_retry(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        memory.add_constraints(record, intent.constraints, trace)
        memory.remember_rejected(record, text, self.ctx.selector, trace)
        return self.steps.retry(record, text if intent.has_content else None, trace, reason="the answer did not help")

    def on_constrain_answer(self, record: SessionRecord, text: str, intent: intents.Intent,
                            trace: TurnTrace) -> TurnResult:
        memory.add_constraints(record, intent.constraints, trace)
        if memory.last_violates(record, self.ctx.selector):
            # the diagnosis stands and only its check is out of reach: other guesses are no help, a person is
            return self.steps.retry(record, text if intent.has_content else None, trace,
                                    reason="the answer needs something you ruled out", rejected=False,
                                    on_unsure=lambda: self.outcomes.hand_off(record, trace, HandoffReason.RULED_OUT))
        if not intent.has_content:
            return self.steps.retry(record, None, trace, reason="new constraint", rejected=False)
        return self.steps.next_step(record, text, trace)

    def on_side_question(self, record: SessionRecord, text: str, intent: intents.Intent,
                         trace: TurnTrace) -> TurnResult:
        # "is it safe to drive?": a corpus with a sure answer for it gives that answer, as to any reply; else the
        # answers given tell it, or the bot says they do not - never options or a guess, and the step stays as it was
        if record.state != State.AWAITING_FEEDBACK:
            return self.outcomes.side_reply(record, trace, text)
        mark = memory.step_mark(record)
        return self.steps.next_step(record, text, trace, allow_clarify=False,
                                    on_unsure=lambda: self.outcomes.side_reply(record, trace, text, back_to=mark))

    def on_no_detail(self, record: SessionRecord, text: str, intent: intents.Intent,
                     trace: TurnTrace) -> TurnResult:
        if intent.has_content:
            return self.on_add_detail(record, text, intent, trace)
        # "no" to a request for detail: the customer has none, so the bot's confidence cannot grow
        record.failures += 1
        if record.failures >= self.ctx.config.dialogue.max_failures:
            if record.question and record.state == State.AWAITING_DETAIL:
                # as after a detail that left the bot unsure ("I don't have more details"): the closest answers first
                return self.steps.last_resort(record, trace)
            return self.outcomes.hand_off(record, trace, HandoffReason.UNSURE)
        return self.on_ask_again(record, text, intent, trace)

    def on_followup(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        if not intent.has_content:
            return self.on_ask_again(record, text, intent, trace)
        otherwise = transitions.handler_for(record.state, transitions.OTHERWISE)
        return self.handlers[otherwise](record, text, intent, trace)

    def on_next_step(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        # a reply to an answer is its follow-up C_i, never read as a new problem: details name new things ("it's from
        # the front right wheel"), and a new problem can be opened with "new question"
        memory.add_constraints(record, intent.constraints, trace)
        return self.steps.next_step(record, text, trace)

    def on_add_detail(self, record: SessionRecord, text: str, intent: intents.Intent,
                      trace: TurnTrace) -> TurnResult:
        # the user adds detail to the step we could not answer: same step, more words (never a new problem: the
        # bot has just asked for them, and details name new things - "I meant a command line tool")
        memory.add_constraints(record, intent.constraints, trace)
        if record.pending and memory.pending_of(record).asked_detail:  # the detail asked after none fitted
            return self.none_fit.detail_after_none(record, text, trace)
        memory.add_reply(record, text)
        return self.steps.select(record, trace)

    def on_conclude_choice(self, record: SessionRecord, text: str, intent: intents.Intent,
                           trace: TurnTrace) -> TurnResult:
        if not intents.closes(text):
            # "ok" or "yes" under options picks none and says no goodbye: list them again
            return self.choices.settle(record, memory.pending_of(record), text, replace(intent, has_content=False),
                                       None, trace)
        record.state = State.CONCLUDED
        record.pending = None
        return self.outcomes.reply(record, trace, ReplyKind.CONCLUDED, self.ctx.replies.concluded_in_choice,
                                   state=State.CONCLUDED)

    def on_choose_none(self, record: SessionRecord, text: str, intent: intents.Intent,
                       trace: TurnTrace) -> TurnResult:
        pending = memory.pending_of(record)
        if intent.constraints:
            # "no, I can't remove the engine" rules some options out; it is no verdict on all of them
            return self.choices.constrain(record, pending, text, intent.constraints, trace)
        return self.none_fit.none_fits(record, pending, text if intent.has_content else None, trace)

    def on_unsure_choice(self, record: SessionRecord, text: str, intent: intents.Intent,
                         trace: TurnTrace) -> TurnResult:
        # "I don't know" to the options is no verdict that none fits, yet no pick: go on as after "none of these",
        # and a hand-off says the bot was unsure, never that the customer turned the options down
        memory.add_constraints(record, intent.constraints, trace)
        return self.none_fit.none_fits(record, memory.pending_of(record), None, trace, reason=HandoffReason.UNSURE)

    def on_constrain_choice(self, record: SessionRecord, text: str, intent: intents.Intent,
                            trace: TurnTrace) -> TurnResult:
        return self.choices.constrain(record, memory.pending_of(record), text, intent.constraints, trace)

    def on_choose(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        pending = memory.pending_of(record)
        if intent.constraints and intent.kind != IntentKind.CHOICE:
            # "no, I can't remove the engine" states a limit, it does not pick the option that mentions the engine
            return self.choices.constrain(record, pending, text, intent.constraints, trace)
        if intent.kind != IntentKind.CHOICE and intent.has_content and self.ctx.selector.tried_in(text):
            # "I replaced the spark plug" reports what was done: it is no pick of the option that names the plug
            return self.choices.detail(record, text, trace)
        option = match_reply(text, pending, normalizer=self.ctx.selector,
                             number=intent.number if intent.kind == IntentKind.CHOICE else None)
        if option is None and intent.has_content and (started := self.new_problem(record, text, trace)) is not None:
            return started
        return self.choices.settle(record, pending, text, intent, option, trace)

    def on_none_fits(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        return self.none_fit.answer_on_screen(record, text if intent.has_content else None, trace)
