"""The corpus loader registry: ``load_corpus(path, fmt=...)`` for every supported dialogue format.

Formats: ``csv`` (the paper's QUESTION,ANSWER file with HTML answers), ``jsonl`` (``Dialogue`` records;
a directory means all its ``*.jsonl``), ``mechanics`` (Stack Exchange Q/A), ``twitter`` (customer-care
JSON) and ``irc`` (Ubuntu IRC threads).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from data.load_common import LoadIssue, RecordErrors, check_corpus_file
from data.load_csv import load_csv
from data.load_irc import load_irc
from data.load_jsonl import load_jsonl
from data.load_mechanics import load_mechanics
from data.load_twitter import load_twitter
from data.model import Dialogue
from parsers.errors import ConfigError, InputError

Loader = Callable[[Path, RecordErrors], list[Dialogue]]

#: Format name -> loader. Every loader reads one file and reports malformed records with file:line.
FORMATS: dict[str, Loader] = {
    "csv": load_csv,
    "jsonl": load_jsonl,
    "mechanics": load_mechanics,
    "twitter": load_twitter,
    "irc": load_irc,
}


def load_corpus(
    path: str | Path,
    *,
    fmt: str,
    on_error: str = "raise",
    issues: list[LoadIssue] | None = None,
    limit: int | None = None,
) -> list[Dialogue]:
    """Return the dialogues stored at ``path`` in format ``fmt``, in file order.

    ``on_error="raise"`` (default) raises ``InputError`` naming ``file:line`` at the first malformed
    record; ``on_error="skip"`` logs each malformed record and appends it to ``issues`` when given.
    ``limit`` keeps only the first N dialogues. Raises ``ConfigError`` for an unknown format and
    ``InputError`` for a missing, empty or binary file, or a file with no usable dialogue.
    """
    if fmt not in FORMATS:
        raise ConfigError(f"unknown corpus format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if limit is not None and limit < 1:
        raise ConfigError(f"limit must be a positive number, got {limit}")
    errors = RecordErrors(on_error=on_error, issues=issues)
    p = Path(path)
    if fmt == "jsonl" and p.is_dir():
        files = sorted(p.glob("*.jsonl"))
        if not files:
            raise InputError(f"no *.jsonl files in directory {p}")
    else:
        files = [p]
    dialogues: list[Dialogue] = []
    seen: dict[str, Path] = {}
    for file in files:
        for dialogue in FORMATS[fmt](check_corpus_file(file), errors):
            if dialogue.id in seen:
                errors.report(file, int(dialogue.meta.get("line", 0)),
                              f"duplicate dialogue id {dialogue.id!r} (also in {seen[dialogue.id]})")
                continue
            seen[dialogue.id] = file
            dialogues.append(dialogue)
            if limit is not None and len(dialogues) >= limit:
                return dialogues
    if not dialogues:
        first = f"; {len(errors.issues)} malformed record(s), first: {errors.issues[0]}" if errors.issues else ""
        raise InputError(f"no usable dialogues in {p} (format {fmt}){first}")
    return dialogues
