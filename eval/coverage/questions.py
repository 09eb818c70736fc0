"""The questions a coverage run asks: the held-out Reddit half (posts marked as asking for car help) or a file."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from eval.coverage.split import held_out
from eval.jsonl import read_objects
from parsers.errors import InputError

MARKS_PATH = Path(__file__).resolve().parent / "held_out_marks.jsonl"


@dataclass(frozen=True)
class Question:
    id: str
    text: str


def held_out_questions(data_dir: Path, marks_path: Path = MARKS_PATH) -> tuple[list[Question], int]:
    """Return the held-out posts marked as asking for help with a car problem, and how many posts were marked."""
    from eval.datasets import reddit_questions

    posts = {pid: text for pid, text in reddit_questions(data_dir).items() if held_out(pid)}
    marks = read_marks(marks_path)
    missing = sorted(set(posts) - set(marks))
    if missing:
        raise InputError(f"{marks_path.name}: {len(missing)} held-out posts are not marked (first: {missing[0]})")
    return [Question(pid, posts[pid]) for pid in sorted(posts) if marks[pid]], len(posts)


def read_marks(path: Path) -> dict[str, bool]:
    """Return post id -> asks for help with a car problem, as marked by reading."""
    if not path.is_file():
        raise InputError(f"{path}: no marks file")
    marks = {}
    for n, row in read_objects(path):
        if not isinstance(row.get("asks_help"), bool) or not row.get("id"):
            raise InputError(f"{path}:{n}: needs an id and asks_help true or false")
        marks[str(row["id"])] = row["asks_help"]
    return marks


#: the formats of a question file (``--format``; default: its suffix, ``.jsonl``, ``.csv``, else text)
QUESTION_FORMATS = ("jsonl", "csv", "text")


def file_questions(path: Path, fmt: str | None = None) -> list[Question]:
    """Return the questions of a file: JSONL (``id`` and ``text``/``question``, or ``title`` + ``body``/``selftext``),
    CSV with the same columns, or plain text (one question per line); ``fmt`` (default: by its suffix) says which."""
    if fmt is not None and fmt not in QUESTION_FORMATS:
        raise InputError(f"--format {fmt}: a question file is {', '.join(QUESTION_FORMATS)}")
    if not path.is_file():
        raise InputError(f"--data {path}: no such file")
    fmt = fmt or {".jsonl": "jsonl", ".csv": "csv"}.get(path.suffix, "text")
    if fmt == "jsonl":
        rows = [row for _, row in read_objects(path)]
    elif fmt == "csv":
        csv.field_size_limit(1 << 24)
        with path.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
    else:
        rows = [{"text": line} for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = []
    for n, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise InputError(f"{path}: row {n} is not an object")
        title = str(row.get("title") or "").strip()
        body = str(row.get("body") or row.get("selftext") or "").strip()
        text = str(row.get("text") or row.get("question") or "").strip() or f"{title}\n{body}".strip()
        if text:
            out.append(Question(str(row.get("id") or n), text))
    if not out:
        raise InputError(f"{path}: no questions (JSONL/CSV need text, question or title; text files one per line)")
    return out
