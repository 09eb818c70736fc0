"""Readiness (``GET /readyz``): try what a turn needs, the session store and the answer index, within a short bound,
and reuse the answer for a second so a storm of polls cannot load the databases.

A turn writes its session and reads the index, so the probe takes the session store's write lock (and lets go at
once: nothing is written) and reads a row of the index's answers and full-text tables, each on a fresh connection
whose busy timeout is what is left of the bound: a lock another process holds fails the probe instead of holding it.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Protocol

from dtdialog.dialogue.session_store import probe_store
from index.sqlite_index import probe_file


class EngineService(Protocol):
    """What the probe reads of ``dtdialog.api.service.EngineService`` (named here, so the two do not import each other)."""

    settings: Any

    def runtime_if_loaded(self) -> Any: ...

#: seconds one probe of the session store and the index may take in all
READINESS_BOUND_S = 1.0
#: seconds a probe's answer is reused (polls in between are answered from it, without touching a file)
READINESS_CACHE_S = 1.0
#: the least wait any one step of a probe gets, so a slow first step does not leave the next one no time at all
_MIN_STEP_S = 0.05


def storage_problem(service: EngineService, *, bound: float = READINESS_BOUND_S) -> str | None:
    """Return None when a turn could use the session store and the index now, else which one cannot and why."""
    deadline = time.monotonic() + bound

    def left() -> float:
        return max(_MIN_STEP_S, deadline - time.monotonic())

    runtime = service.runtime_if_loaded()
    store = runtime.store if runtime is not None else None
    index = runtime.index if runtime is not None else None
    # this process's own locks first: a thread that never lets go of one stalls every turn behind it
    for name, part in (("session store", store), ("answer index", index)):
        if part is not None and not part.lock_free(left()):
            return f"the {name} stays locked"
    sessions = store.path if store is not None else service.settings.sessions_path
    # before the first load a missing file is not a fault: the load creates the store (or builds the index)
    problem = probe_store(sessions, left()) if store is not None or sessions.is_file() else None
    if problem is not None:
        return f"the session store {problem}"
    if index is not None:
        problem = index.probe(left())
    elif service.settings.backend == "sqlite" and _is_file(service.settings.index_path):
        problem = probe_file(service.settings.index_path, left())
    return None if problem is None else f"the answer index {problem}"


def _is_file(path: Path | None) -> bool:
    return path is not None and path.is_file()


class ReadinessProbe:
    """``storage_problem`` of one service, probed at most once per ``ttl`` seconds however many ask. Thread-safe."""

    def __init__(self, service: EngineService, *, ttl: float = READINESS_CACHE_S) -> None:
        self.service = service
        self.ttl = ttl
        self._lock = threading.Lock()
        self._checked_at: float | None = None
        self._problem: str | None = None

    def recent(self) -> tuple[bool, str | None]:
        """Return (True, the last answer) when it is younger than ``ttl``; else (False, None). Never blocks."""
        checked_at, problem = self._checked_at, self._problem
        if checked_at is None or time.monotonic() - checked_at >= self.ttl:
            return False, None
        return True, problem

    def check(self) -> str | None:
        """Return the current answer, probing unless another caller just did (callers wait for a probe running)."""
        with self._lock:
            fresh, problem = self.recent()
            if fresh:
                return problem
            problem = storage_problem(self.service)
            # the answer is written before its time: ``recent`` never pairs a new time with an old answer
            self._problem, self._checked_at = problem, time.monotonic()
            return problem
