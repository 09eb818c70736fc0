"""The dialogue manager: one user turn in, one bot turn out, the session saved after every turn.

``DialogueManager`` holds no per-session state in memory: it loads the ``SessionRecord``, looks the
turn's intent up in the state machine (``dtdialog.transitions``), runs the handler it names over
the ``SelectorPort`` (answer selection), and saves the record. Everything it says comes from
``Replies`` (``dtdialog.replies``). A lock per session id serialises turns of one session; turns of
different sessions run in parallel.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from dtdialog import intents, transitions
from dtdialog.clarification import ClarifyOption, PendingChoice, build_options, match_reply
from dtdialog.constraints import Constraint, extract_constraints
from dtdialog.dialogue.abstain import ConfidenceRule, detail_to_ask
from dtdialog.dialogue.clarify import close_alternatives, competes, strong_others
from dtdialog.dialogue.handoff import HandoffReason
from dtdialog.dialogue.reject import fresh_candidates, next_part
from dtdialog.engine_config import EngineConfig
from dtdialog.explanation import describe_signals
from dtdialog.replies import DEFAULT_REPLIES, Replies
from dtdialog.scope import VAGUE
from dtdialog.session import (
    AWAITING_CHOICE,
    AWAITING_DETAIL,
    AWAITING_FEEDBACK,
    CONCLUDED,
    HANDED_OFF,
    NEW,
    SessionRecord,
    new_session_id,
)
from dtdialog.session_store import SessionStore
from dtdialog.subtrees import QuestionPlan
from dtdialog.trace import TurnTrace
from dtdialog.tried import TriedAction, merge_tried, tried_from_dicts, tried_from_reply
from index.base import AnswerDocument
from index.vocabulary import words_of
from parsers.errors import InputError
from parsers.tree import EDU, DiscourseTree

if TYPE_CHECKING:
    from dtdialog.scope import ScopeGate, ScopeVerdict
    from dtdialog.selector import RankOutcome

ANSWER = "answer"
CLARIFY = "clarify"
FALLBACK = "fallback"
HANDOFF = "handoff"
CONCLUDED_KIND = "concluded"
PROMPT = "prompt"
RESET = "reset"
#: a new question shorter than this (in words) right after an off-domain refusal completes the refused message
#: ("it's my car's headlight"); a longer one is a question of its own
HELD_JOIN_WORDS = 8
#: the out-of-scope gate refused a new question (issue 13, item 3): nothing was retrieved
OUT_OF_SCOPE = "out_of_scope"
# calibrated confidence: not answering when the engine is unsure
ABSTAIN = "abstain"
#: an opening in the domain that says too little to search with: the bot asks for the detail
ASK_DETAIL = "ask_detail"
#: a message after the hand-off: it joins the transcript for the person, the bot does not answer it
WAITING = "waiting"

#: After this many replies that match no option, the options are dropped: the reply is read as "none of these"
#: (with its words as detail), so "purple elephants" cannot keep the options on screen forever.
MAX_REPROMPTS = 2

#: The opening line, also printed by ``dtdialog chat`` before the first turn.
GREETING = DEFAULT_REPLIES.greeting

_IDLE_STATES = (NEW, CONCLUDED, HANDED_OFF)
#: States with no question open: a longer message there opens one, whatever courtesy words it holds.
_OPENING_STATES = (NEW, CONCLUDED)


@runtime_checkable
class SelectorPort(Protocol):
    """What the manager needs from answer selection; ``AnswerSelector`` provides it.

    The manager never reaches into an index or a normaliser: documents, terms and constraint
    checks all come through here, so any selector with these methods can run sessions.
    """

    config: EngineConfig

    def plan(self, question: str) -> QuestionPlan: ...

    def rank_outcome(self, *, question: str | QuestionPlan, step: int = 0, followups: Sequence[str] = (),
                     exclude_ids: Sequence[str] = (), constraints: Sequence[str | Constraint] = (),
                     size: int = 10, context_ids: Sequence[str] = (),
                     tried: Sequence[TriedAction] = ()) -> RankOutcome: ...

    def document(self, doc_id: str) -> AnswerDocument | None: ...

    def terms_of_text(self, text: str) -> frozenset[str]: ...

    def terms_of_edus(self, edus: Sequence[EDU]) -> frozenset[str]: ...

    def violates(self, doc: AnswerDocument, constraints: Sequence[Constraint]) -> bool: ...

    def answer_edus(self, doc: AnswerDocument) -> Sequence[EDU]: ...

    def answer_terms(self, doc: AnswerDocument) -> frozenset[str]: ...

    def answer_tree(self, doc: AnswerDocument) -> DiscourseTree: ...


@dataclass
class TurnResult:
    """The bot's reply to one user turn. ``options`` is set when ``kind == "clarify"``."""

    session_id: str
    reply: str
    kind: str
    options: list[ClarifyOption] = field(default_factory=list)
    state: str = NEW
    answer_id: str | None = None
    trace: dict[str, Any] = field(default_factory=dict)
    #: the calibrated probability that the delivered answer is right (None when no answer was delivered or
    #: the engine has no calibration)
    confidence: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "reply": self.reply, "kind": self.kind,
                "options": [o.to_dict() for o in self.options], "state": self.state,
                "answer_id": self.answer_id, "confidence": self.confidence, "trace": self.trace}


Handler = Callable[[SessionRecord, str, intents.Intent, TurnTrace], TurnResult]


class DialogueManager:
    """Runs sessions over a ``SelectorPort`` and a ``SessionStore``; thread-safe across sessions.

    ``replies`` is the wording (default ``DEFAULT_REPLIES``). ``scope`` is the out-of-scope gate run before
    retrieval on every new question (``dtdialog.scope.ScopeGate``, built by ``build_engine``; None: no gate).
    """

    def __init__(self, *, selector: SelectorPort, store: SessionStore, config: EngineConfig | None = None,
                 replies: Replies | None = None, scope: ScopeGate | None = None, calibrator: Any = None,
                 followup_calibrator: Any = None) -> None:
        self.selector = selector
        self.scope = scope
        # a ``dtdialog.confidence.Calibrator``; None reports no confidence and never abstains
        self.calibrator = calibrator
        # the calibrator of follow-up steps (``dtdialog.dialogue.abstain``); None: ``calibrator`` reads them too
        self.followup_calibrator = followup_calibrator
        self.store = store
        self.config = config or selector.config
        self.replies = replies or DEFAULT_REPLIES
        # every handler the table names must exist: a typo fails here, not on some rare turn
        self._handlers: dict[str, Handler] = {name: getattr(self, f"_on_{name}") for name in transitions.HANDLERS}
        # one lock per session in use, dropped when no thread holds or waits for it (no lock kept per session forever)
        self._locks: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
        self._locks_guard = threading.Lock()

    @property
    def rule(self) -> ConfidenceRule:
        """The confidence rule every answer passes, over the current calibrators and threshold."""
        followup = self.followup_calibrator if self.calibrator is not None else None
        return ConfidenceRule(self.calibrator, self.config.abstain_below, followup=followup)

    # --- public API -----------------------------------------------------------
    def start_session(self, session_id: str | None = None) -> str:
        """Create and store a new session; return its id (``session_id``, else a uuid4 hex).

        A given id is the caller's key for a conversation (the API's REST webhook derives it from the sender);
        a stored session of that id is replaced by the new, empty one.
        """
        record = SessionRecord(id=session_id or new_session_id())
        self.store.save(record)
        return record.id

    def session(self, session_id: str, *, traces: bool = True) -> Any:
        """Return the stored ``SessionRecord``; raises ``SessionNotFoundError`` for an unknown id.

        ``traces=False`` skips reading the stored turn traces (``record.traces`` is then empty).
        """
        return self.store.load(session_id, traces=traces)

    def handle(self, *, session_id: str, text: str,
               before_save: Callable[[TurnResult, SessionRecord], object] | None = None) -> TurnResult:
        """Process one user turn of ``session_id`` and return the reply; the session is saved before returning.

        Raises ``SessionNotFoundError`` for an unknown id. Bad text (empty, too long, control
        characters) never raises: it gets a ``prompt`` reply. The session is written once, after the
        reply is complete: ``before_save(result, record)`` runs just before (the API builds and
        serialises its response there), and when anything up to the write raises, nothing of the
        turn is saved and the session stays as it was.
        """
        with self.session_lock(session_id):
            # the turn only appends its own trace: never read and parse the stored history
            record = self.store.load(session_id, traces=False)
            record.turns += 1
            clean, problem = intents.sanitize(text, max_chars=self.config.max_input_chars)
            trace = TurnTrace(session_id=session_id, turn=record.turns, user_text=clean, state_before=record.state)
            if problem is not None:
                result = self._bad_input(record, problem, trace)
            else:
                record.add_message("user", clean)
                try:
                    result = self._dispatch(record, clean, trace)
                except InputError as exc:
                    # e.g. a question the parser cannot use: explain, keep the session alive
                    result = self._reply(record, trace, PROMPT, self.replies.unreadable_text(exc), state=record.state)
            record.add_message("bot", result.reply, kind=result.kind,
                               **({"answer_id": result.answer_id} if result.answer_id else {}))
            result.trace = trace.to_dict()
            record.traces.append(result.trace)
            if before_save is not None:
                before_save(result, record)
            self.store.save(record, keep_traces=self.config.max_traces)
            return result

    # --- the state machine: one handler per row of dtdialog.transitions.TABLE --------
    def _dispatch(self, record: SessionRecord, text: str, trace: TurnTrace) -> TurnResult:
        intent = intents.classify(text, opening=record.state in _OPENING_STATES)
        handler = transitions.handler_for(record.state, intent.kind)
        # with no question open, a turn with content starts one: the trace says so, not the classifier's default
        opens = transitions.opens_question(record.state, intent)
        trace.intent(intents.NEW_QUESTION if opens else intent.kind,
                     **({"constraints": [c.to_dict() for c in intent.constraints]} if intent.constraints else {}))
        return self._handlers[handler](record, text, intent, trace)

    def _on_handoff(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        return self._hand_off(record, trace, HandoffReason.ASKED)

    def _on_await_person(self, record: SessionRecord, text: str, intent: intents.Intent,
                         trace: TurnTrace) -> TurnResult:
        trace.note("handed off: the message joins the transcript for the person")
        return self._reply(record, trace, WAITING, self.replies.handed_off_wait, state=HANDED_OFF)

    def _on_reset(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        record.held_text = ""
        rest = _after_reset(text)
        if rest:
            trace.note("reset with a new question in the same message")
            return self._start(record, rest, trace)
        record.state = NEW
        record.pending = None
        return self._reply(record, trace, RESET, self.replies.reset, state=NEW)

    def _on_greet_or_start(self, record: SessionRecord, text: str, intent: intents.Intent,
                           trace: TurnTrace) -> TurnResult:
        if not intent.has_content:
            return self._reply(record, trace, PROMPT, self._idle_prompt(record), state=record.state)
        return self._start(record, text, trace)

    def _on_start(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        return self._start(record, text, trace)

    def _on_conclude(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        record.state = CONCLUDED
        return self._reply(record, trace, CONCLUDED_KIND, self.replies.concluded, state=CONCLUDED)

    def _on_ask_again(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        # "2" with no options on offer, or "hmm": nothing a search could use - ask instead of guessing
        trace.note("reply has no content to search with and no options are pending")
        prompt = self.replies.feedback_prompt if record.state == AWAITING_FEEDBACK else self.replies.detail_prompt
        return self._reply(record, trace, PROMPT, prompt, state=record.state)

    def _on_retry(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        self._add_constraints(record, intent.constraints, trace)
        self._remember_rejected(record, text, trace)
        return self._retry(record, text if intent.has_content else None, trace, reason="the answer did not help")

    def _on_constrain_answer(self, record: SessionRecord, text: str, intent: intents.Intent,
                             trace: TurnTrace) -> TurnResult:
        self._add_constraints(record, intent.constraints, trace)
        if self._last_violates(record):
            return self._retry(record, text if intent.has_content else None, trace,
                               reason="the answer needs something you ruled out", rejected=False)
        if not intent.has_content:
            return self._retry(record, None, trace, reason="new constraint", rejected=False)
        return self._next_step(record, text, trace)

    def _on_no_detail(self, record: SessionRecord, text: str, intent: intents.Intent,
                      trace: TurnTrace) -> TurnResult:
        if intent.has_content:
            return self._on_add_detail(record, text, intent, trace)
        # "no" to a request for detail: the customer has none, so the bot's confidence cannot grow
        record.failures += 1
        if record.failures >= self.config.max_failures:
            return self._hand_off(record, trace, HandoffReason.UNSURE)
        return self._on_ask_again(record, text, intent, trace)

    def _on_followup(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        if not intent.has_content:
            return self._on_ask_again(record, text, intent, trace)
        otherwise = transitions.handler_for(record.state, transitions.OTHERWISE)
        return self._handlers[otherwise](record, text, intent, trace)

    def _on_next_step(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        self._add_constraints(record, intent.constraints, trace)
        return self._next_step(record, text, trace)

    def _on_add_detail(self, record: SessionRecord, text: str, intent: intents.Intent,
                       trace: TurnTrace) -> TurnResult:
        # the user adds detail to the step we could not answer: same step, more words
        self._add_constraints(record, intent.constraints, trace)
        if record.pending and _pending(record).asked_detail:  # clarification: the detail asked after none fitted
            return self._detail_after_none(record, text, trace)
        record.step_followups = record.step_followups + [text]
        record.followups.append(text)
        return self._select(record, trace)

    def _on_conclude_choice(self, record: SessionRecord, text: str, intent: intents.Intent,
                            trace: TurnTrace) -> TurnResult:
        record.state = CONCLUDED
        record.pending = None
        return self._reply(record, trace, CONCLUDED_KIND, self.replies.concluded_in_choice, state=CONCLUDED)

    def _on_choose_none(self, record: SessionRecord, text: str, intent: intents.Intent,
                        trace: TurnTrace) -> TurnResult:
        pending = _pending(record)
        if intent.constraints:
            # "no, I can't remove the engine" rules some options out; it is no verdict on all of them
            return self._constrain_choice(record, pending, text, intent.constraints, trace)
        return self._none_fits(record, pending, text if intent.has_content else None, trace)

    def _on_constrain_choice(self, record: SessionRecord, text: str, intent: intents.Intent,
                             trace: TurnTrace) -> TurnResult:
        return self._constrain_choice(record, _pending(record), text, intent.constraints, trace)

    def _on_choose(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        pending = _pending(record)
        if intent.constraints and intent.kind != intents.CHOICE:
            # "no, I can't remove the engine" states a limit, it does not pick the option that mentions the engine
            return self._constrain_choice(record, pending, text, intent.constraints, trace)
        option = match_reply(text, pending, normalizer=self.selector,
                             number=intent.number if intent.kind == intents.CHOICE else None)
        return self._settle_choice(record, pending, text, intent, option, trace)

    # --- steps shared by the handlers -----------------------------------------
    def _start(self, record: SessionRecord, question: str, trace: TurnTrace) -> TurnResult:
        held, record.held_text = record.held_text, ""
        vague, record.held_vague = record.held_vague, False
        if held and (vague or len(words_of(question)) < HELD_JOIN_WORDS):
            # a reply to "could you describe the symptom?" completes the message before it; refused words may
            # still sink the joined text's domain share, so the reply alone may vouch for it
            joined = f"{held} {question}"[-self.config.max_input_chars:]  # one message's limit, like any turn
            trace.note("joined to the message before it, which was too vague" if vague else
                       "joined to the message refused as off-domain before it")
            verdict = self._scope_verdict(joined, trace)
            if verdict is not None and not verdict.in_scope and verdict.reason != VAGUE:
                verdict = self._scope_verdict(question, trace)
            if verdict is None or verdict.in_scope:
                return self._plan_and_select(record, joined, trace)
            return self._refuse(record, joined if verdict.reason == VAGUE else question, verdict, trace)
        plans: list[QuestionPlan] = []
        # the question is parsed here while the gate's encoding of it runs on a worker (``ScopeGate.prefetch``):
        # both are on a new question's path. This way round, not the parse on a worker: spaCy holds the GIL in long
        # stretches, which starved the encoding thread's Python steps more (first turns ~1-2 ms slower at p95).
        verdict = self._scope_verdict(question, trace, meanwhile=lambda: plans.append(self.selector.plan(question)))
        if verdict is not None and not verdict.in_scope:
            return self._refuse(record, question, verdict, trace)
        return self._plan_and_select(record, question, trace, plan=plans[0] if plans else None)

    def _plan_and_select(self, record: SessionRecord, question: str, trace: TurnTrace, *,
                         plan: QuestionPlan | None = None) -> TurnResult:
        if plan is None:
            plan = self.selector.plan(question)
        record.start_question(question, plan.to_dict())
        trace.plan(plan, full=True)
        # constraints stated up front ("... and I can't remove the engine") apply from the first answer
        self._add_constraints(record, extract_constraints(question), trace)
        return self._select(record, trace, plan=plan)

    def _scope_verdict(self, text: str, trace: TurnTrace, *,
                       meanwhile: Callable[[], object] | None = None) -> ScopeVerdict | None:
        """Return the scope gate's verdict on a message that would start a question (None without a gate).

        ``meanwhile``: called when the gate is about to encode the message (``ScopeGate.check``).
        """
        if self.scope is None:
            return None
        verdict = self.scope.check(text, meanwhile=meanwhile)
        if verdict.in_scope:
            trace.note("in scope: " + describe_signals(verdict.signals))
        return verdict

    def _refuse(self, record: SessionRecord, question: str, verdict: ScopeVerdict, trace: TurnTrace) -> TurnResult:
        """Return the reply to a new question the scope gate refused (state unchanged, nothing retrieved).

        A vague opening in the domain ("my car", "brakes") is no refusal: the bot asks for the detail and joins the
        customer's next message to it.
        """
        if verdict.reason == VAGUE:
            record.held_text, record.held_vague = question, True
            trace.decide(ASK_DETAIL, state_after=record.state, reason=verdict.reason, signals=verdict.signals)
            return TurnResult(session_id=record.id, reply=self.replies.vague_opening, kind=ASK_DETAIL,
                              state=record.state)
        reply = self.replies.out_of_scope_text(verdict.reason or "domain", language=verdict.language)
        # only an off-domain question is worth keeping: greetings, gibberish and other languages add no words
        record.held_text = question if verdict.reason == "domain" else ""
        trace.decide(OUT_OF_SCOPE, state_after=record.state, reason=verdict.reason, signals=verdict.signals)
        return TurnResult(session_id=record.id, reply=reply, kind=OUT_OF_SCOPE, state=record.state)

    def _next_step(self, record: SessionRecord, text: str, trace: TurnTrace) -> TurnResult:
        record.followups.append(text)
        record.step += 1
        record.step_followups = [text]
        # C_i replies to the answer on screen: it (and only it) lends the next step its referents
        record.context_id = record.delivered[-1] if record.delivered else None
        return self._select(record, trace)

    def _settle_choice(self, record: SessionRecord, pending: PendingChoice, text: str, intent: intents.Intent,
                       option: ClarifyOption | None, trace: TurnTrace) -> TurnResult:
        """Deliver (or skip past) the picked ``option``; with none, take the reply as detail, a clarification,
        or list the options again."""
        if option is None and pending.reprompts >= MAX_REPROMPTS:
            # the user keeps not choosing: drop the options, keep any words as detail, never list them again
            trace.note("no option matched again; reading the reply as none of these")
            return self._none_fits(record, pending, text if intent.has_content else None, trace)
        if option is None and intent.has_content and intent.kind != intents.CHOICE:
            clarified = self._clarify_pending(record, pending, text, trace)
            if clarified is not None:
                return clarified
        if option is None:
            pending.reprompts += 1
            record.pending = pending.to_dict()
            trace.note("reply matched no option")
            return self._reply(record, trace, CLARIFY, self.replies.options_text(pending.options, again=True),
                               state=AWAITING_CHOICE, options=pending.options)
        record.pending = None
        if not option.answer_id:  # "none of these"
            return self._none_fits(record, pending, None, trace)
        doc = self.selector.document(option.answer_id)
        if doc is None:
            trace.note(f"chosen answer {option.answer_id} is no longer in the index")
            return self._select(record, trace)
        record.skipped.extend(o.answer_id for o in pending.options if o.answer_id and o.answer_id != option.answer_id)
        trace.note(f"user chose option {option.number}: {option.label}")
        return self._deliver(record, trace, doc.id, doc.text)

    def _clarify_pending(self, record: SessionRecord, pending: PendingChoice, text: str,
                         trace: TurnTrace) -> TurnResult | None:
        """Return the delivered answer when a descriptive reply makes one offered answer clearly best, else None.

        A reply that names no option but describes the problem ("it did at first but not anymore",
        "the fan never comes on") is the user clarifying: the step is re-ranked with it as detail
        (a new ranking: the reply's words change the query), and the offered answer on top is
        delivered when no other offered one still competes (``_competes``). The reply must share a
        term, beyond the question's own, with that answer: words that touch no option ("purple
        elephants") only re-list the options.
        """
        offered = [o.answer_id for o in pending.options if o.answer_id]
        reply_terms = self.selector.terms_of_text(text) - frozenset(pending.ignore_terms)
        if not offered or not reply_terms:
            return None
        followups = record.step_followups + [text]
        outcome = self._rank(record, self._plan(record), followups)
        ranked = [c for c in outcome.candidates if c.document.id in offered]
        if not ranked or not reply_terms & frozenset(pending.terms.get(ranked[0].document.id, ())):
            return None
        if any(competes(c, ranked[0], self.config) for c in ranked[1:]):
            return None
        trace.step(outcome, step=record.step)
        trace.note(f"reply read as a clarification of the problem; it points to {ranked[0].document.id}")
        record.pending = None
        record.step_followups = followups
        record.followups.append(text)
        record.skipped.extend(a for a in offered if a != ranked[0].document.id)
        return self._deliver_if_sure(record, trace, ranked[0], outcome)

    # --- clarification people can use (issue 13, item 6) ---------------------
    def _on_none_fits(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        # "none of these" with an answer on screen: that answer is the one option that did not fit
        shown = record.delivered[-1:]
        options = [ClarifyOption(number=1, label="", answer_id=a) for a in shown]
        pending = PendingChoice(options=[*options, ClarifyOption(number=len(options) + 1, label="", answer_id="")])
        return self._none_fits(record, pending, text if intent.has_content else None, trace)

    def _none_fits(self, record: SessionRecord, pending: PendingChoice, detail: str | None,
                   trace: TurnTrace) -> TurnResult:
        """None of the offered answers fits: offer the other candidates that are as strong and on topic, else
        ask for the one missing detail. It counts as a failed step, so the hand-off ends any loop.

        The step is ranked with the offered answers still in it: they are the yardstick an alternative must
        reach (``_strong_others``), so an answer that merely shares a word ("starting fluid" for a leak) is
        never the consolation prize. ``detail`` (the reply's own words, if any) joins the step's replies.
        """
        offered = [o.answer_id for o in pending.options if o.answer_id]
        record.pending = None
        record.failures += 1
        if record.failures >= self.config.max_failures:
            record.skipped.extend(offered)
            return self._hand_off(record, trace, HandoffReason.NONE_FIT)
        if detail:
            record.step_followups = record.step_followups + [detail]
            record.followups.append(detail)
        first = pending.yardstick or offered
        # the first options stay in the ranking (same scale as when they were offered) as the bar to reach
        outcome = self._rank(record, self._plan(record), record.step_followups, keep=first)
        trace.step(outcome, step=record.step)
        record.skipped.extend(offered)
        others = strong_others(outcome.candidates, [*first, *offered], first, self.config)
        trace.note(f"none of the offered answers fits; {len(others)} other candidate(s) as strong and on topic")
        if others:
            return self._offer_others(record, trace, others, first, outcome=outcome)
        record.state = AWAITING_DETAIL
        record.pending = PendingChoice(options=[], asked_detail=True, yardstick=list(first),
                                       ignore_terms=sorted(self._said_terms(record))).to_dict()
        trace.decide(FALLBACK, state_after=AWAITING_DETAIL, missing="detail after none of the options fitted")
        return TurnResult(session_id=record.id, reply=self.replies.none_fit_detail, kind=FALLBACK,
                          state=AWAITING_DETAIL)

    def _offer_others(self, record: SessionRecord, trace: TurnTrace, others: list[Any],
                      first: Sequence[str], *, outcome: RankOutcome) -> TurnResult:
        """Deliver the one alternative, or offer several, keeping ``first`` as the bar for the next round.

        A lone alternative is an answer the bot gives: it passes the confidence rule against its step's ``outcome``.
        """
        if len(others) == 1:
            return self._deliver_if_sure(record, trace, others[0], outcome)
        result = self._offer(record, trace, [c.document for c in others[: self.config.max_options]],
                             head=self.replies.none_fit_others)
        record.pending = {**(record.pending or {}), "yardstick": list(first)}
        return result

    def _detail_after_none(self, record: SessionRecord, text: str, trace: TurnTrace) -> TurnResult:
        """Rank the step again with the detail asked for after "none of these"; hand off when it finds nothing.

        An answer found with the detail must clear the same bar as before (``_strong_others`` against the
        answers that did not fit, ranked with the detail) and share a term with the detail beyond what was
        already said. Words no answer contains ("purple elephants") end in the hand-off, not in a guess.
        """
        pending = _pending(record)
        record.pending = None
        record.step_followups = record.step_followups + [text]
        record.followups.append(text)
        new_terms = self.selector.terms_of_text(text) - frozenset(pending.ignore_terms)
        outcome = self._rank(record, self._plan(record), record.step_followups, keep=pending.yardstick)
        trace.step(outcome, step=record.step)
        others = [c for c in strong_others(outcome.candidates, pending.yardstick, pending.yardstick, self.config)
                  if new_terms & self.selector.terms_of_edus(self.selector.answer_edus(c.document))]
        if not others:
            trace.note("the detail asked for after none of these leads to no answer as strong and on topic")
            record.failures += 1
            return self._hand_off(record, trace, HandoffReason.NO_DETAIL)
        trace.note(f"the detail points to {len(others)} answer(s) as strong and on topic")
        return self._offer_others(record, trace, others, pending.yardstick, outcome=outcome)

    def _constrain_choice(self, record: SessionRecord, pending: PendingChoice, text: str,
                          found: list[Constraint], trace: TurnTrace) -> TurnResult:
        """Record the constraints, drop the offered answers that violate them, and re-offer or deliver the rest.

        The offered answers were ranked best first and a constraint only lowers violators, so the
        survivors keep their order. One survivor is delivered; none means the next candidates.
        """
        self._add_constraints(record, found, trace)
        active = [Constraint.from_dict(c) for c in record.constraints]
        survivors: list[AnswerDocument] = []
        for option in pending.options:
            doc = self.selector.document(option.answer_id) if option.answer_id else None
            if doc is None:
                continue
            if self.selector.violates(doc, active):
                record.skipped.append(doc.id)
                trace.note(f"option {option.number} needs something you ruled out: {option.label}")
            else:
                survivors.append(doc)
        record.pending = None
        said = text if len(text) <= 80 else text[:77].rstrip() + "..."
        if not survivors:
            trace.note("every offered answer violates a constraint; trying the next candidates")
            return self._select(record, trace)
        if len(survivors) == 1:
            trace.note(f"only one offered answer fits the constraint: {survivors[0].id}")
            return self._deliver(record, trace, survivors[0].id, survivors[0].text)
        trace.note("constraint recorded; offering the remaining options again")
        return self._offer(record, trace, survivors, head=self.replies.constraint_noted_text(said))

    def _retry(self, record: SessionRecord, extra: str | None, trace: TurnTrace, *, reason: str,
               rejected: bool = True) -> TurnResult:
        """Offer the next answer for the same part; ``rejected``: the customer turned the answer on screen down."""
        if rejected:
            record.rejections += 1
            if record.rejections >= self.config.max_rejections:
                return self._hand_off(record, trace, HandoffReason.REJECTED)
        if extra:
            record.step_followups = record.step_followups + [extra]
            record.followups.append(extra)
        trace.note(f"next candidate for the same step: {reason}")
        return self._select(record, trace, after_rejection=rejected)

    def _select(self, record: SessionRecord, trace: TurnTrace, *, plan: QuestionPlan | None = None,
                allow_clarify: bool = True, after_rejection: bool = False) -> TurnResult:
        """Rank the current step and answer, clarify, abstain or fall back.

        The step's context is the answer its follow-up replied to (``record.context_ids``), never the
        answer just rejected: a retry ranks the same part again with the shown answers excluded, and keeps
        only answers that repeat none shown. When none is left, or none the confidence rule accepts, the next
        part of the question is tried before asking for a detail.
        """
        if plan is None:
            plan = self._plan(record)
            trace.plan(plan, full=True)
        outcome = self._rank(record, plan, record.step_followups)
        trace.step(outcome, step=record.step)
        ranked = self._fresh(record, outcome.candidates)
        close = close_alternatives(ranked, self.config)
        if allow_clarify and len(close) >= 2:
            return self._offer(record, trace, [c.document for c in close[: self.config.max_options]])
        followup_step = outcome.followup_tree is not None
        confidence = self.rule.confidence(ranked[0], ranked, followup_step=followup_step) if ranked else None
        if ranked and self.rule.sure(confidence):
            return self._deliver(record, trace, ranked[0].document.id, ranked[0].document.text, confidence=confidence)
        following = next_part(outcome.part_index, len(plan.parts)) if after_rejection else None
        if following is not None and record.step == outcome.part_index:
            trace.note(f"part {outcome.part_index + 1} of the question has no answer left; on to part {following + 1}")
            record.step, record.step_followups = following, []
            return self._select(record, trace, plan=plan, allow_clarify=allow_clarify, after_rejection=True)
        if not ranked:
            return self._fallback(record, outcome, trace)
        return self._abstain(record, outcome, trace, confidence)

    def _fresh(self, record: SessionRecord, ranked: Sequence[Any]) -> list[Any]:
        """Return the candidates that repeat no answer already shown."""
        if not record.delivered:
            return list(ranked)
        shown = [self.selector.answer_terms(doc) for doc in map(self.selector.document, record.delivered)
                 if doc is not None]
        # the answer, its runner-up (the confidence's margin) and the options are all a turn reads
        return fresh_candidates(ranked, shown, self._candidate_terms, limit=self.config.max_options + 2)

    def _candidate_terms(self, cand: Any) -> frozenset[str]:
        return cand.analysis.terms if cand.analysis is not None else self.selector.answer_terms(cand.document)

    def _plan(self, record: SessionRecord) -> QuestionPlan:
        return QuestionPlan.from_dict(record.plan) if record.plan else self.selector.plan(record.question)

    def _rank(self, record: SessionRecord, plan: QuestionPlan, followups: list[str],
              keep: Sequence[str] = ()) -> RankOutcome:
        """Return the ranking of the session's current step with ``followups`` as the step's replies.

        ``keep``: answers ranked even though they were skipped (a yardstick, not a candidate to deliver).
        """
        outcome = self.selector.rank_outcome(
            question=plan, step=record.step, followups=followups,
            exclude_ids=[i for i in record.excluded_ids if i not in keep],
            constraints=[Constraint.from_dict(c) for c in record.constraints],
            size=self.config.candidates, context_ids=record.context_ids, **self._tried_kwargs(record))
        self._remember_tried(record, outcome)
        return outcome

    # already tried (issue 13): the session remembers what the customer reported done, turn after turn
    @staticmethod
    def _tried_kwargs(record: SessionRecord) -> dict[str, Any]:
        """Return ``{"tried": [...]}`` from the session's memory ({} when empty, for selectors without it)."""
        remembered = tried_from_dicts(record.tried)
        return {"tried": remembered} if remembered else {}

    def _remember_rejected(self, record: SessionRecord, text: str, trace: TurnTrace) -> None:
        """On "already tried that", remember the rejected answer's recommendation, so no other answer repeats it."""
        doc = self.selector.document(record.delivered[-1]) if record.delivered else None
        action = tried_from_reply(text, self.selector.answer_edus(doc), self.selector) if doc is not None else None
        if action is not None:
            record.tried = [a.to_dict() for a in merge_tried(tried_from_dicts(record.tried), [action])]
            trace.note(f"remembered as already tried: {action.text}")

    @staticmethod
    def _remember_tried(record: SessionRecord, outcome: RankOutcome) -> None:
        """Keep what this step's question and reply reported done (the selector read it from their DTs)."""
        record.tried = [a.to_dict() for a in merge_tried(tried_from_dicts(record.tried), outcome.tried)]

    def _offer(self, record: SessionRecord, trace: TurnTrace, docs: list[AnswerDocument], *,
               head: str = "") -> TurnResult:
        """Return a clarification over ``docs`` (best first); ``head`` is said before the options."""
        pending = build_options([(d.id, self.selector.answer_edus(d), self.selector.answer_tree(d)) for d in docs],
                                normalizer=self.selector, max_options=self.config.max_options,
                                ignore_terms=self._said_terms(record))
        record.pending = pending.to_dict()
        record.state = AWAITING_CHOICE
        trace.decide(CLARIFY, state_after=AWAITING_CHOICE, options=[o.to_dict() for o in pending.options])
        return TurnResult(session_id=record.id, reply=head + self.replies.options_text(pending.options), kind=CLARIFY,
                          options=pending.options, state=AWAITING_CHOICE)

    def _said_terms(self, record: SessionRecord) -> frozenset[str]:
        """Return the terms of the question and the step's replies (they cannot pick one option over another)."""
        return self.selector.terms_of_text(" ".join([record.question, *record.step_followups]))

    def _deliver_if_sure(self, record: SessionRecord, trace: TurnTrace, chosen: Any,
                         outcome: RankOutcome) -> TurnResult:
        """Deliver ``chosen`` when the confidence rule accepts it against its ranking, else ask for a detail."""
        confidence = self.rule.confidence(chosen, outcome.candidates, followup_step=outcome.followup_tree is not None)
        if self.rule.sure(confidence):
            return self._deliver(record, trace, chosen.document.id, chosen.document.text, confidence=confidence)
        return self._abstain(record, outcome, trace, confidence)

    def _deliver(self, record: SessionRecord, trace: TurnTrace, answer_id: str, text: str, *,
                 confidence: float | None = None) -> TurnResult:
        record.delivered.append(answer_id)
        record.pending = None  # an answer on screen: no options, and no detail request, are pending any more
        record.state = AWAITING_FEEDBACK
        trace.decide(ANSWER, state_after=AWAITING_FEEDBACK, answer_id=answer_id,
                     **({"confidence": confidence} if confidence is not None else {}))
        return TurnResult(session_id=record.id, reply=text, kind=ANSWER, state=AWAITING_FEEDBACK, answer_id=answer_id,
                          confidence=confidence)

    def _fallback(self, record: SessionRecord, outcome: RankOutcome, trace: TurnTrace) -> TurnResult:
        record.failures += 1
        if record.failures >= self.config.max_failures:
            return self._hand_off(record, trace, HandoffReason.NO_ANSWER)
        missing = _missing_text(outcome)
        reply = self.replies.fallback_text(missing, found_on_topic=bool(outcome.rejected))
        record.state = AWAITING_DETAIL
        trace.decide(FALLBACK, state_after=AWAITING_DETAIL, missing=missing)
        return TurnResult(session_id=record.id, reply=reply, kind=FALLBACK, state=AWAITING_DETAIL)

    def _hand_off(self, record: SessionRecord, trace: TurnTrace, why: HandoffReason) -> TurnResult:
        record.state = HANDED_OFF
        record.pending = None
        transcript = [{"role": m["role"], "text": m["text"]} for m in record.transcript]
        reason = why.text(self.replies, rejected=record.rejections)
        trace.decide(HANDOFF, state_after=HANDED_OFF, reason=reason, reason_kind=why.value, transcript=transcript,
                     answers_shown=len(record.delivered), answers_rejected=record.rejections)
        reply = self.replies.handoff_text(reason, len(transcript))
        return TurnResult(session_id=record.id, reply=reply, kind=HANDOFF, state=HANDED_OFF)

    def _idle_prompt(self, record: SessionRecord) -> str:
        """Return the greeting before the session's first question, and an invitation to go on after it."""
        return self.replies.greeting if record.state == NEW and not record.question else self.replies.anything_else

    # --- calibrated confidence: abstention instead of a wrong answer ---
    def _abstain(self, record: SessionRecord, outcome: RankOutcome, trace: TurnTrace, confidence: float) -> TurnResult:
        """Ask for the missing detail instead of an answer the engine is unsure of; the second time, hand off.

        Counts as a failed step like a fallback, so a step that stays unsure ends with the hand-off (and its
        transcript) after ``max_failures``.
        """
        record.failures += 1
        trace.note(f"confidence {confidence:.2f} is below {self.config.abstain_below:.2f}: not answering")
        if record.failures >= self.config.max_failures:
            return self._hand_off(record, trace, HandoffReason.UNSURE)
        detail = detail_to_ask(outcome, self.selector, tried_known=bool(record.tried))
        record.state = AWAITING_DETAIL
        trace.decide(ABSTAIN, state_after=AWAITING_DETAIL, confidence=confidence, missing_detail=detail,
                     best_id=outcome.candidates[0].document.id)
        return TurnResult(session_id=record.id, reply=self.replies.abstain_text(detail), kind=ABSTAIN,
                          state=AWAITING_DETAIL, confidence=confidence)

    def _bad_input(self, record: SessionRecord, problem: str, trace: TurnTrace) -> TurnResult:
        trace.intent(problem)
        options = _pending(record).options if record.state == AWAITING_CHOICE and record.pending else []
        if problem == intents.TOO_LONG:
            message = self.replies.too_long_text(self.config.max_input_chars)
        elif record.state == AWAITING_CHOICE:
            message = self.replies.options_text(_pending(record).options, again=True)
        else:
            message = (self.replies.handed_off_wait if record.state == HANDED_OFF else self._idle_prompt(record)
                       if record.state in _IDLE_STATES else self.replies.did_it_help)
        return self._reply(record, trace, PROMPT, message, state=record.state, options=options)

    # --- helpers --------------------------------------------------------------
    def _reply(self, record: SessionRecord, trace: TurnTrace, kind: str, text: str, *, state: str,
               options: list[ClarifyOption] | None = None) -> TurnResult:
        record.state = state
        trace.decide(kind, state_after=state)
        return TurnResult(session_id=record.id, reply=text, kind=kind, options=list(options or []), state=state)

    def _add_constraints(self, record: SessionRecord, found: list[Constraint], trace: TurnTrace) -> None:
        known = {tuple(c.get("words", ())) for c in record.constraints}
        for c in found:
            if c.words not in known:
                record.constraints.append(c.to_dict())
                known.add(c.words)
                trace.note(f"constraint added: {c.kind} {' '.join(c.words)}")

    def _last_violates(self, record: SessionRecord) -> bool:
        """Return True when the answer on screen needs something a recorded constraint rules out."""
        if not record.delivered or not record.constraints:
            return False
        doc = self.selector.document(record.delivered[-1])
        if doc is None:
            return False
        return self.selector.violates(doc, [Constraint.from_dict(c) for c in record.constraints])

    @contextmanager
    def session_lock(self, session_id: str) -> Iterator[None]:
        """Hold ``session_id``'s lock: turns of one session run one after another (their load, reply and save
        never interleave), turns of different sessions side by side. Re-entrant, so a caller may hold it around
        ``handle`` (the API checks the session's expiry and handles the turn as one step). It holds across
        processes too (``SessionStore.turn_lock``: the workers of ``dtdialog serve --workers N``, ``dtdialog chat``)."""
        with self._locks_guard:
            lock = self._locks.get(session_id)
            if lock is None:
                lock = _SessionLock()
                self._locks[session_id] = lock
        with lock.rlock:  # the local reference keeps the lock in the weak dictionary while held or awaited
            if lock.depth:  # held by this thread already, and so across processes too
                lock.depth += 1
                try:
                    yield
                finally:
                    lock.depth -= 1
                return
            # then across processes (server workers, `dtdialog chat`): taken only by the outermost hold, as
            # every acquisition of the file lock is a descriptor of its own (a nested one would wait for itself)
            across = getattr(self.store, "turn_lock", None)
            with across(session_id) if across is not None else nullcontext():
                lock.depth = 1
                try:
                    yield
                finally:
                    lock.depth = 0


class _SessionLock:
    """One session's lock within the process, and how deep its holder holds it."""

    __slots__ = ("rlock", "depth", "__weakref__")

    def __init__(self) -> None:
        self.rlock = threading.RLock()
        self.depth = 0


def _pending(record: SessionRecord) -> PendingChoice:
    """Return the options on offer (none when the record holds no pending choice)."""
    return PendingChoice.from_dict(record.pending or {})


def _after_reset(text: str) -> str:
    """Return what follows a reset phrase ("new question: my brakes squeal" -> "my brakes squeal") if it has content."""
    match = intents.RESET_PHRASE.search(text.lower())
    rest = text[match.end():] if match else ""
    rest = rest.lstrip(" :,-.!?")
    return rest if len(intents.content_words(rest)) >= 2 else ""


def _missing_text(outcome: RankOutcome) -> str:
    """Return the user's own words for what no answer addressed (never relation labels)."""
    if outcome.followup_tree is not None and outcome.part_index < len(outcome.plan.parts) - 1:
        source = outcome.plan.parts[outcome.part_index].text
    elif outcome.followup_tree is not None:
        source = outcome.followup_tree.text
    else:
        source = outcome.plan.parts[outcome.part_index].text
    words = source.split()
    return '"' + " ".join(words[:18]) + ("..." if len(words) > 18 else "") + '"'
