"""Where dtdialog keeps the files it makes: ``$DTDIALOG_HOME`` or ``~/.cache/dtdialog``.

In the lowest layer so that parsers (a derived encoder graph) and everything above share one answer;
``dtdialog.runtime.paths`` builds the engine's own paths on it.
"""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "DTDIALOG_HOME"


def data_home() -> Path:
    """Return the folder for built indexes, derived models and chat sessions (not created here)."""
    env = os.environ.get(HOME_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "dtdialog"
