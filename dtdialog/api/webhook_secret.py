"""The server's webhook secret: the key of the digest that turns a webhook sender into its session id.

A random 256-bit key in ``webhook.secret`` beside the session database, made once (mode 0600) and read by every
worker and every later start, so a sender keeps its conversation across restarts and workers while nobody without
the file can compute the session id of a sender.
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from pathlib import Path

from parsers.errors import StorageError
from parsers.storage import storage_error

SECRET_NAME = "webhook.secret"
_SECRET_BYTES = 32


def secret_path(sessions_path: Path) -> Path:
    """Return where the webhook secret of the session database ``sessions_path`` lives (its folder)."""
    return Path(sessions_path).parent / SECRET_NAME


def load_or_create(path: Path) -> bytes:
    """Return the secret in ``path``, creating it first when missing; racing processes all get the one created first."""
    what = f"reading the webhook secret {path}"
    try:
        try:
            return _read(path)
        except FileNotFoundError:
            _create(path)
        return _read(path)
    except OSError as exc:  # a link, a folder, no room, no permission: one line, never a traceback
        raise storage_error(exc, what=what) or StorageError(f"{what}: {exc.strerror or exc}") from None


def _create(path: Path) -> None:
    # written whole to a private temporary file, then linked in: os.link fails when the name exists (O_EXCL's rule),
    # so a worker that loses the race reads the winner's complete file, never a half-written one
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_hex(_SECRET_BYTES) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)


def _read(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # never through a link, never blocking on a FIFO
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StorageError(f"the webhook secret {path} is not a regular file")
        text = fh.read(4 * _SECRET_BYTES).strip()
    try:
        secret = bytes.fromhex(text.decode("ascii"))
    except ValueError:
        secret = b""
    if len(secret) != _SECRET_BYTES:
        raise StorageError(f"the webhook secret {path} is damaged; remove it to make a new one (webhook "
                           "conversations then start over)")
    return secret
