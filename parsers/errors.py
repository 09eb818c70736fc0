"""Error types shared by every layer.

They live in the lowest layer so that ``index``, ``dtdialog`` and ``eval`` can
catch them without importing each other. Every message is meant to be shown to a
user as one line, so they say what was wrong and what to do about it.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable


class DTDialogError(Exception):
    """Base class: any error whose message is safe and useful to show a user."""


class InputError(DTDialogError, ValueError):
    """The text or file given was empty, too large, binary or malformed."""


class ModelNotAvailableError(DTDialogError, RuntimeError):
    """An optional model or package is not installed; the message says how to install it."""


class ConfigError(DTDialogError, ValueError):
    """An unknown option, backend, format or parser name."""


class StorageError(DTDialogError, RuntimeError):
    """A file or database could not be read or written (an I/O failure, a damaged file); the message names it."""


class StorageFullError(StorageError):
    """The disk (or the file-size limit, or the quota) is full: nothing was written."""


class StorageBusyError(StorageError):
    """Another process held a write lock on the database for longer than the wait allowed: nothing was written."""


class StorageReadOnlyError(StorageError):
    """The file or its folder cannot be written (read-only file system or no permission): nothing was written."""


def one_line_errors(call: Callable[[], int | None], *,
                    on_fault: Callable[[BaseException], str] | None = None) -> int:
    """Return ``call()``'s exit code; a ``DTDialogError`` prints ``error: ...`` and gives 2, Ctrl-C prints
    ``interrupted`` and gives 130, a closed pipe gives 0. With ``on_fault``, a fault the call did not name itself
    (``OSError``, ``sqlite3.Error``, ``RecursionError``) is one line too, worded by ``on_fault``; without, it raises.
    The one handler of every command-line entry point (``dtdialog``, the evaluations)."""
    try:
        return int(call() or 0)
    except DTDialogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except (OSError, sqlite3.Error, RecursionError) as exc:
        if on_fault is None:
            raise
        print(f"error: {on_fault(exc)}", file=sys.stderr)
        return 2
