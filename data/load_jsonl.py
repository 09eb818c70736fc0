"""Generic JSONL dialogues: one ``Dialogue.to_dict()`` record per line (the built-in corpus format).

A directory is read as all its ``*.jsonl`` files in name order. A record without an ``id`` gets one derived
from its turns (``data.ids``), never from its line.
"""

from __future__ import annotations

from pathlib import Path

from data.ids import FileIds, id_prefix
from data.load_common import RecordErrors, iter_jsonl
from data.model import QUESTION, Dialogue
from parsers.errors import InputError


def load_jsonl(path: Path, errors: RecordErrors) -> list[Dialogue]:
    """Return the dialogues of one JSONL file; malformed or empty dialogues are reported with their line."""
    dialogues: list[Dialogue] = []
    ids = FileIds(id_prefix(path.stem))
    for lineno, record in iter_jsonl(path, errors):
        try:
            dialogue = Dialogue.from_dict(record if record.get("id") is not None else
                                          {**record, "id": ids.derived(_texts(record))})
        except InputError as exc:
            errors.report(path, lineno, str(exc))
            continue
        problem = _problem(dialogue)
        if problem is None and dialogue.id in ids.lines:
            problem = f"duplicate dialogue id {dialogue.id!r} (first on line {ids.lines[dialogue.id]})"
        if problem:
            errors.report(path, lineno, problem)
            continue
        ids.claim(dialogue.id, lineno)
        dialogues.append(dialogue)
    return dialogues


def _texts(record: dict) -> list[str]:
    turns = record.get("turns")
    if not isinstance(turns, list):
        return []  # Dialogue.from_dict reports the record
    return [f"{t.get('role')}:{t.get('text')}" for t in turns if isinstance(t, dict)]


def _problem(dialogue: Dialogue) -> str | None:
    if not dialogue.id.strip():
        return "empty dialogue id"
    if not dialogue.turns:
        return "a dialogue needs at least one turn"
    if dialogue.turns[0].role != QUESTION:
        return f"the first turn must be the question (role Q), got {dialogue.turns[0].role}"
    for i, turn in enumerate(dialogue.turns):
        if not turn.text.strip():
            return f"turn {i} has empty text"
    return None
