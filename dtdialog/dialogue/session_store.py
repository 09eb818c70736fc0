"""Durable session storage: one SQLite file (WAL), one connection per thread, a JSON row per session
(with the digest of its access token in a column of its own) and an append-only row per turn trace.

Every turn is saved in its own transaction, so a crash or restart loses at most the turn
being processed; a new ``DialogueManager`` on the same file continues every session.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from urllib.parse import quote

from dtdialog.dialogue.session import SessionNotFoundError, SessionRecord
from parsers import storage
from parsers.errors import InputError, StorageReadOnlyError
from parsers.storage import storage_error, storage_errors

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS sessions (
        id TEXT PRIMARY KEY,
        data TEXT NOT NULL,
        state TEXT NOT NULL,
        updated REAL NOT NULL
    )""",
    # traces are append-only, one row per turn, so a turn writes only its own trace, not the history
    """CREATE TABLE IF NOT EXISTS traces (
        session_id TEXT NOT NULL,
        turn INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (session_id, turn)
    )""",
)
#: a store made before session tokens gets the column on opening (its sessions have none: only the API key reads them)
_TOKEN_COLUMN = "ALTER TABLE sessions ADD COLUMN token TEXT"
#: ``load`` returns at most this many of the latest traces by default.
MAX_LOADED_TRACES = 50
#: Seconds a turn waits for the same session's turn in another process (a turn takes well under a second;
#: beyond this the other process is stuck, and the turn gets a 503 instead of hanging).
TURN_LOCK_TIMEOUT_S = 60.0


def probe_store(path: Path, timeout: float) -> str | None:
    """Return None when the session store at ``path`` can be read and its write lock taken within ``timeout``
    seconds, else why not in a few words (a readiness probe: every turn writes its session; nothing is written)."""
    uri = f"file:{quote(str(path.resolve()))}?mode=rw"  # never creates the file
    return storage.probe_sqlite(lambda: sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None),
                                ("BEGIN IMMEDIATE", "SELECT 1 FROM sessions LIMIT 1", "ROLLBACK"))


def _add_token_column(conn: sqlite3.Connection) -> None:
    if any(col[1] == "token" for col in conn.execute("PRAGMA table_info(sessions)")):
        return
    try:
        conn.execute(_TOKEN_COLUMN)
    except sqlite3.OperationalError as exc:
        if "duplicate column" not in str(exc):  # a duplicate: another process added it since the check
            raise


class SessionStore:
    """Sessions in the SQLite file ``path`` (created with its folder when missing). Thread-safe."""

    def __init__(self, path: str | Path, *, max_traces: int = MAX_LOADED_TRACES) -> None:
        self.path = Path(path)
        self.max_traces = max_traces
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise storage_error(exc, what=f"cannot create session store folder {self.path.parent}") or InputError(
                f"cannot create session store folder {self.path.parent}: {exc.strerror}") from None
        if not os.access(self.path.parent, os.W_OK):
            # SQLite needs the folder for its journal files even to read a WAL database: say so, not "unable to open"
            raise StorageReadOnlyError(f"the session store folder {self.path.parent} is read-only; give --sessions "
                                       "a writable path")
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        with self._storage("opening"):
            conn = self._conn()
            with conn:
                for statement in _SCHEMA:
                    conn.execute(statement)
                _add_token_column(conn)

    def _storage(self, doing: str) -> AbstractContextManager[None]:
        """Turn a storage fault (disk full, read-only, locked for longer than the wait) into a one-line error."""
        return storage_errors(f"{doing} the session store {self.path}")

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # every wait for another process's lock is bounded: after BUSY_TIMEOUT_S the call fails, never hangs
            conn = sqlite3.connect(str(self.path), timeout=storage.BUSY_TIMEOUT_S, check_same_thread=False)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.Error:
                conn.close()
                raise
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    @contextmanager
    def turn_lock(self, session_id: str, *, timeout: float = TURN_LOCK_TIMEOUT_S) -> Iterator[None]:
        """Hold ``session_id``'s lock across processes (``dtdialog serve --workers N``, ``dtdialog chat``) while the
        block runs: an ``flock`` on one of the lock files in the folder beside the store (``<store>-locks``)."""
        from dtdialog.runtime.process_lock import bucket_path, file_lock

        with self._storage("locking a session of"):
            path = bucket_path(self.path.with_name(self.path.name + "-locks"), str(session_id))
        with file_lock(path, timeout=timeout, what=f"session {str(session_id)[:40]!r}"):
            yield

    def lock_free(self, timeout: float) -> bool:
        """Return True when this store's lock can be taken within ``timeout`` seconds (a readiness probe)."""
        if not self._lock.acquire(timeout=timeout):
            return False
        self._lock.release()
        return True

    def probe(self, timeout: float) -> str | None:
        """Return None when a turn could be saved now, else why not (``probe_store``)."""
        return probe_store(self.path, timeout)

    def save(self, record: SessionRecord, *, keep_traces: int | None = None) -> None:
        """Write ``record`` (insert or replace) in one transaction.

        Only traces newer than the stored ones are written (each serialised once, never re-read or
        copied), so a turn's cost does not grow with the session's history; a session keeps its
        latest ``keep_traces`` traces (default: the store's ``max_traces``), older rows are deleted.
        """
        record.updated = time.time()
        body = record.to_dict()
        traces = body.pop("traces", [])
        data = json.dumps(body, ensure_ascii=False)
        keep = self.max_traces if keep_traces is None else keep_traces
        with self._storage("writing"), self._conn() as conn:
            conn.execute("INSERT INTO sessions(id, data, state, updated) VALUES (?, ?, ?, ?) "
                         "ON CONFLICT(id) DO UPDATE SET data=excluded.data, state=excluded.state, "
                         "updated=excluded.updated", (record.id, data, record.state, record.updated))
            last = conn.execute("SELECT MAX(turn) FROM traces WHERE session_id = ?", (record.id,)).fetchone()[0] or 0
            fresh = [t for t in traces if isinstance(t, dict) and int(t.get("turn", 0)) > last]
            if not fresh:
                return
            conn.executemany("INSERT OR REPLACE INTO traces(session_id, turn, data) VALUES (?, ?, ?)",
                             [(record.id, int(t["turn"]), json.dumps(t, ensure_ascii=False)) for t in fresh])
            newest = max(int(t["turn"]) for t in fresh)
            conn.execute("DELETE FROM traces WHERE session_id = ? AND turn <= ?", (record.id, newest - keep))

    def load(self, session_id: str, *, traces: bool = True) -> SessionRecord:
        """Return the session ``session_id``; raises ``SessionNotFoundError`` when there is none.

        ``traces=False`` leaves ``record.traces`` empty: a turn only appends its own trace, so the
        manager never reads (and parses) the stored history; ``save`` keeps the stored traces.
        """
        with self._storage("reading"):
            conn = self._conn()
            row = conn.execute("SELECT data FROM sessions WHERE id = ?", (str(session_id),)).fetchone()
            if row is None:
                raise self.not_found(session_id)
            stored = conn.execute("SELECT data FROM traces WHERE session_id = ? ORDER BY turn DESC LIMIT ?",
                                  (str(session_id), self.max_traces)).fetchall() if traces else []
        try:
            data = json.loads(row[0])
            data["traces"] = [json.loads(r[0]) for r in reversed(stored)]
        except (json.JSONDecodeError, RecursionError):
            raise InputError(f"session {session_id!r} in {self.path} is corrupt") from None
        return SessionRecord.from_dict(data)

    def set_token(self, session_id: str, digest: str | None) -> None:
        """Store ``digest``, the digest of the token that gives access to ``session_id`` (None: no token)."""
        with self._storage("writing"), self._conn() as conn:
            if conn.execute("UPDATE sessions SET token = ? WHERE id = ?", (digest, str(session_id))).rowcount == 0:
                raise self.not_found(session_id)

    def token(self, session_id: str) -> str | None:
        """Return the stored token digest of ``session_id`` (None: it has none); reads nothing else of the session.

        Raises ``SessionNotFoundError`` when there is no such session.
        """
        with self._storage("reading"):
            row = self._conn().execute("SELECT token FROM sessions WHERE id = ?", (str(session_id),)).fetchone()
        if row is None:
            raise self.not_found(session_id)
        return row[0]

    def not_found(self, session_id: str) -> SessionNotFoundError:
        """Return the error of an unknown ``session_id`` (the same for every caller, so none tells more)."""
        return SessionNotFoundError(f"no session {session_id!r} in {self.path}")

    def exists(self, session_id: str) -> bool:
        """Return True when a session ``session_id`` is stored."""
        with self._storage("reading"):
            return self._conn().execute("SELECT 1 FROM sessions WHERE id = ?", (str(session_id),)).fetchone() is not None

    def ids(self) -> list[str]:
        """Return every stored session id, most recently updated first."""
        with self._storage("reading"):
            return [r[0] for r in self._conn().execute("SELECT id FROM sessions ORDER BY updated DESC")]

    def delete(self, session_id: str) -> bool:
        """Delete a session; return True when it existed."""
        with self._storage("writing"), self._conn() as conn:
            conn.execute("DELETE FROM traces WHERE session_id = ?", (str(session_id),))
            return conn.execute("DELETE FROM sessions WHERE id = ?", (str(session_id),)).rowcount > 0

    def count(self, *, updated_since: float | None = None) -> int:
        """Return how many sessions are stored (only those updated at or after ``updated_since`` when given)."""
        with self._storage("reading"):
            if updated_since is None:
                return int(self._conn().execute("SELECT COUNT(*) FROM sessions").fetchone()[0])
            return int(self._conn().execute("SELECT COUNT(*) FROM sessions WHERE updated >= ?",
                                            (float(updated_since),)).fetchone()[0])

    def purge(self, *, updated_before: float) -> int:
        """Delete every session (and its traces) last updated before ``updated_before`` (epoch s); return how many.

        One transaction: a session is removed whole or not at all.
        """
        with self._storage("writing"), self._conn() as conn:
            conn.execute("DELETE FROM traces WHERE session_id IN (SELECT id FROM sessions WHERE updated < ?)",
                         (float(updated_before),))
            return conn.execute("DELETE FROM sessions WHERE updated < ?", (float(updated_before),)).rowcount

    def close(self) -> None:
        """Close every connection this store opened (in any thread)."""
        with self._lock:
            for conn in self._all:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._all.clear()
        self._local = threading.local()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
