"""The answers' version history in a SQLite index (``doc_history``): what replacing, rebuilding and old files do."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from index_helpers import small_corpus

from index import history
from index.builder import build_index
from index.sqlite_index import SqliteIndex
from parsers.errors import ConfigError


def test_a_replaced_answer_keeps_its_earlier_versions_newest_first(tmp_path: Path, documents) -> None:
    doc = documents[0]
    with SqliteIndex(tmp_path / "ix.sqlite", readonly=False) as ix:
        ix.add(documents)
        assert ix.history(doc.id) == []
        ix.add([replace(doc, text="second text")])
        ix.add([replace(doc, text="third text")])
        ix.add([replace(doc, text="third text")])  # the same document again is no new version
        versions = ix.history(doc.id)
        assert [v.document.text for v in versions] == ["second text", doc.text]
        assert [v.version for v in versions] == [2, 1] and versions[0].replaced >= versions[1].replaced
        assert ix.get(doc.id).text == "third text"
    with SqliteIndex(tmp_path / "ix.sqlite") as reader:  # stored in the file: a reader sees it
        assert [v.document.text for v in reader.history(doc.id)] == ["second text", doc.text]


def test_a_re_parse_of_the_same_answer_is_no_new_version(tmp_path: Path, documents) -> None:
    """A rebuild with another parser changes the tree, keywords and RR terms of an unchanged answer: the
    history must not fill with copies of its text (it did when a rules index was rebuilt by the neural parser)."""
    doc = documents[0]
    with SqliteIndex(tmp_path / "ix.sqlite", readonly=False) as ix:
        ix.add([doc])
        ix.add([replace(doc, tree={"schema": 2, "nodes": []}, keywords=("other",), relations=("Contrast",))])
        assert ix.history(doc.id) == [] and ix.get(doc.id).keywords == ("other",)  # stored, not a version
        ix.add([replace(doc, text="an edited text", tree=None)])
        assert [v.document.text for v in ix.history(doc.id)] == [doc.text]
        ix.keep_version(replace(doc, keywords=("again",)))  # the same text as the newest version
        assert len(ix.history(doc.id)) == 1
        ix.add([replace(doc, text="an edited text", meta={"source": "api"})])  # the metadata is the answer's
        assert len(ix.history(doc.id)) == 2


def test_only_the_latest_versions_are_kept(tmp_path: Path, documents) -> None:
    doc = documents[0]
    with SqliteIndex(tmp_path / "ix.sqlite", readonly=False) as ix:
        ix.add([doc])
        for i in range(history.KEEP_VERSIONS + 5):
            ix.add([replace(doc, text=f"version {i}")])
        versions = ix.history(doc.id)
    assert len(versions) == history.KEEP_VERSIONS
    assert versions[0].document.text == f"version {history.KEEP_VERSIONS + 3}"


def test_a_rebuild_carries_the_history_and_the_api_answers_in_the_same_swap(tmp_path: Path, standin_parser,
                                                                           documents) -> None:
    out = tmp_path / "answers.sqlite"
    build_index(dialogues=small_corpus(), parser=standin_parser, backend="sqlite", out=out, progress=False)
    doc_id = documents[0].id
    with SqliteIndex(out, readonly=False) as ix:
        original = ix.get(doc_id)
        ix.add([replace(original, text="edited through the API", meta={"source": "api"})])
    seen: list[str] = []

    def finish(new_index: SqliteIndex) -> None:  # a caller's own finish step runs after the carry-over
        seen.append(new_index.get(doc_id).text)

    report = build_index(dialogues=small_corpus(), parser=standin_parser, backend="sqlite", out=out, progress=False,
                         finish=finish)
    assert seen == ["edited through the API"] and (report.kept_api_answers, report.dropped_api_answers) == (1, 0)
    with SqliteIndex(out) as ix:
        assert ix.get(doc_id).text == "edited through the API"  # an edit survives the rebuild
        assert [v.document.text for v in ix.history(doc_id)] == [original.text]
    report = build_index(dialogues=small_corpus(), parser=standin_parser, backend="sqlite", out=out, progress=False,
                         api_answers="drop")
    assert (report.kept_api_answers, report.dropped_api_answers) == (0, 1)
    assert "1 moved to the answer history" in report.summary()
    with SqliteIndex(out) as ix:
        assert ix.get(doc_id).text == original.text
        assert [v.document.text for v in ix.history(doc_id)] == ["edited through the API", original.text]


def test_a_failing_finish_step_leaves_the_old_index(tmp_path: Path, standin_parser) -> None:
    out = tmp_path / "answers.sqlite"
    build_index(dialogues=small_corpus()[:2], parser=standin_parser, backend="sqlite", out=out, progress=False)
    before = out.read_bytes()

    def finish(new_index: SqliteIndex) -> None:
        raise ConfigError("carrying the API answers failed")

    with pytest.raises(ConfigError, match="carrying"):
        build_index(dialogues=small_corpus(), parser=standin_parser, backend="sqlite", out=out, progress=False,
                    finish=finish)
    assert out.read_bytes() == before
    with pytest.raises(ConfigError, match="only supported by the sqlite backend"):
        build_index(dialogues=small_corpus(), parser=standin_parser, backend="elasticsearch", out=None,
                    progress=False, finish=finish)


def test_an_index_written_before_the_history_table_has_an_empty_history(tmp_path: Path, documents) -> None:
    path = tmp_path / "old.sqlite"
    with SqliteIndex(path, readonly=False) as ix:
        ix.add(documents)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE doc_history")
    with SqliteIndex(path) as reader:
        assert reader.history(documents[0].id) == [] and reader.export_history() == []
    with SqliteIndex(path, readonly=False) as writer:  # the first writer adds the table
        writer.add([replace(documents[0], text="replaced")])
        assert [v.document.text for v in writer.history(documents[0].id)] == [documents[0].text]


def test_a_read_only_index_refuses_history_writes(tmp_path: Path, documents) -> None:
    path = tmp_path / "ix.sqlite"
    with SqliteIndex(path, readonly=False) as ix:
        ix.add(documents)
    with SqliteIndex(path) as reader:
        with pytest.raises(ConfigError, match="read-only"):
            reader.keep_version(documents[0])
        with pytest.raises(ConfigError, match="read-only"):
            reader.import_history([])


def test_a_finish_step_runs_under_the_build_lock_and_its_answers_get_vectors_before_the_swap(
        tmp_path: Path, standin_parser, documents) -> None:
    """The API's rebuild (finish step) and the builder's lock and generation-named side files, together."""
    from index_helpers import CountingEncoder

    from index.dense_store import DenseStore
    from index.index_files import IndexBusyError, build_lock
    from index.sg_store import SGPhraseStore

    out = tmp_path / "answers.sqlite"
    build_index(dialogues=small_corpus(), parser=standin_parser, backend="sqlite", out=out, progress=False,
                dense=True, encoder=CountingEncoder())
    added = replace(documents[0], id="api-wipers#1", dialogue_id="api-wipers", meta={"source": "api"},
                    text="If the wipers stop in the middle of the glass, replace the park switch.")
    seen_live: list[str] = []

    def finish(new_index: SqliteIndex) -> None:
        with pytest.raises(IndexBusyError), build_lock(out, timeout=0):
            pass  # the build holds the lock while the finish step writes
        with SqliteIndex(out) as live:
            seen_live.append(live.generation())
        new_index.add([added])

    encoder = CountingEncoder()
    build_index(dialogues=small_corpus(), parser=standin_parser, backend="sqlite", out=out, progress=False,
                dense=True, encoder=encoder, finish=finish, reuse_side_files=True)
    assert encoder.seen == [added.text]  # the corpus answers kept their vectors: only the API answer was encoded
    with SqliteIndex(out) as index:
        assert index.generation() != seen_live[0]
        store, phrases = DenseStore.load(out, generation=index.generation()), SGPhraseStore.load(out)
        assert "api-wipers#1" in store.ids and store.ids == index.ids()
        assert phrases.in_step_with(index)


def test_a_version_with_an_unsafe_id_cannot_be_stored_again(tmp_path: Path, documents) -> None:
    """A legacy answer kept in the history under an id that is no longer safe: restoring it is refused."""
    from parsers.errors import InputError

    path = tmp_path / "ix.sqlite"
    legacy = replace(documents[0], id="<b>legacy</b>#1", dialogue_id="legacy")
    with SqliteIndex(path, readonly=False) as ix:
        ix.add(documents)
        ix.keep_version(legacy)  # the history keeps what it is given: nothing is lost
        [version] = ix.history(legacy.id)
        with pytest.raises(InputError, match="not a valid id"):
            ix.add([version.document])
        assert ix.get(legacy.id) is None and ix.count() == len(documents)
