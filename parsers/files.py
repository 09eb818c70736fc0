"""Writing files safely: the one rule of every command and server write that creates or replaces a file.

- ``atomic_write`` puts a finished temporary file in place with one rename, so a reader sees the old content or the
  new one. It replaces only a missing path or a regular file: a directory, a device, a FIFO, a socket or any
  symbolic link there is refused (``InputError``, one line naming the path and what it is) and left untouched.
- ``check_out_dir`` admits a folder argument on the same terms: a real folder or nothing yet.
- ``open_lock_file`` and ``open_append`` open a lock file or a log without following a link, and only when it is a
  regular file.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from parsers.errors import InputError, StorageError

#: The characters and length of the random part of a temporary name (as ``tempfile.mkstemp``'s).
_TEMP_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"
_TEMP_LENGTH = 8
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"),
          (stat.S_ISREG, "a regular file"))


def file_kind(mode: int) -> str:
    """Return what ``mode`` (an ``st_mode``) is, as a message names it: ``"a FIFO"``, ``"a regular file"``..."""
    return next((name for test, name in _KINDS if test(mode)), "a special file")


def replace_refusal(path: str | Path, info: os.stat_result, *, wanted: str | None = None) -> str | None:
    """Return why ``path`` (whose ``lstat`` is ``info``) must not be replaced by a new file, or None when it may.

    ``wanted`` names what the caller writes (``"a dtdialog index"``) for the message: "X is a FIFO, not ...".
    """
    if stat.S_ISREG(info.st_mode):
        return None
    if stat.S_ISDIR(info.st_mode):
        return f"{path} is a directory; give a file path"
    if stat.S_ISLNK(info.st_mode):
        try:
            target = file_kind(os.stat(path).st_mode)
        except OSError:
            target = "a missing file"
        if wanted and target == "a regular file":
            return f"{path} is a symbolic link to a file that is not {wanted}; refusing to replace it"
        what = f"a symbolic link to {target}"
    else:
        what = file_kind(info.st_mode)
    return f"{path} is {what}{f', not {wanted}' if wanted else ''}; refusing to replace it"


def _lstat(path: str | Path, what: str) -> os.stat_result | None:
    """Return ``path``'s ``lstat``, None when it is missing; a one-line ``InputError`` naming ``what`` otherwise."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"cannot check the {what} {path}: {exc.strerror}") from None


def check_replaceable(path: str | Path, *, wanted: str | None = None) -> os.stat_result | None:
    """Return ``path``'s ``lstat`` (None when missing); raise ``InputError`` unless it is a regular file."""
    info = _lstat(path, "output path")
    if info is None:
        return None
    refusal = replace_refusal(path, info, wanted=wanted)
    if refusal:
        raise InputError(refusal)
    return info


def atomic_write(path: str | Path, write: Callable[[BinaryIO], object]) -> Path:
    """Call ``write(binary file)`` on a temporary file beside ``path``, then rename it over ``path``; return the path.

    ``path`` must be missing or a regular file (``check_replaceable``), checked before writing and again just before
    the rename. Every step runs in the one folder opened first (a folder swapped for a link meanwhile is not
    followed); the temporary file is created exclusively, never through a link. The folder is created when
    missing; a failed or interrupted write leaves ``path`` as it was and no temporary file behind. The file gets
    the usual permissions (0600 would hide it from other readers).
    """
    path = Path(path)
    if path.name in ("", ".."):
        raise InputError(f"{path} is a directory; give a file path")
    check_replaceable(path)  # before the write: a refusal costs nothing
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fd, tmp = _create_temp(folder, path.name)
        try:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
            with os.fdopen(fd, "wb") as fh:
                write(fh)
            _check_entry(folder, path)
            os.replace(tmp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=folder)
            except FileNotFoundError:
                pass
            raise
    finally:
        os.close(folder)
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` as UTF-8 to ``path`` with ``atomic_write``; return the path."""
    data = text.encode("utf-8")
    return atomic_write(path, lambda fh: fh.write(data))


def _create_temp(folder: int, name: str) -> tuple[int, str]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        tmp = f".{name}.{''.join(secrets.choice(_TEMP_CHARS) for _ in range(_TEMP_LENGTH))}.tmp"
        try:
            return os.open(tmp, flags, 0o600, dir_fd=folder), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {name}")


def _check_entry(folder: int, path: Path) -> None:
    try:
        info = os.stat(path.name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return
    refusal = replace_refusal(path, info)
    if refusal:
        raise InputError(refusal)


def check_out_dir(path: str | Path) -> Path:
    """Return ``path``; raise ``InputError`` unless it is a real folder or nothing yet (the writer creates it).

    A symbolic link, a file or a device there is refused: the files written inside would land somewhere else.
    """
    path = Path(path)
    info = _lstat(path, "output folder")
    if info is None:
        return path
    if not stat.S_ISDIR(info.st_mode):
        raise InputError(f"{path} is {file_kind(info.st_mode)}, not a folder; give an output folder")
    return path


def open_lock_file(path: str | Path) -> int:
    """Open (creating it 0600 when missing) the lock file ``path`` for ``flock``; return its descriptor.

    A symbolic link is never followed and anything but a regular file is refused (``StorageError``: the lock's
    folder is wrong, not the request): a lock must not truncate or write what a link points to. Other failures
    raise ``OSError`` for the caller to word.
    """
    return _open_regular(path, os.O_RDWR, 0o600, StorageError, "the lock file ")


def claim_regular_file(path: str | Path, *, what: str) -> None:
    """Make sure ``path`` is a regular file (created 0600 when missing) before a library opens it by name.

    For files such as a shared SQLite database, which ``sqlite3`` would open through a link or on a FIFO; refusals
    as ``open_lock_file``'s, naming ``what``.
    """
    os.close(_open_regular(path, os.O_RDWR, 0o600, StorageError, f"{what} "))


def open_append(path: str | Path) -> int:
    """Open ``path`` (created when missing) for appending, as a log is; return its descriptor.

    As ``open_lock_file``, but a refusal is an ``InputError`` (the user named the path) and the file gets the usual
    permissions.
    """
    return _open_regular(path, os.O_WRONLY | os.O_APPEND, 0o666, InputError, "")


def _open_regular(path: str | Path, flags: int, mode: int, refused: type[Exception], what: str) -> int:
    # O_NONBLOCK: opening a FIFO or a device must not wait for a peer; it is refused just after
    flags |= os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, mode)
    except OSError as exc:
        try:
            info = os.lstat(path)
        except OSError:
            raise exc from None
        if stat.S_ISREG(info.st_mode):
            raise
        raise refused(f"{what}{path} is {file_kind(info.st_mode)}; refusing to use it") from None
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        os.close(fd)
        raise refused(f"{what}{path} is {file_kind(kind)}; refusing to use it")
    os.set_blocking(fd, True)
    return fd
