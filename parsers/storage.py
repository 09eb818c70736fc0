"""Storage faults as one-line errors: SQLite and file-system failures mapped to ``parsers.errors`` classes.

Every SQLite connection of the project waits at most ``BUSY_TIMEOUT_S`` for another process's write lock
(``connect(timeout=...)`` installs SQLite's busy handler); after that the operation fails with
``StorageBusyError`` instead of waiting longer. ``storage_error`` turns an ``sqlite3.Error`` or an ``OSError``
into the matching class: disk full (``ENOSPC``, ``EFBIG`` under a file-size limit, ``EDQUOT``, ``SQLITE_FULL``, and
``SQLITE_IOERR_WRITE``/``SQLITE_IOERR_SHMSIZE``: a write refused without ``ENOSPC``, no room for the ``-shm`` file),
read-only (``EROFS``, ``EACCES``, ``SQLITE_READONLY``), busy (``SQLITE_BUSY``/``SQLITE_LOCKED``) or another I/O
failure. Errors that are not about storage (a bug, bad SQL) are left alone.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from parsers.errors import (
    StorageBusyError,
    StorageError,
    StorageFullError,
    StorageReadOnlyError,
)

#: Seconds any SQLite call waits for another connection's lock before failing with ``StorageBusyError``.
BUSY_TIMEOUT_S = 5.0

# primary SQLite result codes (the low byte of an extended code)
_SQLITE_PERM, _SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY = 3, 5, 6, 8
_SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 10, 11, 13, 14, 26
#: extended codes of a write the file system refused without ENOSPC (a file-size limit) or of a ``-shm`` file it had no
#: room to size: both mean no space to store, as far as the caller can act on it
_NO_ROOM_IOERRS = frozenset({_SQLITE_IOERR | (3 << 8), _SQLITE_IOERR | (19 << 8)})  # IOERR_WRITE, IOERR_SHMSIZE
#: Python 3.10 has no ``sqlite_errorcode``: the message SQLite gives for each code, for the fallback
_MESSAGES = {
    "database is locked": _SQLITE_BUSY, "database table is locked": _SQLITE_LOCKED,
    "database or disk is full": _SQLITE_FULL, "attempt to write a readonly database": _SQLITE_READONLY,
    "disk i/o error": _SQLITE_IOERR, "unable to open database file": _SQLITE_CANTOPEN,
    "database disk image is malformed": _SQLITE_CORRUPT, "file is not a database": _SQLITE_NOTADB,
}
#: what opening a WAL database for reading fails with where its ``-shm`` file cannot be created
CANNOT_OPEN_CODES = frozenset({_SQLITE_CANTOPEN, _SQLITE_READONLY, _SQLITE_IOERR})
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)})
_READ_ONLY_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def sqlite_code(exc: sqlite3.Error) -> int | None:
    """Return the primary SQLite result code of ``exc`` (None when it carries none)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF
    message = str(exc).lower()
    return next((c for text, c in _MESSAGES.items() if text in message), None)


def is_not_a_database(exc: sqlite3.Error) -> bool:
    """Return True when ``exc`` says the file is not an SQLite database."""
    return sqlite_code(exc) == _SQLITE_NOTADB


def storage_error(exc: BaseException, *, what: str) -> StorageError | None:
    """Return the one-line error for a storage failure ``exc`` while ``what`` (e.g. "writing the index x.sqlite").

    None when ``exc`` is not a storage fault (the caller re-raises it as it is).
    """
    if isinstance(exc, StorageError):
        return exc
    if isinstance(exc, sqlite3.Error):
        code = sqlite_code(exc)
        if code == _SQLITE_FULL:
            return StorageFullError(f"{what}: the disk is full ({exc})")
        if getattr(exc, "sqlite_errorcode", None) in _NO_ROOM_IOERRS:
            # SQLite says "full" only for ENOSPC while writing pages; a file-size limit or a -shm file with no room is this
            return StorageFullError(f"{what}: a write was refused (disk I/O error: the disk may be full, or a file "
                                    "over its size limit)")
        if code in (_SQLITE_BUSY, _SQLITE_LOCKED):
            return StorageBusyError(f"{what}: the database is locked by another process; "
                                    f"gave up after {BUSY_TIMEOUT_S:g} s, try again")
        if code in (_SQLITE_READONLY, _SQLITE_PERM):
            return StorageReadOnlyError(f"{what}: the file is read-only ({exc})")
        if code in (_SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_CANTOPEN, _SQLITE_NOTADB):
            return StorageError(f"{what}: {exc}")
        return None
    if isinstance(exc, OSError) and exc.errno is not None:
        reason = (exc.strerror or str(exc)) + (f": {exc.filename}" if exc.filename else "")
        if exc.errno in _FULL_ERRNOS:
            return StorageFullError(f"{what}: the disk is full ({reason})")
        if exc.errno in _READ_ONLY_ERRNOS:
            return StorageReadOnlyError(f"{what}: {reason}")
        if exc.errno == errno.EIO:
            return StorageError(f"{what}: {reason}")
    return None


@contextmanager
def storage_errors(what: str) -> Iterator[None]:
    """Turn a storage fault raised inside the block into its ``StorageError`` (anything else passes through)."""
    try:
        yield
    except (sqlite3.Error, OSError) as exc:
        err = storage_error(exc, what=what)
        if err is None or err is exc:
            raise
        raise err from None


def probe_sqlite(connect: Callable[[], sqlite3.Connection], statements: Sequence[str]) -> str | None:
    """Return None when ``statements`` run on a fresh connection made by ``connect``, else why not in a few words
    (no path): a readiness probe, bounded by the busy timeout ``connect`` gives the connection."""
    conn = None
    try:
        conn = connect()
        for statement in statements:
            conn.execute(statement).fetchall()
    except sqlite3.Error as exc:
        if sqlite_code(exc) in (_SQLITE_BUSY, _SQLITE_LOCKED):
            return "is locked by another process"
        return f"cannot be read ({exc})"
    finally:
        if conn is not None:
            conn.close()  # a transaction a statement began is rolled back
    return None
