"""The session state machine's data: plan, delivered answers, constraints, failures, transcript, traces.

The states are ``State`` (``STATES``); which handler answers which intent in each of them is the table in
``dtdialog.dialogue.transitions`` (``transitions.render()`` prints it).

A ``SessionRecord`` is plain data (``to_dict``/``from_dict``) so ``SessionStore`` can persist it
after every turn; the manager keeps no other state.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from dtdialog.dialogue.kinds import State
from parsers.errors import DTDialogError, InputError

#: Each state is also a name of this module (``session.NEW``), the spelling the table and its tests read.
NEW = State.NEW
AWAITING_FEEDBACK = State.AWAITING_FEEDBACK
AWAITING_CHOICE = State.AWAITING_CHOICE
AWAITING_DETAIL = State.AWAITING_DETAIL
CONCLUDED = State.CONCLUDED
HANDED_OFF = State.HANDED_OFF
STATES = tuple(State)
SCHEMA = 1


class SessionNotFoundError(DTDialogError, KeyError):
    """No session with that id exists (never started, or the store was replaced)."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0]) if self.args else "session not found"


def new_session_id() -> str:
    """Return a fresh session id (uuid4 hex)."""
    return uuid.uuid4().hex


@dataclass
class SessionRecord:
    """Everything a session knows; ``step`` is the dialogue step (0 = A1) of the answer last offered."""

    id: str
    state: State = State.NEW
    question: str = ""
    plan: dict[str, Any] | None = None
    step: int = 0
    step_followups: list[str] = field(default_factory=list)
    #: which of ``step_followups`` replies to the answer on screen: the first, or the one after the bot asked that
    #: answer's question again (``abstain.AGAIN``); absent in old records
    screen_reply: int = 0
    #: the answer the step's follow-up replies to (its context); None at step 0. A rejected answer never is.
    context_id: str | None = None
    followups: list[str] = field(default_factory=list)
    delivered: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    constraints: list[dict[str, Any]] = field(default_factory=list)
    #: steps that ended without an answer the bot was sure of (fallbacks, abstentions, none of these fitted)
    failures: int = 0
    #: answers on screen the customer turned down ("no, that didn't help")
    rejections: int = 0
    pending: dict[str, Any] | None = None
    transcript: list[dict[str, Any]] = field(default_factory=list)
    traces: list[dict[str, Any]] = field(default_factory=list)
    turns: int = 0
    #: already tried: what the customer reported done or ruled out (``TriedAction.to_dict``), kept
    #: across turns so a later "I already checked the grounds" demotes a grounds answer; absent in old records
    tried: list[dict[str, Any]] = field(default_factory=list)
    #: a new question the scope gate refused as outside the index's domain: the customer's next message adds
    #: to it ("it's the car's headlight") instead of replacing it; cleared when a question starts
    held_text: str = ""
    #: the held text was an opening too vague to search with: the next message joins it whatever its length
    held_vague: bool = False
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        try:
            self.state = State(self.state)
        except ValueError:
            raise InputError(f"unknown session state {self.state!r}") from None

    @property
    def context_ids(self) -> list[str]:
        """Return the delivered answers up to the step's context answer (what its follow-up replies to)."""
        if self.context_id is None or self.context_id not in self.delivered:
            return []
        return self.delivered[: self.delivered.index(self.context_id) + 1]

    @property
    def excluded_ids(self) -> list[str]:
        """Return the answers never to offer again: delivered ones and ones the user turned down."""
        return list(dict.fromkeys(self.delivered + self.skipped))

    def add_message(self, role: str, text: str, **extra: Any) -> None:
        """Append a transcript line (``role`` is ``user`` or ``bot``)."""
        self.transcript.append({"role": role, "text": text, "at": round(time.time(), 3), **extra})

    def start_question(self, question: str, plan: dict[str, Any]) -> None:
        """Reset the dialogue part of the session for a new question (transcript and traces stay)."""
        self.question = question
        self.plan = plan
        self.step = 0
        self.step_followups = []
        self.screen_reply = 0
        self.context_id = None
        self.followups = []
        self.delivered = []
        self.skipped = []
        self.constraints = []
        self.failures = 0
        self.rejections = 0
        self.pending = None
        self.tried = []

    def to_dict(self) -> dict[str, Any]:
        """Return the record as a JSON-ready dict (a shallow view: do not mutate its lists)."""
        return {"schema": SCHEMA, **{name: getattr(self, name) for name in self.__dataclass_fields__}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionRecord:
        """Return the record in ``data``; raises ``InputError`` when it is malformed."""
        if not isinstance(data, dict) or "id" not in data:
            raise InputError("malformed session record")
        known = set(cls.__dataclass_fields__)
        try:
            return cls(**{k: v for k, v in data.items() if k in known})
        except TypeError as exc:
            raise InputError(f"malformed session record: {exc}") from None
