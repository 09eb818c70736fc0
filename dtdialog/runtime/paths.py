"""Where dtdialog keeps its own files: ``$DTDIALOG_HOME`` or ``~/.cache/dtdialog``."""

from __future__ import annotations

from pathlib import Path

from parsers.home import HOME_ENV, data_home

__all__ = ["HOME_ENV", "data_home", "sessions_path", "builtin_index_path"]


def sessions_path() -> Path:
    """Return the default chat session store: ``data_home()/sessions.sqlite``."""
    return data_home() / "sessions.sqlite"


def builtin_index_path(fingerprint: str) -> Path:
    """Return the path of the index built from a corpus with this fingerprint (parser + content hash)."""
    return data_home() / f"index-{fingerprint}.sqlite"
