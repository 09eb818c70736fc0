"""The dialogue manager: one user turn in, one bot turn out, the session saved after every turn.

``DialogueManager`` holds no per-session state in memory: it loads the ``SessionRecord``, has the turn handlers
(``dtdialog.dialogue.handlers``) look the turn's intent up in the state machine (``dtdialog.dialogue.transitions``) and
run the handler it names over the ``SelectorPort`` (answer selection), and saves the record. Everything it says
comes from ``Replies`` (``dtdialog.dialogue.replies``). A lock per session id serialises turns of one session; turns of
different sessions run in parallel.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from dtdialog.dialogue.abstain import ConfidenceRule
from dtdialog.dialogue.choice import MAX_REPROMPTS
from dtdialog.dialogue.context import SelectorPort
from dtdialog.dialogue.handlers import TurnHandlers
from dtdialog.dialogue.kinds import ReplyKind
from dtdialog.dialogue.locks import SessionLocks
from dtdialog.dialogue.replies import DEFAULT_REPLIES, Replies
from dtdialog.dialogue.result import TurnResult
from dtdialog.dialogue.session import SessionRecord, new_session_id
from dtdialog.dialogue.session_store import SessionStore
from dtdialog.dialogue.trace import TurnTrace
from dtdialog.setup.engine_config import EngineConfig
from dtdialog.understanding import intents
from parsers.errors import InputError

if TYPE_CHECKING:
    from dtdialog.understanding.scope import ScopeGate

__all__ = ["ABSTAIN", "ANSWER", "ASK_DETAIL", "CLARIFY", "CONCLUDED_KIND", "FALLBACK", "GREETING", "HANDOFF",
           "MAX_REPROMPTS", "OUT_OF_SCOPE", "PROMPT", "RESET", "WAITING", "DialogueManager", "SelectorPort",
           "TurnResult"]

#: Each reply kind is also a name of this module (``manager.ANSWER``), the spelling callers compare with.
ANSWER = ReplyKind.ANSWER
CLARIFY = ReplyKind.CLARIFY
FALLBACK = ReplyKind.FALLBACK
ABSTAIN = ReplyKind.ABSTAIN
ASK_DETAIL = ReplyKind.ASK_DETAIL
HANDOFF = ReplyKind.HANDOFF
WAITING = ReplyKind.WAITING
OUT_OF_SCOPE = ReplyKind.OUT_OF_SCOPE
CONCLUDED_KIND = ReplyKind.CONCLUDED
PROMPT = ReplyKind.PROMPT
RESET = ReplyKind.RESET

#: The opening line, also printed by ``dtdialog chat`` before the first turn.
GREETING = DEFAULT_REPLIES.greeting


class DialogueManager:
    """Runs sessions over a ``SelectorPort`` and a ``SessionStore``; thread-safe across sessions.

    ``replies`` is the wording (default ``DEFAULT_REPLIES``). ``scope`` is the out-of-scope gate run before
    retrieval on every new question (``dtdialog.understanding.scope.ScopeGate``, built by ``build_engine``; None: no gate).
    The manager is the units' ``DialogueContext``: they read its attributes on every turn.
    """

    def __init__(self, *, selector: SelectorPort, store: SessionStore, config: EngineConfig | None = None,
                 replies: Replies | None = None, scope: ScopeGate | None = None, calibrator: Any = None,
                 followup_calibrator: Any = None) -> None:
        self.selector = selector
        self.scope = scope
        # a ``dtdialog.selection.confidence.Calibrator``; None reports no confidence and never abstains
        self.calibrator = calibrator
        # the calibrator of follow-up steps (``dtdialog.dialogue.abstain``); None: ``calibrator`` reads them too
        self.followup_calibrator = followup_calibrator
        self.store = store
        self.config = config or selector.config
        self.replies = replies or DEFAULT_REPLIES
        self.turns = TurnHandlers(self)
        self._locks = SessionLocks()

    @property
    def rule(self) -> ConfidenceRule:
        """The confidence rule every answer passes, over the current calibrators and threshold."""
        followup = self.followup_calibrator if self.calibrator is not None else None
        abstention = self.config.abstention
        return ConfidenceRule(self.calibrator, abstention.abstain_below, followup=followup,
                              brief_threshold=abstention.brief_below)

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
            clean, problem = intents.sanitize(text, max_chars=self.config.dialogue.max_input_chars)
            trace = TurnTrace(session_id=session_id, turn=record.turns, user_text=clean, state_before=record.state)
            if problem is not None:
                result = self.turns.bad_input(record, problem, trace)
            else:
                record.add_message("user", clean)
                try:
                    result = self.turns.dispatch(record, clean, trace)
                except InputError as exc:
                    result = self.turns.unreadable(record, exc, trace)
            offered = [o.answer_id for o in result.options if o.answer_id]
            record.add_message("bot", result.reply, kind=result.kind,
                               **({"answer_id": result.answer_id} if result.answer_id else {}),
                               **({"options": offered} if offered else {}))
            result.trace = trace.to_dict()
            record.traces.append(result.trace)
            if before_save is not None:
                before_save(result, record)
            self.store.save(record, keep_traces=self.config.dialogue.max_traces)
            return result

    @contextmanager
    def session_lock(self, session_id: str) -> Iterator[None]:
        """Hold ``session_id``'s lock: turns of one session run one after another (their load, reply and save
        never interleave), turns of different sessions side by side. Re-entrant, so a caller may hold it around
        ``handle`` (the API checks the session's expiry and handles the turn as one step). It holds across
        processes too (``SessionStore.turn_lock``: the workers of ``dtdialog serve --workers N``, ``dtdialog chat``)."""
        with self._locks.hold(session_id, getattr(self.store, "turn_lock", None)):
            yield
