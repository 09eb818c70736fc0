"""The SQLite index's fast paths against the plain code they replace, on real inputs from the built-in corpus.

``SqliteIndex._matched`` stems only what it compares (a hit's RR terms only when a query RR term has the same
relation) and ``FtsStemmer`` stems on a contentless table: the hits' ``matched`` and every stem must be exactly
what the plain computation gives.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from index.base import AnswerDocument, RRTerm, SearchQuery
from index.sqlite_index import SqliteIndex
from index.terms import rr_tokens
from index.vocabulary import FTS5_TOKENIZER, FtsStemmer, search_tokens

DIALOGUES = 80


@pytest.fixture(scope="module")
def builtin_index(tmp_path_factory) -> Path:
    """Return a rules-parser SQLite index of the first ``DIALOGUES`` built-in dialogues."""
    from data.builtin import load_builtin_corpus
    from index.builder import build_index
    from parsers.base import get_parser

    path = tmp_path_factory.mktemp("matched") / "answers.sqlite"
    build_index(dialogues=load_builtin_corpus()[:DIALOGUES], parser=get_parser("rules"), backend="sqlite", out=path,
                progress=False)
    return path


_PLAIN: dict[str, str | None] = {}


def plain_stems(tokens: list[str]) -> dict[str, str | None]:
    """Return token -> the first term SQLite's tokenizer makes of it, one ordinary (content) FTS5 row per token
    (remembered across calls: the comparisons below ask for the same words many times)."""
    missing = [t for t in dict.fromkeys(tokens) if t not in _PLAIN]
    if missing:
        conn = sqlite3.connect(":memory:")
        try:
            conn.execute(f'CREATE VIRTUAL TABLE s USING fts5(x, tokenize="{FTS5_TOKENIZER}")')
            conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(s, 'instance')")
            conn.executemany("INSERT INTO s(rowid, x) VALUES (?, ?)", list(enumerate(missing, start=1)))
            found: dict[int, str] = {}
            for doc, term in conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
                found.setdefault(doc, term)
        finally:
            conn.close()
        _PLAIN.update((t, found.get(i)) for i, t in enumerate(missing, start=1))
    return {t: _PLAIN[t] for t in tokens}


def plain_matched(query: SearchQuery, doc: AnswerDocument) -> dict[str, list[str]]:
    """What a hit matched, the plain way (the code before the fast path): every keyword and RR term of the
    answer stemmed, every query RR term tried against every answer RR term."""
    pieces = [(word, piece) for word in query.keywords for piece in search_tokens(word)]
    piece_stems = plain_stems([p for _, p in pieces])
    kw_words: dict[str, list[str]] = {}
    for word, piece in pieces:
        if piece_stems.get(piece):
            kw_words.setdefault(piece_stems[piece], []).append(word)
    term_stems = [(str(term), {s for s in plain_stems(rr_tokens(term.relation, term.words)).values() if s})
                  for term in query.rr_terms]
    found: dict[str, list[str]] = {}
    doc_stems = {s for s in plain_stems(search_tokens(" ".join(doc.keywords + doc.entities))).values() if s}
    keywords = list(dict.fromkeys(w for stem, words in kw_words.items() if stem in doc_stems for w in words))
    if keywords:
        found["keywords"] = keywords
    phrases = doc.meta.get("rr_phrases") or list(doc.rr_edu)
    rr_hits: list[str] = []
    rr_names: list[str] = []
    for i, term in enumerate(doc.rr_edu):
        stems = {s for s in plain_stems(rr_tokens(term.relation, term.words)).values() if s}
        names = [name for name, wanted in term_stems if wanted & stems]
        if names:
            rr_hits.append(phrases[i] if i < len(phrases) else str(term))
            rr_names.extend(n for n in names if n not in rr_names)
    if rr_hits:
        found["rr_edu"] = rr_hits
        found["rr_terms"] = rr_names
    return found


def queries_of(documents: list[AnswerDocument]) -> list[SearchQuery]:
    """Return real queries: each answer's keywords and RR terms searched for (other answers share some of both),
    the same RR terms alone, keywords alone, and RR terms under a relation name the tokenizer folds (non-ASCII)."""
    out: list[SearchQuery] = []
    for doc in documents:
        if doc.keywords and doc.rr_edu:
            out.append(SearchQuery(keywords=doc.keywords[:30], rr_terms=doc.rr_edu[:8], size=25))
        if doc.rr_edu:
            out.append(SearchQuery(rr_terms=doc.rr_edu, size=25))
            out.append(SearchQuery(keywords=doc.keywords[:5], size=25,
                                   rr_terms=tuple(RRTerm(t.relation.replace("a", "á"), t.words) for t in doc.rr_edu)))
        if doc.keywords:
            out.append(SearchQuery(keywords=doc.keywords[:12], size=25))
    return out


def test_matched_is_what_the_plain_stemming_of_every_term_gives(builtin_index: Path) -> None:
    with SqliteIndex(builtin_index) as index:
        documents = list(index.documents())
        queries = queries_of(documents)[::3]
        compared = rr_found = mixed = 0
        for query in queries:
            hits = index.search(query)
            for hit in hits:
                assert hit.matched == plain_matched(query, hit.document), (query, hit.document.id)
                compared += 1
                rr_found += "rr_edu" in hit.matched
                mixed += len({t.relation for t in hit.document.rr_edu}) > 1
            # the two-step path (scores first, then the chosen hits) reports the same matches
            again = index.hits_for([(h.document.id, h.score) for h in hits], query)
            assert [(h.document.id, h.matched) for h in again] == [(h.document.id, h.matched) for h in hits]
    # the comparison covered RR matches and answers whose RR terms have several relations (some skipped)
    assert compared > 500 and rr_found > 100 and mixed > 100


def test_fts_stemmer_gives_the_plain_stems_call_after_call(builtin_index: Path) -> None:
    with SqliteIndex(builtin_index) as index:
        documents = list(index.documents())
    batches = [search_tokens(" ".join(doc.keywords + doc.entities + (doc.text,)))
               + [tok for term in doc.rr_edu for tok in rr_tokens(term.relation, term.words)]
               for doc in documents]
    batches.append(["--", "_", "naïve", "x²", "contrast_starting", "Cafés", ""])
    stemmer = FtsStemmer()
    stemmer.MAX_CACHE = 300  # cleared many times over: every answer must still be complete and right
    try:
        for batch in batches:
            assert stemmer.stems(batch) == plain_stems(list(dict.fromkeys(batch)))
        assert stemmer.conn.execute("SELECT COUNT(*) FROM v").fetchone()[0] == 0  # emptied after every call
    finally:
        stemmer.close()
