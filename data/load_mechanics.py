"""Motor Vehicle Maintenance & Repair Stack Exchange Q/A JSONL (``../shared/data/mechanics_qa``).

Each record becomes Q = title + body, A = accepted answer; ``meta`` keeps category, tags and score.
"""

from __future__ import annotations

from pathlib import Path

from data.load_common import RecordErrors, iter_jsonl, normalize_space, require_text
from data.model import ANSWER, QUESTION, Dialogue, Turn


def load_mechanics(path: Path, errors: RecordErrors) -> list[Dialogue]:
    """Return one Q/A dialogue per record; records lacking id, title or answer are reported with their line."""
    dialogues: list[Dialogue] = []
    for lineno, record in iter_jsonl(path, errors):
        try:
            doc_id = str(record.get("id") or "").strip() or _missing("id")
            title = require_text(record.get("title"), "title")
            body = record.get("body") or ""
            if not isinstance(body, str):
                raise ValueError(f"field 'body' is {type(body).__name__}, expected text")
            answer = require_text(record.get("answer"), "answer")
        except ValueError as exc:
            errors.report(path, lineno, str(exc))
            continue
        question = _join_title(title, normalize_space(body))
        tags = record.get("tags") or []
        meta = {
            "source": path.name, "line": lineno, "category": record.get("category"),
            "tags": [str(t) for t in tags] if isinstance(tags, list) else [str(tags)],
            "score": record.get("score"), "title": title,
        }
        dialogues.append(Dialogue(id=doc_id, turns=(Turn(QUESTION, question), Turn(ANSWER, normalize_space(answer))),
                                  meta=meta))
    return dialogues


def _join_title(title: str, body: str) -> str:
    # A title usually lacks final punctuation; without it the parser would glue it to the body's first sentence.
    title = title.strip()
    if title and title[-1] not in ".?!:":
        title += "."
    return f"{title}\n{body}" if body else title


def _missing(field: str) -> str:
    raise ValueError(f"missing field {field!r}")
