"""The paper's Q/A CSV format: a ``QUESTION,ANSWER`` header, HTML answers, CR (or any) line endings.

Each row becomes a two-turn dialogue Q, A whose id is ``{file stem}-{row number}``.
"""

from __future__ import annotations

import csv
from pathlib import Path

from data.load_common import RecordErrors, html_to_text, read_text
from data.model import ANSWER, QUESTION, Dialogue, Turn
from parsers.errors import InputError

REQUIRED_COLUMNS = ("QUESTION", "ANSWER")


def load_csv(path: Path, errors: RecordErrors) -> list[Dialogue]:
    """Return one Q/A dialogue per CSV row; rows with a missing or empty cell are reported with their line."""
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
    dialogues: list[Dialogue] = []
    row_number = 0
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
        row_number += 1
        if len(row) <= max(q_col, a_col):
            errors.report(path, line, f"expected {len(columns)} cells, got {len(row)}")
            continue
        question = html_to_text(row[q_col])
        answer = html_to_text(row[a_col])
        if not question or not answer:
            errors.report(path, line, f"empty {'QUESTION' if not question else 'ANSWER'} cell")
            continue
        dialogues.append(Dialogue(
            id=f"{path.stem}-{row_number}",
            turns=(Turn(QUESTION, question), Turn(ANSWER, answer)),
            meta={"source": path.name, "line": line},
        ))
    return dialogues
