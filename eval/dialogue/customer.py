"""The simulated customer: plays one logged dialogue against a bot, turn by turn, and records what happened.

Rules (the evaluation's protocol):
  * opening: the mechanics title alone (``EvalDialogue.opening_and_body``), else the first customer turn;
  * an answer that is the gold answer of the current step succeeds; the customer then sends the next logged
    follow-up and the next step begins, or the session ends successfully when none is left;
  * any other answer is rejected with one of ``REJECTIONS`` (drawn with the session's seeded generator);
  * clarification options: the gold answer's number when offered, else ``NONE_OF_THESE``;
  * any other bot turn (a detail request, abstention, fallback, out-of-scope refusal, prompt, unknown kind) is
    read as a request for detail: the body first (once), then the current step's logged follow-up (once), then
    ``NO_MORE_DETAIL``; after a reset, a "concluded" or a greeting the customer restates its opening;
  * budget: ``BUDGET`` bot turns per step; the step fails (and the session ends) when it runs out or at a hand-off;
  * after a hand-off the customer sends ``AFTER_HANDOFF`` once, to see whether the bot greets or answers again.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Protocol

from dtdialog.understanding.intents import content_words
from eval.datasets import EvalDialogue

REJECTIONS = ("no, that didn't help", "still the same", "I already did that", "that's not it", "nope")
NONE_OF_THESE = "none of these"
#: said when the bot asks for detail and the customer has sent the body and the step's follow-up already
NO_MORE_DETAIL = "I don't have more details"
AFTER_HANDOFF = "hello? is anyone there?"
#: the customer's own fixed words: they describe nothing, so the next-result baselines leave them out of the query
FIXED_PHRASES = frozenset((*REJECTIONS, NONE_OF_THESE, NO_MORE_DETAIL, AFTER_HANDOFF))
BUDGET = 4

ANSWER, CLARIFY, HANDOFF = "answer", "clarify", "handoff"
#: first bot turns that treat a message describing a problem as something else
MISROUTED_KINDS = frozenset(("prompt", "handoff", "reset", "concluded"))
#: kinds after which the bot has forgotten the question: the customer states it again
RESTART_KINDS = frozenset(("reset", "concluded"))
#: bot turns that end a gold-absent session honestly (no answer claimed)
HONEST_KINDS = frozenset(("handoff", "abstain", "ask_detail", "fallback", "out_of_scope", "prompt"))

# the hand-off wording the manager keeps: "{n} answers did not help" and "(messages so far: {messages})"
_FAILURES = re.compile(r"(\d+)\s+answers?\s+did\s+not\s+help", re.IGNORECASE)
_NOT_HELPED = re.compile(r"did\s+not\s+help|didn't\s+help", re.IGNORECASE)
_MESSAGES = re.compile(r"\((?:(\d+)\s+messages?|messages so far:\s*(\d+))\)", re.IGNORECASE)


@dataclass(frozen=True)
class Option:
    number: int
    label: str
    answer_id: str = ""


@dataclass(frozen=True)
class BotTurn:
    """One bot reply, whatever bot gave it."""

    kind: str
    reply: str
    answer_id: str | None = None
    options: tuple[Option, ...] = ()
    state: str = ""
    greeting: bool = False  # the reply is the bot's opening greeting


class Bot(Protocol):
    """What the customer talks to: ``start`` a new session for a dialogue, then ``send`` one message at a time."""

    name: str

    def start(self, dialogue: EvalDialogue) -> None: ...

    def send(self, text: str) -> BotTurn: ...


@dataclass
class Line:
    """One line of the transcript; ``gold`` marks an answer or option that is the current step's gold answer."""

    speaker: str  # "customer" or "bot"
    text: str
    kind: str = ""
    step: int = 0
    answer_id: str | None = None
    gold: bool = False
    options: tuple[Option, ...] = ()


@dataclass
class Session:
    """What one simulated conversation produced; ``step_turns[i]`` is the bot turn (1-based) of step i's success."""

    dialogue_id: str
    bot: str
    n_steps: int
    gold_present: bool = True
    lines: list[Line] = field(default_factory=list)
    step_turns: list[int | None] = field(default_factory=list)
    wrong_answers: int = 0
    answers_shown: int = 0
    handed_off: bool = False
    last_kind: str = ""
    misrouted_first: bool = False
    greeting_after_handoff: bool = False
    false_handoff_reason: str = ""

    @property
    def succeeded(self) -> bool:
        return len(self.step_turns) == self.n_steps and all(t is not None for t in self.step_turns)

    @property
    def bot_turns(self) -> int:
        return sum(1 for line in self.lines if line.speaker == "bot")

    def success_at(self, step: int, k: int) -> bool:
        """Return True when ``step`` (0-based) succeeded within ``k`` bot turns of that step."""
        return step < len(self.step_turns) and self.step_turns[step] is not None and self.step_turns[step] <= k

    def honest_end(self) -> bool:
        """Return True when the session ended without claiming an answer: a hand-off, abstention or detail request,
        with at most 1 wrong answer shown."""
        return self.wrong_answers <= 1 and (self.handed_off or self.last_kind in HONEST_KINDS)


def false_handoff_reason(reply: str, *, rejected: int, answers_shown: int, messages: int) -> str:
    """Return why a hand-off reply misstates the session ("" when it does not).

    Rules: "N answers did not help" must have N = the answers the customer rejected; any "did not help" needs at
    least one answer shown; "(N messages)" must be the messages exchanged before the hand-off reply, or that plus
    the reply itself (either reading of "our whole conversation" is accepted).
    """
    problems = []
    claimed = _FAILURES.search(reply)
    if claimed and int(claimed.group(1)) != rejected:
        problems.append(f"says {claimed.group(1)} answers did not help, {rejected} were rejected")
    if _NOT_HELPED.search(reply) and answers_shown == 0:
        problems.append("says answers did not help, none was shown")
    said = _MESSAGES.search(reply)
    count = int(said.group(1) or said.group(2)) if said else None
    if count is not None and count not in (messages, messages + 1):
        problems.append(f"says {count} messages, the transcript has {messages}")
    return "; ".join(problems)


class Customer:
    """Plays ``dialogue`` against ``bot``; ``seed`` makes the rejection phrases reproducible per session."""

    def __init__(self, dialogue: EvalDialogue, *, seed: int, gold_present: bool = True) -> None:
        self.dialogue = dialogue
        self.rng = random.Random(f"{seed}:{dialogue.id}")
        self.opening, body = dialogue.opening_and_body()
        self.body = body
        self.gold_present = gold_present
        self.step = 0
        self.turns_in_step = 0
        self.rejected = 0
        self.sent_followup: set[int] = set()
        self._bot: Bot | None = None

    @property
    def gold(self) -> str:
        return self.dialogue.answer_ids[self.step]

    def play(self, bot: Bot) -> Session:
        """Run the whole session and return it."""
        d = self.dialogue
        session = Session(dialogue_id=d.id, bot=bot.name, n_steps=d.n_answers, gold_present=self.gold_present)
        self._bot = bot
        bot.start(d)
        message: str | None = self.opening
        while message is not None:
            turn = self._say(bot, session, message)
            if session.bot_turns == 1:
                # "can you help me please" describes nothing: the greeting that asks for the problem is the right reply
                describes = bool(content_words(message.lower()))
                session.misrouted_first = describes and (turn.kind in MISROUTED_KINDS or turn.greeting)
            message = self._react(turn, session)
        return session

    def _say(self, bot: Bot, session: Session, message: str) -> BotTurn:
        session.lines.append(Line("customer", message, step=self.step))
        turn = bot.send(message)
        gold = self.gold if self.step < self.dialogue.n_answers else ""
        session.lines.append(Line("bot", turn.reply, kind=turn.kind, step=self.step, answer_id=turn.answer_id,
                                  gold=bool(turn.answer_id) and turn.answer_id == gold, options=turn.options))
        session.last_kind = turn.kind
        self.turns_in_step += 1
        return turn

    def _react(self, turn: BotTurn, session: Session) -> str | None:
        """Return the customer's next message, or None when the session is over."""
        if turn.kind == HANDOFF:
            return self._after_handoff(turn, session)
        if turn.kind == ANSWER and turn.answer_id:
            session.answers_shown += 1
            if turn.answer_id == self.gold:
                return self._step_succeeded(session)
            session.wrong_answers += 1
        if self.turns_in_step >= BUDGET:
            session.step_turns.append(None)
            return None
        if turn.kind == ANSWER and turn.answer_id:
            self.rejected += 1
            return self.rng.choice(REJECTIONS)
        if turn.kind == CLARIFY and turn.options:
            picked = [o for o in turn.options if o.answer_id and o.answer_id == self.gold]
            return str(picked[0].number) if picked else NONE_OF_THESE
        if turn.kind in RESTART_KINDS or turn.greeting:
            return self.opening
        return self._detail()

    def _step_succeeded(self, session: Session) -> str | None:
        session.step_turns.append(self.turns_in_step)
        d = self.dialogue
        if self.step + 1 >= d.n_answers or self.step >= len(d.followups):
            return None
        followup = d.followups[self.step]
        self.step += 1
        self.turns_in_step = 0
        return followup

    def _detail(self) -> str:
        """Return the next detail the customer has: the body once, then the step's logged follow-up once."""
        if self.body:
            body, self.body = self.body, ""
            return body
        d = self.dialogue
        if self.step < len(d.followups) and self.step + 1 < d.n_answers and self.step not in self.sent_followup:
            self.sent_followup.add(self.step)
            return d.followups[self.step]
        return NO_MORE_DETAIL

    def _after_handoff(self, turn: BotTurn, session: Session) -> None:
        session.handed_off = True
        session.step_turns.append(None)
        messages = len(session.lines) - 1  # before the hand-off reply
        session.false_handoff_reason = false_handoff_reason(turn.reply, rejected=self.rejected,
                                                            answers_shown=session.answers_shown, messages=messages)
        last_kind = session.last_kind
        after = self._say(self._bot, session, AFTER_HANDOFF)  # type: ignore[arg-type]
        session.last_kind = last_kind  # the probe after the hand-off is not how the session ended
        session.greeting_after_handoff = after.greeting or after.kind in (ANSWER, CLARIFY)
        return None


def play(bot: Bot, dialogue: EvalDialogue, *, seed: int, gold_present: bool = True) -> Session:
    """Return the session of the simulated customer of ``dialogue`` talking to ``bot``."""
    return Customer(dialogue, seed=seed, gold_present=gold_present).play(bot)
