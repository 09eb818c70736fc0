"""What every evaluation entry point does with a failure: one line and an exit code, never a traceback."""

from __future__ import annotations

import sys
from collections.abc import Callable

from parsers.errors import DTDialogError


def one_line_errors(call: Callable[[], int]) -> int:
    """Return ``call()``; a ``DTDialogError`` prints ``error: ...`` and gives 2, Ctrl-C prints ``interrupted``, 130."""
    try:
        return call()
    except DTDialogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
