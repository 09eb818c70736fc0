"""Where dtdialog keeps its own files: ``$DTDIALOG_HOME`` or ``~/.cache/dtdialog``."""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "DTDIALOG_HOME"


def data_home() -> Path:
    """Return the folder for built indexes and chat sessions (not created here)."""
    env = os.environ.get(HOME_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "dtdialog"


def sessions_path() -> Path:
    """Return the default chat session store: ``data_home()/sessions.sqlite``."""
    return data_home() / "sessions.sqlite"


def builtin_index_path(fingerprint: str) -> Path:
    """Return the path of the index built from a corpus with this fingerprint (parser + content hash)."""
    return data_home() / f"index-{fingerprint}.sqlite"
