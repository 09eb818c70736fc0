"""Locks that hold across processes (``fcntl.flock``), for what several server workers share.

A lock is an open file description holding ``flock``: the kernel drops it when the process dies, even by
``kill -9``, so a killed worker never leaves anything locked. Every acquisition opens its own descriptor:
two threads of one process then exclude each other too (``flock`` on one shared descriptor would not).
Waits are bounded (``StorageBusyError`` after ``timeout``), never a hang.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from parsers.errors import InputError, StorageBusyError
from parsers.files import open_lock_file
from parsers.storage import storage_error

#: Session locks are spread over this many files: two sessions share one only by hash collision (then their
#: turns run one after the other, never wrongly side by side).
BUCKETS = 256
#: Seconds between two tries of a held lock.
_POLL_S = 0.005
_POLL_MAX_S = 0.05


@contextmanager
def file_lock(path: Path, *, timeout: float, what: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created when missing) while the block runs.

    ``what`` names the lock in the one-line ``StorageBusyError`` raised after ``timeout`` seconds of waiting.
    A link or anything but a regular file at ``path`` is refused (``StorageError``), never followed or written.
    """
    try:
        fd = open_lock_file(path)
    except OSError as exc:
        raise storage_error(exc, what=f"cannot create the lock file {path}") or InputError(
            f"cannot create the lock file {path}: {exc.strerror}") from None
    try:
        _acquire(fd, time.monotonic() + max(0.0, timeout), what)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _acquire(fd: int, deadline: float, what: str) -> None:
    pause = _POLL_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
        if time.monotonic() >= deadline:
            raise StorageBusyError(f"{what} stayed locked by another process; try again shortly")
        time.sleep(pause)
        pause = min(_POLL_MAX_S, pause * 2)


def bucket_path(folder: Path, key: str) -> Path:
    """Return the lock file of ``key`` among the ``BUCKETS`` files of ``folder`` (the folder is created)."""
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{zlib.crc32(key.encode('utf-8', 'surrogatepass')) % BUCKETS:03d}.lock"
