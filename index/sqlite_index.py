"""The embedded answer index: SQLite FTS5 on disk, in WAL mode.

Tables
    ``docs``           one row per answer: id, dialogue id, position, the full document JSON (incl. DT),
                       zlib-compressed (a DT is ~3 KB of JSON; compression keeps a 100k index small)
    ``doc_relations``  (relation, doc rowid): the relation filter
    ``fts``            FTS5 over ``keywords`` (keywords + entities) and ``rr_edu`` (relation-tagged
                       tokens such as ``contrast_start``, see ``index.terms.rr_tokens``); ``text`` is
                       stored unindexed
    ``fts_vocab``      fts5vocab over ``fts``: per-column document frequencies (computed by a scan)
    ``term_df``        the same frequencies stored by ``optimize()``, read by query pruning
    ``index_meta``     schema version and build information
    ``doc_history``    earlier versions of replaced answers (``index.history``), so an overwrite can be undone

Queries are built from ``SearchQuery`` terms only: every term is split into alphanumeric tokens and
double-quoted, so FTS5 syntax (``" * : ( ) NEAR AND OR -``) in user text is searched as words, never
parsed. Terms are OR-ed; ``bm25()`` with column weights ranks the hits.

Query pruning (why searches stay fast at 100k answers): bm25's cost grows with (matching rows x query
terms), and a parsed question easily yields 90 tokens. Before searching, each token's document frequency
is read from ``fts_vocab`` (under the index's own Porter stem); tokens that occur nowhere are dropped (they
cannot match). On an index of ``MIN_DOCS_FOR_DF_PRUNING`` answers or more, tokens in more than
``MAX_DF_RATIO`` of the answers are dropped too (bm25 gives them ~zero weight anyway), and the rest are
taken rarest first while their summed document frequencies stay within ``POSTINGS_BUDGET`` (at most
``MAX_KEYWORD_TOKENS`` / ``MAX_RR_TOKENS``). The rarest tokens carry the highest idf, so the top hits
rarely change; answers matching only common words may drop out of the candidate set on a large index.

Concurrency: each thread gets its own connection (created on first use), so any number of threads
may search one ``SqliteIndex`` at once; writes go through one connection under a lock. WAL lets
readers in other processes keep reading while a writer adds documents. A rebuild through
``index.builder`` writes a new file and renames it over the old one: open readers keep the old
snapshot until they reopen.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import orjson  # decoding stored DTs is the largest CPU cost of a search, and orjson decodes faster than json

from index import history
from index.base import AnswerDocument, AnswerIndex, AnswerVersion, RRTerm, SearchHit, SearchQuery, checked_documents
from index.terms import relation_key, rr_tokens
from index.vocabulary import FTS5_TOKENIZER, FtsStemmer, content_words, search_tokens
from parsers import storage
from parsers.errors import ConfigError, InputError
from parsers.relations import canonical
from parsers.storage import (
    CANNOT_OPEN_CODES,
    is_not_a_database,
    sqlite_code,
    storage_error,
)

SCHEMA_VERSION = 3
T = TypeVar("T")
#: bm25 column weights: an RR match names the relation *and* the words, so it counts for more.
KEYWORDS_WEIGHT = 1.0
RR_WEIGHT = 2.0
TEXT_WEIGHT = 0.0
#: Separates the RR terms of one document inside the ``rr_edu`` column, so a highlight maps back to a term.
RR_SEPARATOR = " | "
#: Porter stems over unicode61 (``index.vocabulary``): the index stores stems, queries are stemmed alike.
TOKENIZE = FTS5_TOKENIZER
#: Query tokens found in more than this share of the answers are dropped: their bm25 weight is ~0.
MAX_DF_RATIO = 0.5
#: Below this many answers searches are fast anyway and frequencies are too noisy to prune on.
MIN_DOCS_FOR_DF_PRUNING = 1000
#: On a large index, tokens are taken rarest first until their summed document frequencies reach this
#: budget: it bounds the rows FTS5 must visit and score, whatever the index size.
POSTINGS_BUDGET = 3000
#: At most this many (rarest) keyword / RR tokens are searched per query.
MAX_KEYWORD_TOKENS = 12
MAX_RR_TOKENS = 16

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS index_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs(
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, dialogue_id TEXT NOT NULL,
    position INTEGER NOT NULL, doc BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS doc_relations(
    relation TEXT NOT NULL, doc INTEGER NOT NULL, PRIMARY KEY(relation, doc)) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    keywords, rr_edu, text UNINDEXED, tokenize="{TOKENIZE}");
CREATE VIRTUAL TABLE IF NOT EXISTS fts_vocab USING fts5vocab(fts, 'col');
CREATE TABLE IF NOT EXISTS term_df(term TEXT NOT NULL, col TEXT NOT NULL, df INTEGER NOT NULL,
    PRIMARY KEY(term, col)) WITHOUT ROWID;
INSERT OR IGNORE INTO index_meta(key, value) VALUES ('schema', '{SCHEMA_VERSION}'), ('kind', 'dtdialog-answers');
""" + history.SCHEMA  # added without a schema bump: a file without it just has no history yet


def quote_term(token: str) -> str:
    """Return ``token`` as an FTS5 string literal (double quotes doubled), so it is never read as syntax."""
    return '"' + token.replace('"', '""') + '"'


def keyword_tokens(query: SearchQuery) -> list[str]:
    """Return the distinct searchable tokens of the query's keywords (stop words and punctuation dropped)."""
    return content_words(piece for word in query.keywords for piece in search_tokens(word))


def query_rr_tokens(query: SearchQuery) -> list[str]:
    """Return the distinct relation-tagged tokens of the query's RR terms."""
    return list(dict.fromkeys(tok for term in query.rr_terms for tok in rr_tokens(term.relation, term.words)))


def match_expression(query: SearchQuery, *, keywords: list[str] | None = None, rr: list[str] | None = None) -> str:
    """Return the FTS5 MATCH expression of ``query``: keyword tokens OR RR tokens, each quoted.

    ``keywords``/``rr`` replace the query's own tokens (after pruning). Raises ``InputError`` when
    the query has no searchable word.
    """
    kw = keyword_tokens(query) if keywords is None else keywords
    rr = query_rr_tokens(query) if rr is None else rr
    clauses: list[str] = []
    if kw:
        clauses.append("{keywords} : (" + " OR ".join(quote_term(t) for t in kw) + ")")
    if rr:
        clauses.append("{rr_edu} : (" + " OR ".join(quote_term(t) for t in rr) + ")")
    if not clauses:
        raise InputError("the query has no searchable words (only stop words, punctuation or query syntax)")
    return " OR ".join(clauses)


def connect_readonly(path: Path, timeout: float) -> sqlite3.Connection:
    """Return a read-only connection to the index at ``path`` that waits at most ``timeout`` s for a lock.

    A WAL database needs its ``-shm`` file even to be read; where the folder cannot be written that
    file cannot be made, and nobody can change the index either, so SQLite may skip locking and the
    WAL altogether (``immutable=1``).
    """
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=timeout, check_same_thread=False)
    try:
        conn.execute("PRAGMA schema_version").fetchone()  # the first read opens the WAL index
    except sqlite3.OperationalError as exc:
        conn.close()
        if os.access(path.parent, os.W_OK) or sqlite_code(exc) not in CANNOT_OPEN_CODES:
            raise
        conn = sqlite3.connect(uri + "&immutable=1", uri=True, timeout=timeout, check_same_thread=False)
    try:
        conn.execute("PRAGMA query_only=ON")
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def probe_file(path: Path, timeout: float) -> str | None:
    """Return None when the index at ``path`` can be opened and its answers and full-text table read within
    ``timeout`` seconds, else why not in a few words (a readiness probe: cheap, nothing like an integrity check)."""
    return storage.probe_sqlite(lambda: connect_readonly(path, timeout),
                                ("SELECT 1 FROM docs LIMIT 1", "SELECT 1 FROM fts LIMIT 1"))


def _storage_op(doing: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorate a method so a storage fault inside it becomes a one-line error naming the index (``doing`` it)."""

    def wrap(method: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(method)
        def run(self: SqliteIndex, *args: Any, **kwargs: Any) -> T:
            with self._storage(doing):
                return method(self, *args, **kwargs)

        return run

    return wrap


class SqliteIndex(AnswerIndex):
    """An FTS5 answer index in one SQLite file; ``readonly=False`` creates the file if needed."""

    backend = "sqlite"
    supports_history = True

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
        self._stemmer = FtsStemmer()
        self._stem_sets: dict[tuple[str, str], frozenset[str]] = {}
        self._decoded = DecodedDocuments()
        # read before the first connection: a file swapped in between is then reported replaced (a harmless
        # reload), never the other way round
        self._identity = self._file_identity()
        try:
            conn = self._conn()
            if not readonly:
                self._create_schema(conn)
            self._check_schema(conn)
            if not readonly:
                self._add_history_table(conn)
        except BaseException:
            # never under self._lock: close() takes it (a second acquire of the same lock would hang forever)
            self.close()
            raise

    # --- connections ----------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise InputError(f"the index at {self.path} is closed")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open_readonly() if self.readonly else self._open_writer()
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def _open_writer(self) -> sqlite3.Connection:
        with self._storage("opening"):
            conn = sqlite3.connect(str(self.path), timeout=storage.BUSY_TIMEOUT_S, check_same_thread=False)
            conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    def _open_readonly(self) -> sqlite3.Connection:
        """Return a read-only connection (``connect_readonly``: immutable on a read-only file system)."""
        with self._storage("opening"):
            return connect_readonly(self.path, storage.BUSY_TIMEOUT_S)

    @contextmanager
    def _storage(self, doing: str) -> Iterator[None]:
        """Turn an SQLite or file-system fault in the block into a one-line error naming this index."""
        try:
            yield
        except (sqlite3.Error, OSError) as exc:
            if isinstance(exc, sqlite3.DatabaseError) and is_not_a_database(exc):
                raise InputError(f"{self.path} is not a dtdialog index; build one with `dtdialog index build ...`") from None
            err = storage_error(exc, what=f"{doing} the index {self.path}")
            if err is None:
                raise
            raise err from None

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        """Create the tables of a new index; an existing index is left as it is (opening it writes nothing)."""
        with self._storage("creating"):
            exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'index_meta'").fetchone()
            if exists is None:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.executescript(_SCHEMA)

    def _add_history_table(self, conn: sqlite3.Connection) -> None:
        """Give an index written before the answer history its ``doc_history`` table (the only write on opening,
        once per such file; a file that has the table is not written)."""
        with self._storage("upgrading"):
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'doc_history'").fetchone() is None:
                conn.executescript(history.SCHEMA)

    def _check_schema(self, conn: sqlite3.Connection) -> None:
        with self._storage("reading"):
            try:
                rows = dict(conn.execute("SELECT key, value FROM index_meta").fetchall())
            except sqlite3.OperationalError as exc:
                if storage_error(exc, what="") is not None:
                    raise  # a storage fault (locked, unreadable), not a foreign file
                raise InputError(f"{self.path} is not a dtdialog index; build one with `dtdialog index build ...`") from None
        if rows.get("kind") != "dtdialog-answers":
            raise InputError(f"{self.path} is not a dtdialog index")
        if rows.get("schema") != str(SCHEMA_VERSION):
            raise InputError(f"{self.path} has index schema {rows.get('schema')}, expected {SCHEMA_VERSION}; rebuild it")

    def _file_identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def replaced_on_disk(self) -> bool:
        """Return True when another file now sits at this index's path (a build renamed a new index over it)."""
        return self._file_identity() != self._identity

    def probe(self, timeout: float) -> str | None:
        """Return None when a search could read this index now, else why not (``probe_file``)."""
        return probe_file(self.path, timeout)

    def lock_free(self, timeout: float) -> bool:
        """Return True when this index's write lock can be taken within ``timeout`` seconds (a readiness probe)."""
        if not self._lock.acquire(timeout=timeout):
            return False
        self._lock.release()
        return True

    # --- writing --------------------------------------------------------------
    @_storage_op("writing")
    def add(self, documents: Iterable[AnswerDocument]) -> int:
        """Add documents, replacing any with the same id; return how many were added. One transaction.

        A replaced document that differs from its replacement is kept in ``doc_history`` (same transaction).
        A document whose id is not a safe id (``index.base.check_id``) raises ``InputError`` and nothing is added.
        """
        documents = checked_documents(documents)
        if self.readonly:
            raise ConfigError(f"the index at {self.path} was opened read-only")
        conn = self._conn()
        added = 0
        with self._lock, conn:
            for doc in documents:
                blob = encode_doc(doc)
                old = conn.execute("SELECT rowid, doc FROM docs WHERE id = ?", (doc.id,)).fetchone()
                if old:
                    if not history.same_answer(bytes(old[1]), blob):  # a re-parse alone is not a new version
                        history.record(conn, doc.id, bytes(old[1]))
                    self._delete_rowid(conn, old[0])
                cur = conn.execute(
                    "INSERT INTO docs(id, dialogue_id, position, doc) VALUES (?, ?, ?, ?)",
                    (doc.id, doc.dialogue_id, doc.position, blob),
                )
                rowid = cur.lastrowid
                conn.execute("INSERT INTO fts(rowid, keywords, rr_edu, text) VALUES (?, ?, ?, ?)",
                             (rowid, " ".join(doc.keywords + doc.entities), rr_column(doc.rr_edu), doc.text))
                conn.executemany("INSERT OR IGNORE INTO doc_relations(relation, doc) VALUES (?, ?)",
                                 [(relation_key(r), rowid) for r in doc.relations])
                added += 1
            # Same transaction: no reader ever sees the new rows with the old frequencies marked fresh.
            conn.execute("DELETE FROM index_meta WHERE key = 'term_df_rows'")
            # Derived stores beside the index (dense vectors) record the generation they were built from.
            # A random token, not a counter: a rebuilt file must not repeat the old file's generation.
            conn.execute("INSERT OR REPLACE INTO index_meta(key, value) VALUES ('generation', lower(hex(randomblob(8))))")
        return added

    @staticmethod
    def _delete_rowid(conn: sqlite3.Connection, rowid: int) -> None:
        conn.execute("DELETE FROM fts WHERE rowid = ?", (rowid,))
        conn.execute("DELETE FROM doc_relations WHERE doc = ?", (rowid,))
        conn.execute("DELETE FROM docs WHERE rowid = ?", (rowid,))

    @_storage_op("reading")
    def history(self, doc_id: str) -> list[AnswerVersion]:
        """Return the earlier versions of answer ``doc_id``, newest first (``[]`` when it was never replaced)."""
        return [AnswerVersion(version=v.version, replaced=v.replaced, document=decode_doc(v.blob))
                for v in history.versions(self._conn(), doc_id)]

    @_storage_op("writing")
    def keep_version(self, doc: AnswerDocument) -> int:
        """Store ``doc`` as the newest earlier version of its id (an answer about to be dropped); return the version."""
        if self.readonly:
            raise ConfigError(f"the index at {self.path} was opened read-only")
        conn = self._conn()
        with self._lock, conn:
            return history.record(conn, doc.id, encode_doc(doc))

    @_storage_op("reading")
    def export_history(self) -> list[history.StoredVersion]:
        """Return the whole version history, for ``import_history`` into a rebuilt index."""
        return history.dump(self._conn())

    @_storage_op("writing")
    def import_history(self, entries: Iterable[history.StoredVersion]) -> int:
        """Append versions exported from another index of the same answers; return how many were stored."""
        if self.readonly:
            raise ConfigError(f"the index at {self.path} was opened read-only")
        conn = self._conn()
        with self._lock, conn:
            return history.load(conn, entries)

    @_storage_op("writing")
    def set_info(self, **info: Any) -> None:
        """Store build information (parser, corpus, counts) in the index."""
        if self.readonly:
            raise ConfigError(f"the index at {self.path} was opened read-only")
        conn = self._conn()
        with self._lock, conn:
            conn.executemany("INSERT OR REPLACE INTO index_meta(key, value) VALUES (?, ?)",
                             [(f"info.{k}", json.dumps(v)) for k, v in info.items()])

    @_storage_op("reading")
    def generation(self) -> str:
        """Return a token that changes with every ``add`` ("" for an index never written to).

        Data derived from the answers and kept beside the index (the dense vectors) stores the
        generation it was built from, so a later ``add`` - even one replacing answers under the same
        ids - marks it out of step.
        """
        row = self._conn().execute("SELECT value FROM index_meta WHERE key = 'generation'").fetchone()
        return str(row[0]) if row else ""

    @_storage_op("reading")
    def info(self) -> dict[str, Any]:
        """Return the build information stored with ``set_info``."""
        rows = self._conn().execute("SELECT key, value FROM index_meta WHERE key LIKE 'info.%'").fetchall()
        return {k[len("info."):]: json.loads(v) for k, v in rows}

    @_storage_op("writing")
    def optimize(self) -> None:
        """Merge the FTS5 segments, store the term frequencies used by query pruning, checkpoint the WAL.

        Call it when a batch of ``add`` calls is done (the builder does): until then pruning reads
        frequencies by scanning ``fts_vocab``, which is correct but slower on a large index.
        """
        if self.readonly:
            raise ConfigError(f"the index at {self.path} was opened read-only")
        conn = self._conn()
        with self._lock:
            with conn:
                conn.execute("INSERT INTO fts(fts) VALUES ('optimize')")
                conn.execute("DELETE FROM term_df")
                conn.execute("INSERT INTO term_df(term, col, df) SELECT term, col, doc FROM fts_vocab")
                conn.execute("INSERT OR REPLACE INTO index_meta(key, value) VALUES ('term_df_rows', ?)",
                             (str(self._document_count(conn)),))
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # --- reading --------------------------------------------------------------
    @_storage_op("reading")
    def search(self, query: SearchQuery) -> list[SearchHit]:
        """Return up to ``query.size`` hits, best first, each with the keywords and RR terms that matched.

        Raises ``InputError`` for an empty query or one with no searchable word.
        """
        ranked = self._ranked(query)
        if not ranked:
            return []
        conn = self._conn()
        rowids = [r[0] for r in ranked]
        docs = {r[0]: self._decoded(r[1]) for r in conn.execute(
            f"SELECT rowid, doc FROM docs WHERE rowid IN ({_marks(rowids)})", rowids)}
        matched = self._matched(query, {rid: docs[rid] for rid in rowids if rid in docs})
        return [SearchHit(document=docs[rid], score=-float(score), matched=matched.get(rid, {}))
                for rid, score in ranked if rid in docs]

    @_storage_op("reading")
    def search_scores(self, query: SearchQuery) -> list[tuple[str, float]]:
        """Return up to ``query.size`` ``(id, score)`` pairs, best first, without decoding any stored document.

        Decoding the stored documents is most of a search's cost; a caller merging several searches
        decodes only the final best ones (``hits_for``). Raises like ``search``.
        """
        ranked = self._ranked(query)
        if not ranked:
            return []
        rowids = [r[0] for r in ranked]
        ids = dict(self._conn().execute(f"SELECT rowid, id FROM docs WHERE rowid IN ({_marks(rowids)})", rowids))
        return [(ids[rid], -float(score)) for rid, score in ranked if rid in ids]

    @_storage_op("reading")
    def hits_for(self, scored: Sequence[tuple[str, float]], query: SearchQuery) -> list[SearchHit]:
        """Return a hit per ``(id, score)`` still in the index, in that order, with what ``query`` matched."""
        if not scored:
            return []
        wanted = [doc_id for doc_id, _ in scored]
        rows = self._conn().execute(f"SELECT rowid, id, doc FROM docs WHERE id IN ({_marks(wanted)})", wanted).fetchall()
        by_id = {doc_id: (rowid, self._decoded(blob)) for rowid, doc_id, blob in rows}
        matched = self._matched(query, {rowid: doc for rowid, doc in by_id.values()})
        return [SearchHit(document=by_id[doc_id][1], score=float(score), matched=matched.get(by_id[doc_id][0], {}))
                for doc_id, score in scored if doc_id in by_id]

    def _ranked(self, query: SearchQuery) -> list[tuple[int, float]]:
        """Return ``(rowid, bm25)`` of the best ``query.size`` matches (bm25: lower is better)."""
        if query.is_empty():
            raise InputError("empty query: give at least one keyword or RR term")
        if query.size < 1:
            raise InputError(f"query size must be at least 1, got {query.size}")
        match_expression(query)  # raises InputError when nothing is searchable
        conn = self._conn()
        kw, rr = self._pruned_tokens(conn, query)
        if not kw and not rr:
            return []  # every token is absent from the index: nothing can match
        expression = match_expression(query, keywords=kw, rr=rr)
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
        try:
            return conn.execute(" ".join(sql), params).fetchall()
        except sqlite3.OperationalError as exc:
            if storage_error(exc, what="") is not None:
                raise  # locked or unreadable: the caller's storage wrapper names it
            raise InputError(f"search failed: {exc}") from None

    @staticmethod
    def _document_count(conn: sqlite3.Connection) -> int:
        return int(conn.execute("SELECT COUNT(*) FROM docs").fetchone()[0])

    def _frequencies(self, conn: sqlite3.Connection) -> tuple[str, int]:
        """Return the frequency table to read and the document count it describes.

        ``term_df`` (stored by ``optimize``) is exact until the next ``add``, which removes the
        ``term_df_rows`` marker, possibly from another process; then ``fts_vocab`` is scanned instead, so
        a freshly added answer is never pruned as absent. Checked on every search: one key lookup.
        """
        row = conn.execute("SELECT value FROM index_meta WHERE key = 'term_df_rows'").fetchone()
        if row is not None:
            return "term_df", int(row[0])
        return "fts_vocab", self._document_count(conn)

    def _pruned_tokens(self, conn: sqlite3.Connection, query: SearchQuery) -> tuple[list[str], list[str]]:
        """Return the keyword and RR tokens worth searching: present in the index, not near-universal, rarest first."""
        kw, rr = keyword_tokens(query), query_rr_tokens(query)
        stems = self._stemmer.stems(kw + rr)
        terms = sorted({t for t in stems.values() if t})
        table, size = self._frequencies(conn)
        count_col = "df" if table == "term_df" else "doc"
        df: dict[tuple[str, str], int] = {}
        for start in range(0, len(terms), 500):
            chunk = terms[start:start + 500]
            for term, col, doc in conn.execute(
                    f"SELECT term, col, {count_col} FROM {table} WHERE term IN ({_marks(chunk)})", chunk):
                df[(term, col)] = int(doc)
        limit = int(size * MAX_DF_RATIO) if size >= MIN_DOCS_FOR_DF_PRUNING else size
        candidates = [(df.get((stems[t], column), 0), column, t)
                      for column, tokens in (("keywords", kw), ("rr_edu", rr)) for t in tokens if stems.get(t)]
        present = sorted(c for c in candidates if c[0] > 0)
        useful = [c for c in present if c[0] <= limit] or present[:1]
        budget = POSTINGS_BUDGET if size >= MIN_DOCS_FOR_DF_PRUNING else float("inf")
        caps = {"keywords": MAX_KEYWORD_TOKENS, "rr_edu": MAX_RR_TOKENS}
        chosen: dict[str, list[str]] = {"keywords": [], "rr_edu": []}
        spent = 0
        for freq, column, token in useful:  # rarest first: the most selective, highest-idf tokens
            if spent and spent + freq > budget:
                break
            if len(chosen[column]) < caps[column]:
                chosen[column].append(token)
                spent += freq
        return chosen["keywords"], chosen["rr_edu"]

    def _matched(self, query: SearchQuery, docs: dict[int, AnswerDocument]) -> dict[int, dict[str, list[str]]]:
        """Return, per hit, the query keywords and RR terms it matched and its matching ``RR [EDU]`` phrases.

        Computed from the stored document under the index's own stemmer, so it agrees with FTS5 matching
        and costs no extra query. Only what can match is stemmed: a hit's keywords when the query has keywords,
        and its RR terms when the query has RR terms of the same relation (``_comparable``).
        """
        stemmer = self._stemmer
        pieces = [(word, piece) for word in query.keywords for piece in search_tokens(word)]
        piece_stems = stemmer.stems(p for _, p in pieces)
        kw_words: dict[str, list[str]] = {}
        for word, piece in pieces:
            if piece_stems.get(piece):
                kw_words.setdefault(piece_stems[piece], []).append(word)
        term_stems = [(str(term), {s for s in stemmer.stems(rr_tokens(term.relation, term.words)).values() if s})
                      for term in query.rr_terms]
        term_stems = [(name, wanted) for name, wanted in term_stems if wanted]  # an empty set never intersects
        comparable = _comparable(term.relation for term in query.rr_terms) if term_stems else None
        rr_of = {rowid: [(i, term) for i, term in enumerate(doc.rr_edu) if comparable(term.relation)]
                 for rowid, doc in docs.items()} if comparable is not None else {}
        # one stemmer round trip for every hit's new words, instead of one per document and RR term
        self._prime_stem_sets(([(" ".join(doc.keywords + doc.entities), "") for doc in docs.values()] if kw_words else [])
                              + [(" ".join(term.words), term.relation) for terms in rr_of.values() for _, term in terms])
        out: dict[int, dict[str, list[str]]] = {}
        for rowid, doc in docs.items():
            found: dict[str, list[str]] = {}
            if kw_words:
                doc_stems = self._stem_set(" ".join(doc.keywords + doc.entities), "")
                keywords = list(dict.fromkeys(w for stem, words in kw_words.items() if stem in doc_stems for w in words))
                if keywords:
                    found["keywords"] = keywords
            rr_hits: list[str] = []
            rr_terms: list[str] = []
            if rr_of.get(rowid):
                phrases = doc.meta.get("rr_phrases") or list(doc.rr_edu)
                for i, term in rr_of[rowid]:
                    stems = self._stem_set(" ".join(term.words), term.relation)
                    names = [name for name, wanted in term_stems if wanted & stems]
                    if names:
                        rr_hits.append(phrases[i] if i < len(phrases) else str(term))
                        rr_terms.extend(n for n in names if n not in rr_terms)
            if rr_hits:
                found["rr_edu"] = rr_hits
                found["rr_terms"] = rr_terms
            out[rowid] = found
        return out

    @staticmethod
    def _stem_tokens(words: str, relation: str) -> list[str]:
        # the pieces of the whole string are the pieces of each word in turn (a piece never spans a space)
        return rr_tokens(relation, words.split()) if relation else search_tokens(words)

    def _prime_stem_sets(self, keys: list[tuple[str, str]]) -> None:
        """Compute the stem sets of every uncached ``(words, relation)`` key with a single stemmer call."""
        todo = [k for k in dict.fromkeys(keys) if k not in self._stem_sets]
        if not todo:
            return
        tokens = {k: self._stem_tokens(*k) for k in todo}
        stems = self._stemmer.stems(t for toks in tokens.values() for t in toks)
        if len(self._stem_sets) + len(todo) > 100_000:
            self._stem_sets.clear()
        for key, toks in tokens.items():
            self._stem_sets[key] = frozenset(s for s in (stems.get(t) for t in toks) if s)

    def _stem_set(self, words: str, relation: str) -> frozenset[str]:
        """Return the indexed terms of ``words`` (relation-tagged when ``relation`` is given), memoized."""
        key = (words, relation)
        cached = self._stem_sets.get(key)
        if cached is None:
            cached = frozenset(s for s in self._stemmer.stems(self._stem_tokens(words, relation)).values() if s)
            if len(self._stem_sets) > 100_000:
                self._stem_sets.clear()
            self._stem_sets[key] = cached
        return cached

    @_storage_op("reading")
    def get(self, doc_id: str) -> AnswerDocument | None:
        """Return the document with ``doc_id``, or None."""
        row = self._conn().execute("SELECT doc FROM docs WHERE id = ?", (doc_id,)).fetchone()
        return self._decoded(row[0]) if row else None

    @_storage_op("reading")
    def get_many(self, doc_ids: Sequence[str]) -> dict[str, AnswerDocument]:
        """Return the documents of ``doc_ids`` still in the index, by id, read in one query (not one per id)."""
        wanted = list(dict.fromkeys(doc_ids))
        if not wanted:
            return {}
        rows = self._conn().execute(f"SELECT id, doc FROM docs WHERE id IN ({_marks(wanted)})", wanted).fetchall()
        return {doc_id: self._decoded(blob) for doc_id, blob in rows}

    @_storage_op("reading")
    def count(self) -> int:
        """Return the number of indexed documents."""
        return int(self._conn().execute("SELECT COUNT(*) FROM docs").fetchone()[0])

    @_storage_op("reading")
    def ids(self) -> list[str]:
        """Return every document id, in insertion order."""
        return [r[0] for r in self._conn().execute("SELECT id FROM docs ORDER BY rowid")]

    def documents(self) -> Iterator[AnswerDocument]:
        """Yield every document, in insertion order, read in one query."""
        for blob in self._document_blobs():
            yield decode_doc(blob)

    @_storage_op("reading")
    def _document_blobs(self) -> list[bytes]:
        # read before the first document is yielded, so a storage fault is raised (as one line) right away
        return [blob for (blob,) in self._conn().execute("SELECT doc FROM docs ORDER BY rowid").fetchall()]

    @_storage_op("reading")
    def answer_texts(self) -> tuple[list[str], list[str]]:
        """Return ``(ids, texts)`` of every document, in insertion order, read in one query.

        What the stores derived from the answers (dense vectors, SG phrases) are built from; one
        scan instead of a ``get`` per id.
        """
        ids: list[str] = []
        texts: list[str] = []
        for doc_id, blob in self._conn().execute("SELECT id, doc FROM docs ORDER BY rowid"):
            ids.append(doc_id)
            texts.append(decode_doc(blob).text)
        return ids, texts

    def close(self) -> None:
        """Close every connection this index opened (in any thread)."""
        with self._lock:
            conns, self._all = self._all, []
            self._closed = True
        for conn in conns:
            conn.close()
        self._stemmer.close()


def _comparable(query_relations: Iterable[str]) -> Callable[[str], bool]:
    """Return a test of whether an answer's RR term of some relation can share an indexed term with the query's.

    Every RR token is ``<relation key>_<piece>`` and the Porter stemmer only rewrites a token's letter suffix,
    never its ``_``, so the stems of two plain ASCII relation keys never meet. A key the tokenizer could fold
    (non-ASCII) or an empty one is never ruled out.
    """
    keys = {relation_key(r) for r in query_relations}
    if not all(_plain_key(k) for k in keys):
        return lambda relation: True

    def comparable(relation: str) -> bool:
        key = relation_key(relation)
        return key in keys or not _plain_key(key)

    return comparable


def _plain_key(key: str) -> bool:
    return bool(key) and key.isascii()


def rr_column(rr_edu: Iterable[RRTerm]) -> str:
    """Return the ``rr_edu`` FTS column text: each RR term as relation-tagged tokens."""
    return RR_SEPARATOR.join(" ".join(rr_tokens(term.relation, term.words)) or "_" for term in rr_edu)


def encode_doc(doc: AnswerDocument) -> bytes:
    """Return the stored form of a document: zlib-compressed JSON."""
    return zlib.compress(json.dumps(doc.to_dict(), ensure_ascii=False).encode("utf-8"), 6)


class DecodedDocuments:
    """The last ``size`` documents decoded, by their stored bytes: one turn's search decodes 10-40 stored DTs, most
    of a search's CPU, and the same popular answers come back turn after turn.

    Keyed by the stored blob itself, so an answer that changes is a new key and nothing can go stale; a document
    is frozen and nothing downstream writes into its tree or meta, so one decoded copy is shared by every caller.
    """

    def __init__(self, size: int = 1024) -> None:
        from collections import OrderedDict

        self.size = size
        self._docs: OrderedDict[bytes | str, AnswerDocument] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, data: bytes | str) -> AnswerDocument:
        with self._lock:
            doc = self._docs.get(data)
            if doc is not None:
                self._docs.move_to_end(data)
                return doc
        doc = decode_doc(data)
        with self._lock:
            self._docs[data] = doc
            if len(self._docs) > self.size:
                self._docs.popitem(last=False)
        return doc


def decode_doc(data: bytes | str) -> AnswerDocument:
    """Return the document stored by ``encode_doc``."""
    raw = zlib.decompress(data) if isinstance(data, bytes) else data
    return AnswerDocument.from_dict(orjson.loads(raw))


def _marks(values: Iterable[Any]) -> str:
    return ", ".join("?" for _ in values)
