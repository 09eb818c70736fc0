"""Version history of stored answers: the ``doc_history`` table of a SQLite answer index.

Why: an answer replaced through the API (``POST /index/documents`` under an existing id) must be
recoverable, so an overwrite (mistaken or hostile) can be undone. Every replacement copies the old
stored document, byte for byte, into ``doc_history`` in the same transaction as the replacement;
a rebuild carries the table over (``SqliteIndex.import_history``).

The functions take an open ``sqlite3`` connection and never commit: the caller owns the transaction.
An index file written before the table existed simply has no history (``versions`` returns ``[]``).
"""

from __future__ import annotations

import json
import sqlite3
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

#: Older versions beyond this many per answer are deleted when a new one is recorded.
KEEP_VERSIONS = 20
#: What parsing derives from an answer. A re-parse (a rebuild with another parser or model) changes these and not
#: the answer, so it is not a new version: the history would fill with copies of unchanged texts.
DERIVED_FIELDS = frozenset({"keywords", "entities", "relations", "rr_edu", "tree"})

SCHEMA = """
CREATE TABLE IF NOT EXISTS doc_history(
    id TEXT NOT NULL, version INTEGER NOT NULL, replaced REAL NOT NULL, doc BLOB NOT NULL,
    PRIMARY KEY(id, version)) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class StoredVersion:
    """One earlier version of an answer: its number (1 = oldest kept), when it was replaced, the stored blob."""

    doc_id: str
    version: int
    replaced: float
    blob: bytes


def same_answer(a: bytes, b: bytes) -> bool:
    """Return True when two stored documents (zlib JSON, ``index.sqlite_index.encode_doc``) differ at most in
    what parsing derives (``DERIVED_FIELDS``)."""
    if a == b:
        return True
    try:
        da, db = (json.loads(zlib.decompress(x)) for x in (a, b))
    except (zlib.error, ValueError):
        return False
    return {k: v for k, v in da.items() if k not in DERIVED_FIELDS} == {k: v for k, v in db.items() if k not in DERIVED_FIELDS}


def record(conn: sqlite3.Connection, doc_id: str, blob: bytes, *, replaced: float | None = None) -> int:
    """Store ``blob`` as the newest earlier version of ``doc_id``; return its version number.

    A document equal to the newest stored version but for its parse (``same_answer``) is not stored twice (a
    rebuild that puts an API edit back over the same corpus answer would otherwise fill the history with copies).
    """
    row = conn.execute("SELECT version, doc FROM doc_history WHERE id = ? ORDER BY version DESC LIMIT 1",
                       (doc_id,)).fetchone()
    if row is not None and same_answer(bytes(row[1]), blob):
        return int(row[0])
    version = int(row[0]) + 1 if row is not None else 1
    conn.execute("INSERT INTO doc_history(id, version, replaced, doc) VALUES (?, ?, ?, ?)",
                 (doc_id, version, time.time() if replaced is None else replaced, blob))
    conn.execute("DELETE FROM doc_history WHERE id = ? AND version <= ?", (doc_id, version - KEEP_VERSIONS))
    return version


def versions(conn: sqlite3.Connection, doc_id: str) -> list[StoredVersion]:
    """Return the earlier versions of ``doc_id``, newest first (``[]`` on an index without the table)."""
    try:
        rows = conn.execute("SELECT version, replaced, doc FROM doc_history WHERE id = ? ORDER BY version DESC",
                            (doc_id,)).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise
    return [StoredVersion(doc_id, int(v), float(t), bytes(b)) for v, t, b in rows]


def dump(conn: sqlite3.Connection) -> list[StoredVersion]:
    """Return every stored version of every answer, oldest first per answer."""
    try:
        rows = conn.execute("SELECT id, version, replaced, doc FROM doc_history ORDER BY id, version").fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise
    return [StoredVersion(str(i), int(v), float(t), bytes(b)) for i, v, t, b in rows]


def load(conn: sqlite3.Connection, entries: Iterable[StoredVersion]) -> int:
    """Append ``entries`` (oldest first) after any history the table already holds; return how many were stored."""
    count = 0
    for entry in entries:
        record(conn, entry.doc_id, entry.blob, replaced=entry.replaced)
        count += 1
    return count
