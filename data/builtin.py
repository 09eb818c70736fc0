"""The built-in car-repair corpus: the chatbot's default knowledge, shipped inside the package.

The dialogues live as one JSONL file per problem family under ``data/corpus/car_repair``;
the car-domain aliases used for entity matching live in ``data/car_synonyms.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

from data.loaders import load_corpus
from data.model import Dialogue
from parsers.errors import InputError

_DATA_DIR = Path(__file__).resolve().parent


def builtin_corpus_dir() -> Path:
    """Return the directory holding the built-in family files (``*.jsonl``)."""
    return _DATA_DIR / "corpus" / "car_repair"


def builtin_tests_path() -> Path:
    """Return the conversation tests of the built-in corpus (``dtdialog test`` runs them by default)."""
    return _DATA_DIR / "corpus" / "car_repair_conversations.yaml"


def builtin_synonyms_path() -> Path:
    """Return the path of the built-in car-domain synonym list."""
    return _DATA_DIR / "car_synonyms.json"


def load_builtin_corpus(directory: Path | None = None) -> list[Dialogue]:
    """Return every built-in dialogue, reading the family files in sorted file-name order.

    ``directory`` defaults to ``builtin_corpus_dir()``. The files are read by the generic JSONL
    loader in strict mode, so a malformed line, or a dialogue id used twice, raises ``InputError``
    naming ``file:line``; nothing is skipped silently.
    """
    root = Path(directory) if directory is not None else builtin_corpus_dir()
    return load_corpus(root, fmt="jsonl", on_error="raise")


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
