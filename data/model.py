"""The dialogue corpus model: a dialogue is an id plus turns with roles Q, A and C."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from parsers.errors import InputError

QUESTION = "Q"
ANSWER = "A"
CUSTOMER = "C"
ROLES = (QUESTION, ANSWER, CUSTOMER)


@dataclass(frozen=True)
class Turn:
    """One utterance: ``role`` is Q (opening question), A (agent answer) or C (customer follow-up)."""

    role: str
    text: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise InputError(f"unknown turn role {self.role!r}; expected one of {', '.join(ROLES)}")


@dataclass(frozen=True)
class Dialogue:
    """A support dialogue: Q, A1, C1, A2, ... The first turn is the question."""

    id: str
    turns: tuple[Turn, ...]
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def question(self) -> str:
        return self.turns[0].text if self.turns else ""

    def answers(self) -> list[tuple[int, Turn]]:
        """Return (position in ``turns``, turn) for every answer turn."""
        return [(i, t) for i, t in enumerate(self.turns) if t.role == ANSWER]

    def answer_id(self, position: int) -> str:
        """Return the stable document id of the answer at ``position``: ``"{dialogue id}#{position}"``."""
        return f"{self.id}#{position}"

    def to_dict(self) -> dict[str, Any]:
        """Return the JSONL record of this dialogue."""
        return {"id": self.id, "turns": [{"role": t.role, "text": t.text} for t in self.turns], "meta": self.meta}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Dialogue:
        """Return the dialogue in a JSONL record; raises ``InputError`` when a field is missing or wrong."""
        try:
            turns = tuple(Turn(role=str(t["role"]), text=str(t["text"])) for t in data["turns"])
            return cls(id=str(data["id"]), turns=turns, meta=dict(data.get("meta") or {}))
        except (KeyError, TypeError) as exc:
            raise InputError(f"malformed dialogue record: missing or wrong field {exc}") from None
