"""SQLite specifics: missing or foreign files, read-only use, replacement by id, many concurrent readers."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from index.base import SearchQuery
from index.sqlite_index import DecodedDocuments, SqliteIndex, encode_doc, match_expression
from parsers.errors import ConfigError, InputError


def test_missing_index_says_how_to_build(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"index not found at .*nope\.sqlite; build it with `dtdialog index build"):
        SqliteIndex(tmp_path / "nope.sqlite")


def test_foreign_files_are_refused(tmp_path: Path) -> None:
    text = tmp_path / "notes.sqlite"
    text.write_text("just text, not a database\n" * 50)
    with pytest.raises(InputError, match="not a dtdialog index"):
        SqliteIndex(text)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t(x)")
    with pytest.raises(InputError, match="not a dtdialog index"):
        SqliteIndex(other)


def test_wal_and_read_only(tmp_path: Path, documents) -> None:
    path = tmp_path / "ix.sqlite"
    with SqliteIndex(path, readonly=False) as writer:
        assert writer.add(documents) == len(documents)
        mode = writer._conn().execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    with SqliteIndex(path) as reader:
        with pytest.raises(ConfigError, match="read-only"):
            reader.add(documents[:1])
        assert reader.count() == len(documents)


def test_add_replaces_same_id(tmp_path: Path, documents) -> None:
    path = tmp_path / "ix.sqlite"
    with SqliteIndex(path, readonly=False) as ix:
        ix.add(documents)
        changed = replace(documents[0], text="Replace the ignition switch.", keywords=("ignition", "switch"),
                          rr_edu=(), relations=())
        ix.add([changed])
        assert ix.count() == len(documents)
        assert ix.get(changed.id).text == "Replace the ignition switch."
        assert [h.document.id for h in ix.search(SearchQuery(keywords=("ignition",)))] == [changed.id]
        assert changed.id not in [h.document.id for h in ix.search(SearchQuery(keywords=("relay",)))]
        assert ix.search(SearchQuery(keywords=("belt",)).with_relation_filter("Contrast"))[0].document.id == "alt#1"


def test_decoded_documents_are_shared_until_the_stored_answer_changes(tmp_path: Path, documents) -> None:
    path = tmp_path / "ix.sqlite"
    with SqliteIndex(path, readonly=False) as ix:
        ix.add(documents)
        first = ix.get(documents[0].id)
        assert ix.get(documents[0].id) is first  # decoded once, then shared
        assert first == documents[0]
        hit = next(h for h in ix.search(SearchQuery(keywords=documents[0].keywords[:1])) if h.document.id == first.id)
        assert hit.document is first
        ix.add([replace(documents[0], text="Replace the ignition switch.")])  # a new blob: never the old copy
        assert ix.get(documents[0].id).text == "Replace the ignition switch."


def test_decoded_documents_keep_at_most_size_entries(documents) -> None:
    cache = DecodedDocuments(size=2)
    blobs = [encode_doc(d) for d in documents[:3]]
    decoded = [cache(b) for b in blobs]
    assert [d.id for d in decoded] == [d.id for d in documents[:3]]
    assert cache(blobs[2]) is decoded[2]
    assert cache(blobs[0]) is not decoded[0]  # the oldest was dropped and is decoded again, equal
    assert cache(blobs[0]) == decoded[0]


def test_match_expression_quotes_every_token() -> None:
    expr = match_expression(SearchQuery(keywords=('belt"*', "NEAR(x")).with_rr("Contrast", ["start:car"]))
    # "near" is a stop word and "x" too short: only "belt" is left, quoted; RR words are relation-tagged.
    assert expr == '{keywords} : ("belt") OR {rr_edu} : ("contrast_start" OR "contrast_car")'


def test_many_threads_search_one_index(tmp_path: Path, documents) -> None:
    path = tmp_path / "ix.sqlite"
    with SqliteIndex(path, readonly=False) as writer:
        writer.add(documents)
    queries = [SearchQuery(keywords=(w,)) for w in ("belt", "starter", "fuse", "rotor")] * 25
    with SqliteIndex(path) as reader, ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda q: [h.document.id for h in reader.search(q)], queries))
        expected = [[h.document.id for h in reader.search(q)] for q in queries[:4]]
    assert results == expected * 25
    assert all(results)


def test_closed_index_refuses_use(tmp_path: Path, documents) -> None:
    path = tmp_path / "ix.sqlite"
    with SqliteIndex(path, readonly=False) as writer:
        writer.add(documents)
    reader = SqliteIndex(path)
    reader.close()
    with pytest.raises(InputError, match="closed"):
        reader.count()


def test_answers_added_after_a_build_are_found(tmp_path: Path, documents) -> None:
    """Frequencies stored by optimize() go stale on add(): new words must still be searchable, by any reader."""
    path = tmp_path / "ix.sqlite"
    with SqliteIndex(path, readonly=False) as writer:
        writer.add(documents)
        writer.optimize()
    with SqliteIndex(path) as reader:
        assert reader.search(SearchQuery(keywords=("carburetor",))) == []
        with SqliteIndex(path, readonly=False) as writer:  # e.g. the API adding answers to a served index
            writer.add([replace(documents[0], id="new#1", keywords=("carburetor", "jet"))])
        assert [h.document.id for h in reader.search(SearchQuery(keywords=("carburetor",)))] == ["new#1"]


def test_scores_only_search_and_hits_for_agree_with_search(tmp_path: Path, documents) -> None:
    path = tmp_path / "ix.sqlite"
    with SqliteIndex(path, readonly=False) as writer:
        writer.add(documents)
    query = SearchQuery(keywords=("belt", "battery", "start"), size=5).with_rr("Contrast", ["start", "car"])
    with SqliteIndex(path) as ix:
        hits = ix.search(query)
        scored = ix.search_scores(query)
        assert [(h.document.id, h.score) for h in hits] == scored and scored
        again = ix.hits_for(scored, query)
        assert [(h.document.id, h.score, h.matched) for h in again] == [(h.document.id, h.score, h.matched) for h in hits]
        assert ix.hits_for([("no-such#1", 1.0), *scored[:1]], query)[0].document.id == scored[0][0]  # gone ids skipped
        assert ix.hits_for([], query) == []
        with pytest.raises(InputError):
            ix.search_scores(SearchQuery())


def test_answer_texts_reads_every_document_in_insertion_order(tmp_path: Path, documents) -> None:
    path = tmp_path / "ix.sqlite"
    with SqliteIndex(path, readonly=False) as writer:
        writer.add(documents)
    with SqliteIndex(path) as ix:
        ids, texts = ix.answer_texts()
        assert ids == ix.ids() and texts == [ix.get(i).text for i in ids]


def test_get_many_reads_what_get_reads_in_one_query(tmp_path: Path, documents) -> None:
    path = tmp_path / "ix.sqlite"
    with SqliteIndex(path, readonly=False) as ix:
        ix.add(documents)
    with SqliteIndex(path) as ix:
        ids = [d.id for d in reversed(documents)]
        got = ix.get_many([*ids, "gone#9", ids[0]])
        assert sorted(got) == sorted(ids)  # each once, the missing id left out
        assert all(got[i] == ix.get(i) for i in ids)
        assert ix.get_many([]) == {}
