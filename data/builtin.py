"""The built-in car-repair corpus: the chatbot's default knowledge, shipped inside the package.

The dialogues live as one JSONL file per problem family under ``data/corpus/car_repair``;
the car-domain aliases used for entity matching live in ``data/car_synonyms.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

from data.model import Dialogue
from parsers.errors import InputError

_DATA_DIR = Path(__file__).resolve().parent


def builtin_corpus_dir() -> Path:
    """Return the directory holding the built-in family files (``*.jsonl``)."""
    return _DATA_DIR / "corpus" / "car_repair"


def builtin_synonyms_path() -> Path:
    """Return the path of the built-in car-domain synonym list."""
    return _DATA_DIR / "car_synonyms.json"


def read_dialogue_file(path: Path) -> list[Dialogue]:
    """Return the dialogues of one JSONL file, in file order.

    Blank lines are skipped. Raises ``InputError`` naming ``file:line`` for a line that is
    not JSON, not an object, or not a valid dialogue record.
    """
    dialogues: list[Dialogue] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise InputError(f"{path}:{lineno}: expected a JSON object, got {type(record).__name__}")
        try:
            dialogue = Dialogue.from_dict(record)
        except InputError as exc:
            raise InputError(f"{path}:{lineno}: {exc}") from None
        if not dialogue.turns:
            raise InputError(f"{path}:{lineno}: dialogue {dialogue.id!r} has no turns")
        dialogues.append(dialogue)
    return dialogues


def load_builtin_corpus(directory: Path | None = None) -> list[Dialogue]:
    """Return every built-in dialogue, reading the family files in sorted file-name order.

    ``directory`` defaults to ``builtin_corpus_dir()``. Raises ``InputError`` naming
    ``file:line`` for a malformed line, and for a dialogue id that occurs twice.
    """
    root = Path(directory) if directory is not None else builtin_corpus_dir()
    files = sorted(root.glob("*.jsonl"))
    if not files:
        raise InputError(f"{root}: no *.jsonl dialogue files found")
    dialogues: list[Dialogue] = []
    seen: dict[str, str] = {}
    for path in files:
        for dialogue in read_dialogue_file(path):
            if dialogue.id in seen:
                raise InputError(f"{path}: dialogue id {dialogue.id!r} already used in {seen[dialogue.id]}")
            seen[dialogue.id] = path.name
            dialogues.append(dialogue)
    return dialogues


def load_car_synonyms(path: Path | None = None) -> dict[str, list[str]]:
    """Return the car-domain synonym list: canonical term -> aliases, all lowercase.

    ``path`` defaults to ``builtin_synonyms_path()``. Raises ``InputError`` when the file
    is not a JSON object mapping strings to lists of strings.
    """
    source = Path(path) if path is not None else builtin_synonyms_path()
    try:
        raw = json.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{source}: cannot read ({exc.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise InputError(f"{source}: not a valid JSON synonym file") from None
    if not isinstance(raw, dict):
        raise InputError(f"{source}: expected a JSON object of term -> [aliases]")
    synonyms: dict[str, list[str]] = {}
    for term, aliases in raw.items():
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise InputError(f"{source}: aliases of {term!r} must be a list of strings")
        synonyms[term.strip().lower()] = [a.strip().lower() for a in aliases if a.strip()]
    return synonyms
