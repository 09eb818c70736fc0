"""Durable session storage: one SQLite file (WAL), one connection per thread, a JSON row per session.

Every turn is saved in its own transaction, so a crash or restart loses at most the turn
being processed; a new ``DialogueManager`` on the same file continues every session.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

from dtdialog.session import SessionNotFoundError, SessionRecord
from parsers.errors import InputError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    data TEXT NOT NULL,
    state TEXT NOT NULL,
    updated REAL NOT NULL
)
"""


class SessionStore:
    """Sessions in the SQLite file ``path`` (created with its folder when missing). Thread-safe."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create session store folder {self.path.parent}: {exc.strerror}") from None
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        conn = self._conn()
        with conn:
            conn.execute(_SCHEMA)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute("PRAGMA busy_timeout=30000")
            except sqlite3.DatabaseError as exc:
                raise InputError(f"cannot open session store {self.path}: {exc}") from None
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def save(self, record: SessionRecord) -> None:
        """Write ``record`` (insert or replace) in one transaction."""
        record.updated = time.time()
        data = json.dumps(record.to_dict(), ensure_ascii=False)
        conn = self._conn()
        with conn:
            conn.execute("INSERT INTO sessions(id, data, state, updated) VALUES (?, ?, ?, ?) "
                         "ON CONFLICT(id) DO UPDATE SET data=excluded.data, state=excluded.state, "
                         "updated=excluded.updated", (record.id, data, record.state, record.updated))

    def load(self, session_id: str) -> SessionRecord:
        """Return the session ``session_id``; raises ``SessionNotFoundError`` when there is none."""
        row = self._conn().execute("SELECT data FROM sessions WHERE id = ?", (str(session_id),)).fetchone()
        if row is None:
            raise SessionNotFoundError(f"no session {session_id!r} in {self.path}")
        try:
            return SessionRecord.from_dict(json.loads(row[0]))
        except json.JSONDecodeError:
            raise InputError(f"session {session_id!r} in {self.path} is corrupt") from None

    def exists(self, session_id: str) -> bool:
        """Return True when a session ``session_id`` is stored."""
        return self._conn().execute("SELECT 1 FROM sessions WHERE id = ?", (str(session_id),)).fetchone() is not None

    def ids(self) -> list[str]:
        """Return every stored session id, most recently updated first."""
        return [r[0] for r in self._conn().execute("SELECT id FROM sessions ORDER BY updated DESC")]

    def delete(self, session_id: str) -> bool:
        """Delete a session; return True when it existed."""
        conn = self._conn()
        with conn:
            return conn.execute("DELETE FROM sessions WHERE id = ?", (str(session_id),)).rowcount > 0

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
