"""The bot's reply to one user turn."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dtdialog.dialogue.kinds import ReplyKind, State
from dtdialog.selection.clarification import ClarifyOption


@dataclass
class TurnResult:
    """The bot's reply to one user turn. ``options`` is set when ``kind == "clarify"``."""

    session_id: str
    reply: str
    kind: ReplyKind
    options: list[ClarifyOption] = field(default_factory=list)
    state: State = State.NEW
    answer_id: str | None = None
    trace: dict[str, Any] = field(default_factory=dict)
    #: the calibrated probability that the delivered answer is right (None when no answer was delivered or
    #: the engine has no calibration)
    confidence: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "reply": self.reply, "kind": self.kind,
                "options": [o.to_dict() for o in self.options], "state": self.state,
                "answer_id": self.answer_id, "confidence": self.confidence, "trace": self.trace}
