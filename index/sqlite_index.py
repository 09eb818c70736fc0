"""The embedded answer index: SQLite FTS5 on disk, in WAL mode.

Tables
    ``docs``           one row per answer: id, dialogue id, position, the full document JSON (incl. DT)
    ``doc_relations``  (relation, doc rowid): the relation filter
    ``fts``            FTS5 over ``keywords`` (keywords + entities), ``rr_edu`` (relation-tagged
                       tokens such as ``contrast_start``, see ``index.terms.rr_tokens``) and ``text``
    ``index_meta``     schema version and build information

Queries are built from ``SearchQuery`` terms only: every term is split into alphanumeric tokens and
double-quoted, so FTS5 syntax (``" * : ( ) NEAR AND OR -``) in user text is searched as words, never
parsed. Terms are OR-ed; ``bm25()`` with column weights ranks the hits.

Concurrency: each thread gets its own connection (created on first use), so any number of threads
may search one ``SqliteIndex`` at once; writes go through one connection under a lock. WAL lets
readers in other processes keep reading while a writer adds documents. A rebuild through
``index.builder`` writes a new file and renames it over the old one: open readers keep the old
snapshot until they reopen.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from index.base import AnswerDocument, AnswerIndex, SearchHit, SearchQuery
from index.terms import content_words, relation_key, rr_tokens, search_tokens
from parsers.errors import ConfigError, InputError
from parsers.relations import canonical

SCHEMA_VERSION = 1
#: bm25 column weights: an RR match names the relation *and* the words, so it counts for more.
KEYWORDS_WEIGHT = 1.0
RR_WEIGHT = 2.0
TEXT_WEIGHT = 0.0
#: Separates the RR terms of one document inside the ``rr_edu`` column, so a highlight maps back to a term.
RR_SEPARATOR = " | "
_MARK_OPEN, _MARK_CLOSE = "\x02", "\x03"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS index_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs(
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, dialogue_id TEXT NOT NULL,
    position INTEGER NOT NULL, doc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS doc_relations(
    relation TEXT NOT NULL, doc INTEGER NOT NULL, PRIMARY KEY(relation, doc)) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    keywords, rr_edu, text, tokenize="porter unicode61 tokenchars '_'");
INSERT OR IGNORE INTO index_meta(key, value) VALUES ('schema', '{SCHEMA_VERSION}'), ('kind', 'dtdialog-answers');
"""


def quote_term(token: str) -> str:
    """Return ``token`` as an FTS5 string literal (double quotes doubled), so it is never read as syntax."""
    return '"' + token.replace('"', '""') + '"'


def keyword_tokens(query: SearchQuery) -> list[str]:
    """Return the distinct searchable tokens of the query's keywords (stop words and punctuation dropped)."""
    return content_words(piece for word in query.keywords for piece in search_tokens(word))


def match_expression(query: SearchQuery) -> str:
    """Return the FTS5 MATCH expression of ``query``: keyword tokens OR RR tokens, each quoted.

    Raises ``InputError`` when the query has no searchable word.
    """
    clauses: list[str] = []
    kw = keyword_tokens(query)
    if kw:
        clauses.append("{keywords} : (" + " OR ".join(quote_term(t) for t in kw) + ")")
    rr = list(dict.fromkeys(tok for term in query.rr_terms for tok in rr_tokens(term.relation, term.words)))
    if rr:
        clauses.append("{rr_edu} : (" + " OR ".join(quote_term(t) for t in rr) + ")")
    if not clauses:
        raise InputError("the query has no searchable words (only stop words, punctuation or query syntax)")
    return " OR ".join(clauses)


class SqliteIndex(AnswerIndex):
    """An FTS5 answer index in one SQLite file; ``readonly=False`` creates the file if needed."""

    backend = "sqlite"

    def __init__(self, path: str | Path, *, readonly: bool = True) -> None:
        self.path = Path(path)
        self.readonly = readonly
        if readonly and not self.path.is_file():
            raise InputError(f"index not found at {self.path}; build it with `dtdialog index build ...`")
        if not readonly and self.path.is_dir():
            raise InputError(f"{self.path} is a directory; give an index file path")
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        conn = self._conn()
        if not readonly:
            with self._lock:
                try:
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.executescript(_SCHEMA)
                except sqlite3.DatabaseError as exc:
                    self.close()
                    raise InputError(f"{self.path} is not a dtdialog index ({exc})") from None
        self._check_schema(conn)

    # --- connections ----------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise InputError(f"the index at {self.path} is closed")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                if self.readonly:
                    conn = sqlite3.connect(f"file:{quote(str(self.path.resolve()))}?mode=ro", uri=True,
                                           check_same_thread=False)
                    conn.execute("PRAGMA query_only=ON")
                else:
                    conn = sqlite3.connect(str(self.path), check_same_thread=False)
                    conn.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.Error as exc:
                raise InputError(f"cannot open index {self.path}: {exc}") from None
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def _check_schema(self, conn: sqlite3.Connection) -> None:
        try:
            rows = dict(conn.execute("SELECT key, value FROM index_meta").fetchall())
        except sqlite3.DatabaseError:
            self.close()
            raise InputError(f"{self.path} is not a dtdialog index; build one with `dtdialog index build ...`") from None
        if rows.get("kind") != "dtdialog-answers":
            self.close()
            raise InputError(f"{self.path} is not a dtdialog index")
        if rows.get("schema") != str(SCHEMA_VERSION):
            self.close()
            raise InputError(f"{self.path} has index schema {rows.get('schema')}, expected {SCHEMA_VERSION}; rebuild it")

    # --- writing --------------------------------------------------------------
    def add(self, documents: Iterable[AnswerDocument]) -> int:
        """Add documents, replacing any with the same id; return how many were added. One transaction."""
        if self.readonly:
            raise ConfigError(f"the index at {self.path} was opened read-only")
        conn = self._conn()
        added = 0
        with self._lock, conn:
            for doc in documents:
                old = conn.execute("SELECT rowid FROM docs WHERE id = ?", (doc.id,)).fetchone()
                if old:
                    self._delete_rowid(conn, old[0])
                cur = conn.execute(
                    "INSERT INTO docs(id, dialogue_id, position, doc) VALUES (?, ?, ?, ?)",
                    (doc.id, doc.dialogue_id, doc.position, json.dumps(doc.to_dict(), ensure_ascii=False)),
                )
                rowid = cur.lastrowid
                conn.execute("INSERT INTO fts(rowid, keywords, rr_edu, text) VALUES (?, ?, ?, ?)",
                             (rowid, " ".join(doc.keywords + doc.entities), rr_column(doc.rr_edu), doc.text))
                conn.executemany("INSERT OR IGNORE INTO doc_relations(relation, doc) VALUES (?, ?)",
                                 [(relation_key(r), rowid) for r in doc.relations])
                added += 1
        return added

    @staticmethod
    def _delete_rowid(conn: sqlite3.Connection, rowid: int) -> None:
        conn.execute("DELETE FROM fts WHERE rowid = ?", (rowid,))
        conn.execute("DELETE FROM doc_relations WHERE doc = ?", (rowid,))
        conn.execute("DELETE FROM docs WHERE rowid = ?", (rowid,))

    def set_info(self, **info: Any) -> None:
        """Store build information (parser, corpus, counts) in the index."""
        if self.readonly:
            raise ConfigError(f"the index at {self.path} was opened read-only")
        conn = self._conn()
        with self._lock, conn:
            conn.executemany("INSERT OR REPLACE INTO index_meta(key, value) VALUES (?, ?)",
                             [(f"info.{k}", json.dumps(v)) for k, v in info.items()])

    def info(self) -> dict[str, Any]:
        """Return the build information stored with ``set_info``."""
        rows = self._conn().execute("SELECT key, value FROM index_meta WHERE key LIKE 'info.%'").fetchall()
        return {k[len("info."):]: json.loads(v) for k, v in rows}

    def optimize(self) -> None:
        """Merge the FTS5 segments and checkpoint the WAL: faster searches on a finished index."""
        if self.readonly:
            raise ConfigError(f"the index at {self.path} was opened read-only")
        conn = self._conn()
        with self._lock:
            with conn:
                conn.execute("INSERT INTO fts(fts) VALUES ('optimize')")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # --- reading --------------------------------------------------------------
    def search(self, query: SearchQuery) -> list[SearchHit]:
        """Return up to ``query.size`` hits, best first, each with the keywords and RR terms that matched.

        Raises ``InputError`` for an empty query or one with no searchable word.
        """
        if query.is_empty():
            raise InputError("empty query: give at least one keyword or RR term")
        if query.size < 1:
            raise InputError(f"query size must be at least 1, got {query.size}")
        expression = match_expression(query)
        sql = ["SELECT rowid, bm25(fts, ?, ?, ?) AS score FROM fts WHERE fts MATCH ?"]
        params: list[Any] = [KEYWORDS_WEIGHT, RR_WEIGHT * query.rr_weight, TEXT_WEIGHT, expression]
        if query.relations:
            keys = [relation_key(canonical(r)) for r in query.relations]
            sql.append(f"AND rowid IN (SELECT doc FROM doc_relations WHERE relation IN ({_marks(keys)}))")
            params.extend(keys)
        if query.exclude_ids:
            sql.append(f"AND rowid NOT IN (SELECT rowid FROM docs WHERE id IN ({_marks(query.exclude_ids)}))")
            params.extend(query.exclude_ids)
        sql.append("ORDER BY score LIMIT ?")
        params.append(query.size)
        conn = self._conn()
        try:
            ranked = conn.execute(" ".join(sql), params).fetchall()
        except sqlite3.OperationalError as exc:
            raise InputError(f"search failed: {exc}") from None
        if not ranked:
            return []
        rowids = [r[0] for r in ranked]
        docs = {r[0]: AnswerDocument.from_dict(json.loads(r[1])) for r in conn.execute(
            f"SELECT rowid, doc FROM docs WHERE rowid IN ({_marks(rowids)})", rowids)}
        matched = self._matched(conn, query, expression, rowids, docs)
        return [SearchHit(document=docs[rid], score=-float(score), matched=matched.get(rid, {}))
                for rid, score in ranked if rid in docs]

    def _matched(self, conn: sqlite3.Connection, query: SearchQuery, expression: str, rowids: list[int],
                 docs: dict[int, AnswerDocument]) -> dict[int, dict[str, list[str]]]:
        # highlight() marks the document tokens the query matched, with SQLite's own tokenizer and stemmer.
        rows = conn.execute(
            f"SELECT rowid, highlight(fts, 0, ?, ?), highlight(fts, 1, ?, ?) FROM fts "
            f"WHERE fts MATCH ? AND rowid IN ({_marks(rowids)})",
            [_MARK_OPEN, _MARK_CLOSE, _MARK_OPEN, _MARK_CLOSE, expression, *rowids],
        ).fetchall()
        out: dict[int, dict[str, list[str]]] = {}
        for rowid, kw_marked, rr_marked in rows:
            found: dict[str, list[str]] = {}
            keywords = _marked_tokens(kw_marked)
            if keywords:
                found["keywords"] = keywords
            phrases = docs[rowid].meta.get("rr_phrases") or list(docs[rowid].rr_edu)
            terms = docs[rowid].rr_edu
            hit_terms = [i for i, segment in enumerate((rr_marked or "").split(RR_SEPARATOR)) if _MARK_OPEN in segment]
            if hit_terms:
                found["rr_edu"] = [phrases[i] if i < len(phrases) else terms[i] for i in hit_terms if i < len(terms)]
                found["rr_terms"] = self._matched_query_terms(conn, query, rowid)
            out[rowid] = found
        return out

    @staticmethod
    def _matched_query_terms(conn: sqlite3.Connection, query: SearchQuery, rowid: int) -> list[str]:
        matched: list[str] = []
        for term in query.rr_terms:
            tokens = rr_tokens(term.relation, term.words)
            if not tokens:
                continue
            expr = "{rr_edu} : (" + " OR ".join(quote_term(t) for t in tokens) + ")"
            if conn.execute("SELECT 1 FROM fts WHERE fts MATCH ? AND rowid = ?", (expr, rowid)).fetchone():
                matched.append(str(term))
        return matched

    def get(self, doc_id: str) -> AnswerDocument | None:
        """Return the document with ``doc_id``, or None."""
        row = self._conn().execute("SELECT doc FROM docs WHERE id = ?", (doc_id,)).fetchone()
        return AnswerDocument.from_dict(json.loads(row[0])) if row else None

    def count(self) -> int:
        """Return the number of indexed documents."""
        return int(self._conn().execute("SELECT COUNT(*) FROM docs").fetchone()[0])

    def ids(self) -> list[str]:
        """Return every document id, in insertion order."""
        return [r[0] for r in self._conn().execute("SELECT id FROM docs ORDER BY rowid")]

    def close(self) -> None:
        """Close every connection this index opened (in any thread)."""
        with self._lock:
            conns, self._all = self._all, []
            self._closed = True
        for conn in conns:
            conn.close()


def rr_column(rr_edu: Iterable[str]) -> str:
    """Return the ``rr_edu`` FTS column text: each ``"Relation [words]"`` term as relation-tagged tokens."""
    segments = []
    for term in rr_edu:
        relation, _, rest = term.partition(" [")
        segments.append(" ".join(rr_tokens(relation, rest.rstrip("]").split())) or "_")
    return RR_SEPARATOR.join(segments)


def _marked_tokens(marked: str | None) -> list[str]:
    out: dict[str, None] = {}
    pos = 0
    text = marked or ""
    while True:
        start = text.find(_MARK_OPEN, pos)
        if start < 0:
            return list(out)
        end = text.find(_MARK_CLOSE, start)
        for token in text[start + 1:end].split():
            out.setdefault(token, None)
        pos = end + 1


def _marks(values: Iterable[Any]) -> str:
    return ", ".join("?" for _ in values)
