"""The files of a SQLite index on disk: the output check, the build lock, side files named by generation, leftovers.

**Side files.** Data derived from the answers is kept beside the index file (``answers.sqlite``):
``answers.sqlite.dense-<generation>.npy`` and ``.dense-<generation>.ids.json`` (``index.dense_store``) and
``answers.sqlite.sg-<generation>.json`` (``index.sg_store``), and for large stores the ANN graph
``answers.sqlite.dense-<generation>.ann`` (``index.dense_ann``), where ``generation`` is the random token every
write stamps into the index (``SqliteIndex.generation``). A reader asks the index it opened for its generation
and reads the files of that generation only, so the SQLite file is the one atomic pointer: ``index.builder``
writes the new index's side files first, under names no reader of the old index looks at, and renames the
SQLite file over the old one last. A reader sees the old index with the old files or the new index with the
new files, never one with the other's. Files written before this scheme (``answers.sqlite.dense.npy``,
``.dense.ids.json``, ``.sg.json``) record their generation inside and are still read when it matches.

**Build lock.** ``build_lock(out)`` holds ``fcntl.flock`` on ``.answers.sqlite.lock`` beside the index for the
whole build, so two builds of one file never both "succeed" with the last rename winning; the second waits
up to ``timeout`` seconds, then fails with ``IndexBusyError``. The lock file is removed on release (a
waiter that locked a removed file notices and retries), and a kill leaves only that file, reused next time.
A lock path that is a symbolic link or not a regular file is refused (``parsers.files.open_lock_file``).

**Leftovers.** A killed build leaves its temporary database (``.answers.sqlite.<8 chars>.tmp`` and its
``-wal``/``-shm``/``-journal``), temporary side files (``.answers.sqlite.dense-<g>.npy.<8 chars>.tmp``) and side
files of a generation that never went live. ``clean_leftovers`` removes exactly those names, under the lock,
at the start of the next build; the live index's own ``-wal``/``-shm`` are never touched.
"""

from __future__ import annotations

import fcntl
import os
import re
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from parsers.errors import DTDialogError, InputError, ModelNotAvailableError, StorageError
from parsers.files import check_replaceable, open_lock_file

#: What a generation token looks like (``lower(hex(randomblob(8)))``); anything else never becomes part of a file name.
_GENERATION = re.compile(r"[0-9a-f]{1,64}")
#: The random part of a ``tempfile.mkstemp`` name.
_RANDOM = r"[a-z0-9_]{8}"
#: (kind, extension) of every side file.
SIDE_FILES = (("dense", ".npy"), ("dense", ".ids.json"), ("dense", ".ann"), ("sg", ".json"))
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: How often a waiting build retries the lock.
_POLL_SECONDS = 0.1


T = TypeVar("T")


class IndexBusyError(DTDialogError, RuntimeError):
    """Another build holds the lock of the index file being written."""


# --- side files named by generation ---------------------------------------------------------------------------
def side_path(index_path: str | Path, kind: str, ext: str, generation: str) -> Path:
    """Return the ``kind`` side file (``dense``/``sg``) with extension ``ext`` for ``generation`` of the index.

    An empty generation gives the unversioned name written before generations named the files.
    """
    if not generation:
        return Path(f"{index_path}.{kind}{ext}")
    if not _GENERATION.fullmatch(generation):
        raise InputError(f"index generation {generation[:80]!r} is not a hex token; rebuild the index")
    return Path(f"{index_path}.{kind}-{generation}{ext}")


def index_generation(index_path: str | Path) -> str:
    """Return the generation stamped in the SQLite index file at ``index_path`` ("" when none can be read).

    For callers holding only a path; a reader with an open index asks it (``index.generation()``), so the
    token comes from the snapshot it reads.
    """
    path = Path(index_path)
    if not path.is_file():
        return ""
    try:
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True, timeout=5)
        try:
            row = conn.execute("SELECT value FROM index_meta WHERE key = 'generation'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return ""
    return str(row[0]) if row else ""


def side_files(index_path: str | Path, kind: str | None = None) -> dict[str, list[Path]]:
    """Return the existing side files (of ``kind``, default all) of the index at ``index_path`` by generation.

    Generation "" holds the unversioned names.
    """
    index_path = Path(index_path)
    pattern = re.compile(re.escape(index_path.name) + r"\.(dense|sg)(?:-([0-9a-f]+))?(\.npy|\.ids\.json|\.ann|\.json)")
    found: dict[str, list[Path]] = {}
    try:
        names = os.listdir(index_path.parent)
    except OSError:
        return found
    for name in names:
        match = pattern.fullmatch(name)
        if match and (match.group(1), match.group(3)) in SIDE_FILES and kind in (None, match.group(1)):
            found.setdefault(match.group(2) or "", []).append(index_path.parent / name)
    return found


def newest_generation(index_path: str | Path, kind: str, ext: str) -> str | None:
    """Return the generation whose ``kind``/``ext`` side file was written last, or None when there is none.

    What a refresh starts from when the current generation has no file yet (only changed answers are redone).
    """
    candidates = []
    for generation in side_files(index_path, kind):
        try:
            candidates.append((side_path(index_path, kind, ext, generation).stat().st_mtime, generation))
        except OSError:
            continue
    return max(candidates)[1] if candidates else None


def load_side_store(index_path: str | Path, kind: str, ext: str, *, generation: str | None, latest: bool,
                    read: Callable[[str], T], generation_of: Callable[[T], str], missing: str) -> T:
    """Return the derived store of ``kind`` (its last-written file has ``ext``) for a generation of the index.

    The rule every derived store follows: the file named by ``generation`` (default: the index file's current
    one); else an unversioned file that records that generation; with ``latest``, else the newest file of any
    generation (what a refresh starts from). ``read(generation)`` reads one, ``generation_of`` says what it
    records. Raises ``ModelNotAvailableError(missing)`` when there is none, ``InputError`` for a file whose
    name and content disagree (or that ``read`` finds corrupt).
    """
    if generation is None:
        generation = index_generation(index_path)
    tried = [generation, ""] if generation else [""]
    newest = newest_generation(index_path, kind, ext) if latest else None
    for candidate in [*tried, *([newest] if newest is not None and newest not in tried else [])]:
        if not side_path(index_path, kind, ext, candidate).is_file():
            continue
        store = read(candidate)
        if candidate and generation_of(store) != candidate:
            raise InputError(f"corrupt {kind} file {side_path(index_path, kind, ext, candidate)}: "
                             "made for another index generation")
        if latest or candidate == generation or generation_of(store) == generation:
            return store
    raise ModelNotAvailableError(missing)


def has_side_store(index_path: str | Path, kind: str, ext: str, *, generation: str | None,
                   load: Callable[[str], object]) -> bool:
    """Return True when ``load_side_store`` would find the ``kind`` store of ``generation`` (damaged ones count).

    Cheap for a file named by its generation; an unversioned one is read (``load(generation)``) to see
    what generation it records.
    """
    if generation is None:
        generation = index_generation(index_path)
    if side_path(index_path, kind, ext, generation).is_file():
        return True
    if not generation or not side_path(index_path, kind, ext, "").is_file():
        return False
    try:
        load(generation)
    except ModelNotAvailableError:
        return False
    except InputError:
        return True  # there, but damaged: loading says so
    return True


def prune_side_files(index_path: str | Path, keep: str, *, kinds: tuple[str, ...] = ("dense", "sg"),
                     locked: bool = False) -> list[Path]:
    """Remove the ``kinds`` side files of generations other than ``keep``; return what was removed.

    A kind that has no file of ``keep`` yet (an index built without ``--dense``, or phrases not made yet)
    keeps its newest other file as the base a later refresh starts from (only changed answers are redone).
    Without ``locked`` (a reader after a refresh) nothing is removed while a build holds the lock, or when
    the index on disk is no longer at ``keep``.
    """
    index_path = Path(index_path)
    if not locked:
        try:
            with build_lock(index_path, timeout=0):
                if index_generation(index_path) != keep:
                    return []
                return prune_side_files(index_path, keep, kinds=kinds, locked=True)
        except (IndexBusyError, InputError, StorageError, OSError):
            return []
    removed: list[Path] = []
    for kind in kinds:
        by_generation = side_files(index_path, kind)
        stale = [g for g in by_generation if g != keep]
        if keep not in by_generation and stale:
            stale.remove(max(stale, key=lambda g: max(_mtime(p) for p in by_generation[g])))
        for generation in stale:
            for path in by_generation[generation]:
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


# --- the output path -------------------------------------------------------------------------------------------
def is_index_file(path: str | Path) -> bool:
    """Return True when ``path`` is a regular file holding a dtdialog index (any schema version)."""
    path = Path(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False  # never open a device, FIFO or socket: a read could block or have effects
        with open(path, "rb") as fh:
            if fh.read(len(_SQLITE_MAGIC)) != _SQLITE_MAGIC:
                return False
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True, timeout=5)
        try:
            row = conn.execute("SELECT value FROM index_meta WHERE key = 'kind'").fetchone()
        finally:
            conn.close()
    except (OSError, sqlite3.Error):
        return False
    return bool(row) and row[0] == "dtdialog-answers"


def check_output(out: str | Path, *, force: bool = False) -> None:
    """Raise ``InputError`` unless ``out`` may be replaced by a new index.

    Allowed: nothing there, a dtdialog index (or a symbolic link to one: the link is replaced), and with
    ``force`` any other regular file. Refused (``parsers.files.check_replaceable``): directories, devices, FIFOs,
    sockets, links to any of those or to a non-index file, broken links.
    """
    out = Path(out)
    if out.is_symlink() and is_index_file(out):
        return
    if check_replaceable(out, wanted="a dtdialog index") is None or force or is_index_file(out):
        return
    raise InputError(f"{out} exists and is not a dtdialog index; refusing to replace it "
                     "(--force replaces a regular file)")


# --- the build lock ----------------------------------------------------------------------------------------------
def lock_path(out: str | Path) -> Path:
    """Return the lock file of builds writing ``out``."""
    out = Path(out)
    return out.parent / f".{out.name}.lock"


@contextmanager
def build_lock(out: str | Path, *, timeout: float = 0.0, notify: Callable[[str], None] | None = None) -> Iterator[Path]:
    """Hold the build lock of ``out`` while the block runs; wait at most ``timeout`` seconds for it.

    ``notify`` gets one line when the wait starts, so a bounded wait does not look like a hang.
    Raises ``IndexBusyError`` (naming the holder's pid) when another build keeps it longer, ``InputError`` when
    the lock file cannot be created (e.g. a read-only folder).
    """
    path = lock_path(out)
    deadline = time.monotonic() + max(0.0, timeout)
    fd = _acquire(path, deadline, out, notify)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield path
    finally:
        # Unlink while still holding the lock; a waiter that locked the old file sees it is gone and retries.
        try:
            path.unlink(missing_ok=True)
        finally:
            os.close(fd)


def _acquire(path: Path, deadline: float, out: Path, notify: Callable[[str], None] | None) -> int:
    while True:
        try:
            fd = open_lock_file(path)
        except OSError as exc:
            raise InputError(f"cannot create the build lock {path}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            if time.monotonic() >= deadline:
                raise IndexBusyError(f"another build (pid {holder}) is writing {out}; wait for it to finish or "
                                     "give a longer --wait") from None
            if notify is not None:
                notify(f"waiting up to {deadline - time.monotonic():.0f}s for another build (pid {holder}) of {out}")
                notify = None
            time.sleep(_POLL_SECONDS)
            continue
        except BaseException:
            os.close(fd)
            raise
        try:
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # the previous holder removed this file between our open and our lock: lock the new one


def _holder(fd: int) -> str:
    try:
        return os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
    except OSError:
        return "unknown"


# --- leftovers of killed builds ----------------------------------------------------------------------------------
def temp_prefix(out: str | Path) -> str:
    """Return the prefix of the builder's temporary database beside ``out`` (``mkstemp`` adds 8 characters)."""
    return f".{Path(out).name}."


def clean_leftovers(out: str | Path) -> list[Path]:
    """Remove what killed builds of ``out`` left; call it holding ``build_lock(out)``. Return what was removed.

    Only dtdialog's own names are matched: the builder's temporary database and its journal files, temporary
    side files of ``parsers.files.atomic_write``, and side files of generations that are not live.
    """
    out = Path(out)
    name = re.escape(out.name)
    temps = re.compile(rf"\.{name}\.(?:{_RANDOM}\.tmp(?:-wal|-shm|-journal)?"
                       rf"|(?:dense(?:-[0-9a-f]+)?(?:\.npy|\.ids\.json|\.ann)|sg(?:-[0-9a-f]+)?\.json)\.{_RANDOM}\.tmp)")
    removed: list[Path] = []
    try:
        names = os.listdir(out.parent)
    except OSError:
        return removed
    live = index_generation(out)
    # a server refreshing the live generation's side files may be writing their temp files right now: keep them
    busy = (f".{out.name}.dense-{live}.", f".{out.name}.sg-{live}.") if live else ()
    for entry in names:
        if temps.fullmatch(entry) and not entry.startswith(busy):
            path = out.parent / entry
            path.unlink(missing_ok=True)
            removed.append(path)
    if out.is_file():
        removed.extend(prune_side_files(out, live, locked=True))
        return removed
    for paths in side_files(out).values():  # no index: every side file beside the name is a leftover
        for path in paths:
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed
