"""Quota state shared by the worker processes of one server (``dtdialog serve --workers N``, N > 1).

With one counter per process a client would get N times its rate, and N creations could pass the session cap
together. Here the rates are counted in one SQLite file (``SharedRates``: a moving window, one row per hit,
checked and counted in one write transaction) and a session is admitted under a file lock
(``admission_lock``), both in the folder ``ApiSettings.shared_dir`` that ``dtdialog serve`` gives its workers.
The engine budget and the fair gate stay per process (docs/api.md, "Many workers").
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from parsers import storage
from parsers.files import claim_regular_file
from parsers.storage import storage_errors

RATES_FILE = "rates.sqlite"
ADMISSION_FILE = "sessions-admission.lock"
#: Seconds between two deletions of hits older than every window.
_PRUNE_EVERY_S = 30.0
_SCHEMA = ("CREATE TABLE IF NOT EXISTS hits (kind TEXT NOT NULL, client TEXT NOT NULL, at REAL NOT NULL)",
           "CREATE INDEX IF NOT EXISTS hits_by_client ON hits(kind, client, at)")


class SharedRates:
    """Moving-window rate counts in the SQLite file ``folder/rates.sqlite``, shared by processes. Thread-safe."""

    def __init__(self, folder: Path, *, longest_window: float) -> None:
        self.path = Path(folder) / RATES_FILE
        self.longest_window = longest_window
        self._local = threading.local()
        self._pruned = 0.0
        with self._storage("opening"):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            claim_regular_file(self.path, what="the shared rate counters")
            conn = self._conn()
            with conn:
                for statement in _SCHEMA:
                    conn.execute(statement)

    def _storage(self, doing: str) -> AbstractContextManager[None]:
        return storage_errors(f"{doing} the shared rate counters {self.path}")

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # isolation_level None: the transaction is this module's own BEGIN IMMEDIATE (check and count as one)
            conn = sqlite3.connect(str(self.path), timeout=storage.BUSY_TIMEOUT_S, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=OFF")  # counters of the last minutes: a crash may lose a few, harmlessly
            self._local.conn = conn
        return conn

    def hit(self, kind: str, client: str, items: Sequence[Any]) -> tuple[Any, float] | None:
        """Count one ``kind`` request of ``client`` unless it is over one of ``items`` (``limits`` rate items).

        Return None when counted, else ``(the item over, epoch seconds when a request will pass again)``; the
        check and the count are one write transaction, so N processes never admit more than the rate together.
        """
        now = time.time()
        with self._storage("counting in"):
            conn = self._conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                over = self._over(conn, kind, client, items, now)
                if over is None:
                    conn.execute("INSERT INTO hits(kind, client, at) VALUES (?, ?, ?)", (kind, client, now))
                if now - self._pruned > _PRUNE_EVERY_S:
                    self._pruned = now
                    conn.execute("DELETE FROM hits WHERE at < ?", (now - self.longest_window,))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return over

    @staticmethod
    def _over(conn: sqlite3.Connection, kind: str, client: str, items: Sequence[Any],
              now: float) -> tuple[Any, float] | None:
        for item in items:
            window = float(item.get_expiry())
            # the hit whose ageing-out brings the count below the limit: the amount-th newest in the window
            row = conn.execute("SELECT at FROM hits WHERE kind = ? AND client = ? AND at > ? ORDER BY at DESC "
                               "LIMIT 1 OFFSET ?", (kind, client, now - window, int(item.amount) - 1)).fetchone()
            if row is not None:
                return item, float(row[0]) + window
        return None


def admission_lock(folder: Path, timeout: float) -> AbstractContextManager[None]:
    """Return the lock that makes counting the live sessions and creating one a single step across processes."""
    from dtdialog.runtime.process_lock import file_lock

    return file_lock(Path(folder) / ADMISSION_FILE, timeout=timeout, what="the session admission")


def longest_window(items: Iterator[Any]) -> float:
    """Return the longest window (seconds) of the ``limits`` rate ``items`` (60 when there are none)."""
    return max((float(i.get_expiry()) for i in items), default=60.0)
