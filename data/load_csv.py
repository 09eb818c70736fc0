"""The paper's Q/A CSV format: a ``QUESTION,ANSWER`` header, HTML answers, CR (or any) line endings.

Each row becomes a two-turn dialogue Q, A. Its id is the row's ``ID`` cell when the header has an ``ID`` column
(every row then needs a unique one), else ``{file stem}-{digest of question and answer}`` (``data.ids``), so
reordering or editing other rows never changes it.
"""

from __future__ import annotations

import csv
from pathlib import Path

from data.ids import FileIds, id_prefix
from data.load_common import RecordErrors, html_to_text, read_text
from data.model import ANSWER, QUESTION, Dialogue, Turn
from parsers.errors import InputError

REQUIRED_COLUMNS = ("QUESTION", "ANSWER")
ID_COLUMN = "ID"


def load_csv(path: Path, errors: RecordErrors) -> list[Dialogue]:
    """Return one Q/A dialogue per CSV row; rows with a missing or empty cell, or a bad or reused ID, are reported
    with their line."""
    text = read_text(path, legacy_encodings=True)
    # newline="" semantics: csv handles \r, \n and \r\n, and quoted cells keep their own line breaks.
    reader = csv.reader(text.splitlines(keepends=True))
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(f"{path}: the CSV file is empty") from None
    except csv.Error as exc:
        raise InputError(f"{path}:1: malformed CSV header ({exc})") from None
    columns = [h.strip().upper() for h in header]
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise InputError(f"{path}:1: CSV header lacks column(s) {', '.join(missing)}; expected QUESTION,ANSWER")
    q_col, a_col = columns.index("QUESTION"), columns.index("ANSWER")
    id_col = columns.index(ID_COLUMN) if ID_COLUMN in columns else None
    ids = FileIds(id_prefix(path.stem))
    dialogues: list[Dialogue] = []
    while True:
        line = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            errors.report(path, line, f"malformed CSV row ({exc})")
            break
        if not any(cell.strip() for cell in row):
            continue
        if len(row) <= max(q_col, a_col, -1 if id_col is None else id_col):
            errors.report(path, line, f"expected {len(columns)} cells, got {len(row)}")
            continue
        question = html_to_text(row[q_col])
        answer = html_to_text(row[a_col])
        if not question or not answer:
            errors.report(path, line, f"empty {'QUESTION' if not question else 'ANSWER'} cell")
            continue
        try:
            dialogue_id = ids.derived((question, answer)) if id_col is None else ids.explicit(row[id_col].strip())
        except ValueError as exc:
            errors.report(path, line, str(exc))
            continue
        ids.claim(dialogue_id, line)
        dialogues.append(Dialogue(
            id=dialogue_id,
            turns=(Turn(QUESTION, question), Turn(ANSWER, answer)),
            meta={"source": path.name, "line": line},
        ))
    return dialogues
