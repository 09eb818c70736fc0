"""One lock per session: turns of one session run one after another, turns of different sessions side by side."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any


class SessionLocks:
    """The locks of the sessions in use, dropped when no thread holds or waits for one (none kept forever)."""

    def __init__(self) -> None:
        self._locks: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
        self._guard = threading.Lock()

    @contextmanager
    def hold(self, session_id: str,
             across: Callable[[str], AbstractContextManager[Any]] | None = None) -> Iterator[None]:
        """Hold ``session_id``'s lock, re-entrant within a thread.

        ``across``: the session's lock across processes (``SessionStore.turn_lock``; None: this process only),
        taken by the outermost hold.
        """
        with self._guard:
            lock = self._locks.get(session_id)
            if lock is None:
                lock = _SessionLock()
                self._locks[session_id] = lock
        with lock.rlock:  # the local reference keeps the lock in the weak dictionary while held or awaited
            if lock.depth:  # held by this thread already, and so across processes too
                lock.depth += 1
                try:
                    yield
                finally:
                    lock.depth -= 1
                return
            # every acquisition of the file lock is a descriptor of its own: a nested one would wait for itself
            with across(session_id) if across is not None else nullcontext():
                lock.depth = 1
                try:
                    yield
                finally:
                    lock.depth = 0


class _SessionLock:
    """One session's lock within the process, and how deep its holder holds it."""

    __slots__ = ("rlock", "depth", "__weakref__")

    def __init__(self) -> None:
        self.rlock = threading.RLock()
        self.depth = 0
