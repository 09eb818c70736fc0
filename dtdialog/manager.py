"""The dialogue manager: one user turn in, one bot turn out, the session saved after every turn.

``DialogueManager`` holds no per-session state in memory: it loads the ``SessionRecord``,
applies the state machine (``dtdialog.session``), asks the ``AnswerSelector`` for candidates,
and saves the record. A lock per session id serialises turns of one session; turns of
different sessions run in parallel.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

from dtdialog import intents
from dtdialog.clarification import ClarifyOption, PendingChoice, build_options, match_reply, prompt_text
from dtdialog.constraints import Constraint, extract_constraints
from dtdialog.engine_config import EngineConfig
from dtdialog.selector import AnswerSelector, RankOutcome
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
from index.base import AnswerDocument
from parsers.errors import InputError

ANSWER = "answer"
CLARIFY = "clarify"
FALLBACK = "fallback"
HANDOFF = "handoff"
CONCLUDED_KIND = "concluded"
PROMPT = "prompt"
RESET = "reset"

#: After this many replies that match no option, a descriptive reply is taken as detail instead.
MAX_REPROMPTS = 2

GREETING = "Hi! Describe your car problem - what happens, and what you have already checked or replaced."
FEEDBACK_PROMPT = ("Tell me what happened when you tried that, or say 'didn't help' for another suggestion, "
                   "or 'thanks' if it is fixed.")
DETAIL_PROMPT = ("Could you add a detail in a few words - the exact symptom, when it happens, or what you "
                 "already tried? Or say 'human' to talk to a person.")


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

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "reply": self.reply, "kind": self.kind,
                "options": [o.to_dict() for o in self.options], "state": self.state,
                "answer_id": self.answer_id, "trace": self.trace}


class DialogueManager:
    """Runs sessions over an ``AnswerSelector`` and a ``SessionStore``; thread-safe across sessions."""

    def __init__(self, *, selector: AnswerSelector, store: SessionStore, config: EngineConfig | None = None) -> None:
        self.selector = selector
        self.store = store
        self.config = config or selector.config
        self._locks: weakref.WeakValueDictionary[str, threading.Lock] = weakref.WeakValueDictionary()
        self._locks_guard = threading.Lock()

    # --- public API -----------------------------------------------------------
    def start_session(self) -> str:
        """Create and store a new session; return its id (uuid4 hex)."""
        record = SessionRecord(id=new_session_id())
        self.store.save(record)
        return record.id

    def session(self, session_id: str, *, traces: bool = True) -> Any:
        """Return the stored ``SessionRecord``; raises ``SessionNotFoundError`` for an unknown id.

        ``traces=False`` skips reading the stored turn traces (``record.traces`` is then empty).
        """
        return self.store.load(session_id, traces=traces)

    def handle(self, *, session_id: str, text: str) -> TurnResult:
        """Process one user turn of ``session_id`` and return the reply; the session is saved before returning.

        Raises ``SessionNotFoundError`` for an unknown id. Bad text (empty, too long, control
        characters) never raises: it gets a ``prompt`` reply.
        """
        lock = self._lock_for(session_id)
        with lock:
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
                    result = self._reply(record, trace, PROMPT, f"Sorry, I could not read that: {exc}. "
                                         "Please describe the problem in a sentence or two.", state=record.state)
            record.add_message("bot", result.reply, kind=result.kind,
                               **({"answer_id": result.answer_id} if result.answer_id else {}))
            result.trace = trace.to_dict()
            record.traces.append(result.trace)
            self.store.save(record, keep_traces=self.config.max_traces)
            return result

    # --- state machine --------------------------------------------------------
    def _dispatch(self, record: SessionRecord, text: str, trace: TurnTrace) -> TurnResult:
        intent = intents.classify(text)
        trace.intent(intent.kind, **({"constraints": [c.to_dict() for c in intent.constraints]}
                                     if intent.constraints else {}))
        if intent.kind == intents.HANDOFF:
            return self._handoff(record, trace, "you asked for a person")
        if intent.kind == intents.RESET:
            rest = _after_reset(text)
            if rest:
                trace.note("reset with a new question in the same message")
                return self._start(record, rest, trace)
            record.state = NEW
            record.pending = None
            return self._reply(record, trace, RESET, "Sure. What is the new question?", state=NEW)
        if record.state in (NEW, CONCLUDED, HANDED_OFF):
            if intent.kind in (intents.CONCLUDE, intents.REJECT, intents.NONE_OF_THESE, intents.CHOICE) \
                    and not intent.has_content:
                return self._reply(record, trace, PROMPT, GREETING, state=record.state)
            return self._start(record, text, trace)
        if record.state == AWAITING_CHOICE:
            return self._on_choice(record, text, intent, trace)
        # AWAITING_FEEDBACK or AWAITING_DETAIL
        if intent.kind == intents.CONCLUDE:
            record.state = CONCLUDED
            return self._reply(record, trace, CONCLUDED_KIND,
                               "Glad that sorted it out! If anything else comes up, just describe it here.",
                               state=CONCLUDED)
        if intent.kind == intents.CHOICE or (intent.kind == intents.FOLLOWUP and not intent.has_content):
            # "2" with no options on offer, or "hmm": nothing a search could use - ask instead of guessing
            trace.note("reply has no content to search with and no options are pending")
            return self._reply(record, trace, PROMPT, FEEDBACK_PROMPT if record.state == AWAITING_FEEDBACK
                               else DETAIL_PROMPT, state=record.state)
        self._add_constraints(record, intent.constraints, trace)
        if intent.kind in (intents.REJECT, intents.NONE_OF_THESE):
            return self._retry(record, text if intent.has_content else None, trace, reason="the answer did not help")
        if intent.kind == intents.CONSTRAINT:
            if record.state == AWAITING_FEEDBACK and self._last_violates(record):
                return self._retry(record, text if intent.has_content else None, trace, reason="the answer needs "
                                   "something you ruled out", count_failure=False)
            if not intent.has_content and record.state == AWAITING_FEEDBACK:
                return self._retry(record, None, trace, reason="new constraint", count_failure=False)
        if record.state == AWAITING_DETAIL:
            # the user adds detail to the step we could not answer: same step, more words
            record.step_followups = record.step_followups + [text]
            record.followups.append(text)
            return self._select(record, trace)
        record.followups.append(text)
        record.step += 1
        record.step_followups = [text]
        # C_i replies to the answer on screen: it (and only it) lends the next step its referents
        record.context_id = record.delivered[-1] if record.delivered else None
        return self._select(record, trace)

    def _start(self, record: SessionRecord, question: str, trace: TurnTrace) -> TurnResult:
        plan = self.selector.plan(question)
        record.start_question(question, plan.to_dict())
        trace.plan(plan, full=True)
        # constraints stated up front ("... and I can't remove the engine") apply from the first answer
        self._add_constraints(record, extract_constraints(question), trace)
        return self._select(record, trace, plan=plan)

    def _on_choice(self, record: SessionRecord, text: str, intent: intents.Intent, trace: TurnTrace) -> TurnResult:
        pending = PendingChoice.from_dict(record.pending or {})
        if intent.kind == intents.CONCLUDE:
            record.state = CONCLUDED
            record.pending = None
            return self._reply(record, trace, CONCLUDED_KIND, "Glad to help! Come back any time.", state=CONCLUDED)
        option = match_reply(text, pending, normalizer=self.selector.normalizer,
                             number=intent.number if intent.kind == intents.CHOICE else None)
        if intent.kind == intents.NONE_OF_THESE:
            option = pending.options[-1] if pending.options else None
        elif intent.constraints and intent.kind != intents.CHOICE:
            # "I can't remove the engine" states a limit, it does not pick the option that mentions the engine
            return self._constrain_choice(record, pending, text, intent.constraints, trace)
        if option is None and pending.reprompts >= MAX_REPROMPTS and intent.has_content:
            # the user keeps describing instead of choosing: take it as detail for this step
            record.pending = None
            record.skipped.extend(o.answer_id for o in pending.options if o.answer_id)
            record.step_followups = record.step_followups + [text]
            record.followups.append(text)
            trace.note("no option matched again; using the reply as detail for the same step")
            return self._select(record, trace, allow_clarify=False)
        if option is None and intent.has_content and intent.kind != intents.CHOICE:
            clarified = self._clarify_pending(record, pending, text, trace)
            if clarified is not None:
                return clarified
        if option is None:
            pending.reprompts += 1
            record.pending = pending.to_dict()
            trace.note("reply matched no option")
            return self._reply(record, trace, CLARIFY, prompt_text(pending, again=True), state=AWAITING_CHOICE,
                               options=pending.options)
        record.pending = None
        if not option.answer_id:  # "none of these"
            record.skipped.extend(o.answer_id for o in pending.options if o.answer_id)
            trace.note("none of the offered answers fits; trying the next candidates")
            return self._select(record, trace, allow_clarify=False)
        doc = self.selector.index.get(option.answer_id)
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
        "the fan never comes on") is the user clarifying: the step is re-ranked with it as detail,
        and the offered answer on top is delivered when no other offered one still competes
        (``_competes``). The reply must share a term, beyond the question's own, with that answer:
        words that touch no option ("purple elephants") only re-list the options.
        """
        offered = [o.answer_id for o in pending.options if o.answer_id]
        normalizer = self.selector.normalizer
        reply_terms = normalizer.terms_of_text(text) - frozenset(pending.ignore_terms)
        if not offered or not reply_terms:
            return None
        plan = QuestionPlan.from_dict(record.plan) if record.plan else self.selector.plan(record.question)
        followups = record.step_followups + [text]
        outcome = self.selector.rank_outcome(
            question=plan, step=record.step, followups=followups, exclude_ids=record.excluded_ids,
            constraints=[Constraint.from_dict(c) for c in record.constraints], size=self.config.candidates,
            context_ids=record.context_ids)
        ranked = [c for c in outcome.candidates if c.document.id in offered]
        if not ranked or not reply_terms & frozenset(pending.terms.get(ranked[0].document.id, ())):
            return None
        if any(_competes(c, ranked[0], self.config) for c in ranked[1:]):
            return None
        trace.step(outcome, step=record.step)
        trace.note(f"reply read as a clarification of the problem; it points to {ranked[0].document.id}")
        record.pending = None
        record.step_followups = followups
        record.followups.append(text)
        record.skipped.extend(a for a in offered if a != ranked[0].document.id)
        return self._deliver(record, trace, ranked[0].document.id, ranked[0].document.text)

    def _constrain_choice(self, record: SessionRecord, pending: PendingChoice, text: str,
                          found: list[Constraint], trace: TurnTrace) -> TurnResult:
        """Record the constraints, drop the offered answers that violate them, and re-offer or deliver the rest.

        The offered answers were ranked best first and a constraint only lowers violators, so the
        survivors keep their order. One survivor is delivered; none means the next candidates.
        """
        self._add_constraints(record, found, trace)
        active = [Constraint.from_dict(c) for c in record.constraints]
        normalizer = self.selector.normalizer
        survivors: list[AnswerDocument] = []
        for option in pending.options:
            doc = self.selector.index.get(option.answer_id) if option.answer_id else None
            if doc is None:
                continue
            terms = normalizer.terms_of_text(doc.text)
            if any(c.violated_by(terms, normalizer) for c in active):
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
        return self._offer(record, trace, survivors, head=f'Noted: "{said}". ')

    def _retry(self, record: SessionRecord, extra: str | None, trace: TurnTrace, *, reason: str,
               count_failure: bool = True) -> TurnResult:
        if count_failure:
            record.failures += 1
            if record.failures >= self.config.max_failures:
                return self._handoff(record, trace, f"{record.failures} answers did not help")
        if extra:
            record.step_followups = record.step_followups + [extra]
            record.followups.append(extra)
        trace.note(f"next candidate for the same step: {reason}")
        return self._select(record, trace)

    def _select(self, record: SessionRecord, trace: TurnTrace, *, plan: QuestionPlan | None = None,
                allow_clarify: bool = True) -> TurnResult:
        """Rank the current step and answer, clarify or fall back.

        The step's context is the answer its follow-up replied to (``record.context_ids``), never the
        answer just rejected: a retry searches the same part again with the rejected answers excluded.
        """
        if plan is None:
            plan = QuestionPlan.from_dict(record.plan) if record.plan else self.selector.plan(record.question)
            trace.plan(plan, full=True)
        outcome = self.selector.rank_outcome(
            question=plan, step=record.step, followups=record.step_followups, exclude_ids=record.excluded_ids,
            constraints=[Constraint.from_dict(c) for c in record.constraints],
            size=self.config.candidates, context_ids=record.context_ids)
        trace.step(outcome, step=record.step)
        ranked = outcome.candidates
        if not ranked:
            return self._fallback(record, outcome, trace)
        close = [ranked[0]] + [c for c in ranked[1:] if _competes(c, ranked[0], self.config)]
        if allow_clarify and len(close) >= 2:
            return self._offer(record, trace, [c.document for c in close[: self.config.max_options]])
        best = ranked[0]
        return self._deliver(record, trace, best.document.id, best.document.text)

    def _offer(self, record: SessionRecord, trace: TurnTrace, docs: list[AnswerDocument], *,
               head: str = "") -> TurnResult:
        """Return a clarification over ``docs`` (best first); ``head`` is said before the options."""
        pending = build_options([(d.id, self.selector.answer_edus(d)) for d in docs],
                                normalizer=self.selector.normalizer, max_options=self.config.max_options,
                                ignore_terms=self._said_terms(record))
        record.pending = pending.to_dict()
        record.state = AWAITING_CHOICE
        trace.decide(CLARIFY, state_after=AWAITING_CHOICE, options=[o.to_dict() for o in pending.options])
        return TurnResult(session_id=record.id, reply=head + prompt_text(pending), kind=CLARIFY,
                          options=pending.options, state=AWAITING_CHOICE)

    def _said_terms(self, record: SessionRecord) -> frozenset[str]:
        """Return the terms of the question and the step's replies (they cannot pick one option over another)."""
        normalizer = self.selector.normalizer
        return normalizer.terms_of_text(" ".join([record.question, *record.step_followups]))

    def _deliver(self, record: SessionRecord, trace: TurnTrace, answer_id: str, text: str) -> TurnResult:
        record.delivered.append(answer_id)
        record.state = AWAITING_FEEDBACK
        trace.decide(ANSWER, state_after=AWAITING_FEEDBACK, answer_id=answer_id)
        return TurnResult(session_id=record.id, reply=text, kind=ANSWER, state=AWAITING_FEEDBACK, answer_id=answer_id)

    def _fallback(self, record: SessionRecord, outcome: RankOutcome, trace: TurnTrace) -> TurnResult:
        record.failures += 1
        if record.failures >= self.config.max_failures:
            return self._handoff(record, trace, "no stored answer addresses the question")
        missing = _missing_text(outcome)
        if outcome.rejected:
            reply = (f"I found answers on this topic, but none that deals with {missing}. "
                     "Could you add a detail - the exact symptom, when it happens, or what you already tried?")
        else:
            reply = (f"I could not find an answer about {missing}. "
                     "Could you describe it differently or add a detail (symptom, make/model, what you tried)?")
        record.state = AWAITING_DETAIL
        trace.decide(FALLBACK, state_after=AWAITING_DETAIL, missing=missing)
        return TurnResult(session_id=record.id, reply=reply, kind=FALLBACK, state=AWAITING_DETAIL)

    def _handoff(self, record: SessionRecord, trace: TurnTrace, reason: str) -> TurnResult:
        record.state = HANDED_OFF
        record.pending = None
        transcript = [{"role": m["role"], "text": m["text"]} for m in record.transcript]
        trace.decide(HANDOFF, state_after=HANDED_OFF, reason=reason, transcript=transcript)
        reply = (f"I'm passing you to a human agent ({reason}). They will see our whole conversation "
                 f"({len(transcript)} messages), so you won't have to repeat anything.")
        return TurnResult(session_id=record.id, reply=reply, kind=HANDOFF, state=HANDED_OFF)

    def _bad_input(self, record: SessionRecord, problem: str, trace: TurnTrace) -> TurnResult:
        trace.intent(problem)
        if problem == intents.TOO_LONG:
            message = (f"That message is too long (over {self.config.max_input_chars} characters). "
                       "Please describe the problem in a few sentences.")
        elif record.state == AWAITING_CHOICE:
            message = prompt_text(PendingChoice.from_dict(record.pending or {}), again=True)
        else:
            message = GREETING if record.state in (NEW, CONCLUDED, HANDED_OFF) else \
                "Did that help? Say 'thanks' if it is fixed, 'no' for another suggestion, or tell me what happened."
        options = PendingChoice.from_dict(record.pending).options if record.state == AWAITING_CHOICE and \
            record.pending else []
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
        if not record.delivered or not record.constraints:
            return False
        doc = self.selector.index.get(record.delivered[-1])
        if doc is None:
            return False
        terms = self.selector.normalizer.terms_of_text(doc.text)
        return any(Constraint.from_dict(c).violated_by(terms, self.selector.normalizer) for c in record.constraints)

    def _lock_for(self, session_id: str) -> threading.Lock:
        with self._locks_guard:
            lock = self._locks.get(session_id)
            if lock is None:
                lock = threading.Lock()
                self._locks[session_id] = lock
            return lock


def _competes(cand: Any, best: Any, config: EngineConfig) -> bool:
    """Return True when ``cand`` is a genuine alternative to ``best`` worth offering as a clarification option.

    Close normalised scores alone are not enough: the candidate must also be strong on its own - its score
    at least ``clarify_ratio`` of the best and its topical coverage (``topic_ratio``) at least as high -
    so an answer about another system that matched one shared word is never offered next to the right one.
    """
    if best.score - cand.score > config.clarify_margin:
        return False
    if best.score > 0 and cand.score < config.clarify_ratio * best.score:
        return False
    return cand.features.get("topic_ratio", 1.0) >= config.clarify_ratio


def _after_reset(text: str) -> str:
    """Return what follows a reset phrase ("new question: my brakes squeal" -> "my brakes squeal") if it has content."""
    match = intents._RESET.search(text.lower())
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
