"""How many connections a server process can hold: its open-file limit, raised to the most it may use, less
the files the engine needs and the connections accepted but not yet refused.

asyncio accepts up to ``backlog`` waiting connections in one go, before any of them reaches the protocol that
counts and refuses them, and on "Too many open files" it logs a traceback for every one it could not accept.
So the connection cap and the accept batch are sized together, below the limit, and the refusals close
connections before the descriptors run out.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

#: Descriptors kept for the engine and the server (index and session databases, models, logs, the listener).
ENGINE_FILES = 256
#: The listen queue and accept batch where descriptors are plenty (uvicorn's default backlog).
MAX_BACKLOG = 2048
#: Accept batches whose descriptors may be open at once beside the held connections: the batch being counted,
#: the next one accepted before it, and refused connections not yet closed.
BATCHES_IN_FLIGHT = 4

log = logging.getLogger("dtdialog.api")


@dataclass(frozen=True)
class ConnectionBudget:
    """Connections held open at most, and the listen backlog (= asyncio's accept batch)."""

    max_connections: int
    backlog: int


def raise_open_files_limit() -> int | None:
    """Raise this process's soft limit of open files to its hard limit; return the soft limit now (None: no
    such limit on this platform). Unprivileged, for this process and its children: the hard limit stays."""
    try:
        import resource
    except ImportError:  # Windows: no RLIMIT_NOFILE
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (OSError, ValueError):  # macOS refuses an infinite soft limit: keep the soft one
            pass
    return None if soft == resource.RLIM_INFINITY else soft


def backlog_for(limit: int | None) -> int:
    """Return the listen backlog (and accept batch) of a process that may open ``limit`` files (None: no limit)."""
    if limit is None:
        return MAX_BACKLOG
    return max(16, min(MAX_BACKLOG, max(0, limit - ENGINE_FILES) // 8))


def connection_budget(requested: int, limit: int | None = None) -> ConnectionBudget:
    """Return the budget of a process that may open ``limit`` files (None: raise this process's limit and use
    it): ``requested`` connections, lowered with a warning when the descriptors would not cover them."""
    limit = raise_open_files_limit() if limit is None else limit
    backlog = backlog_for(limit)
    if limit is None:
        return ConnectionBudget(requested, backlog)
    cap = max(1, limit - ENGINE_FILES - BATCHES_IN_FLIGHT * backlog)
    if requested <= cap:
        return ConnectionBudget(requested, backlog)
    log.warning("max_connections lowered from %d to %d: this process may open %d files (raise `ulimit -n`)",
                requested, cap, limit)
    return ConnectionBudget(cap, backlog)
