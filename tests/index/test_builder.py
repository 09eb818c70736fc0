"""Index builds: reports, skipped answers, and atomic rebuilds that survive a crash half-way."""

from __future__ import annotations

from pathlib import Path

import pytest
from index_helpers import CountingEncoder, StandInParser, small_corpus

from index.base import SearchQuery
from index.builder import build_index
from index.sqlite_index import SqliteIndex
from parsers.errors import ConfigError, InputError
from parsers.tree import DiscourseTree


def files(folder: Path) -> list[str]:
    """Return the file names in ``folder``, leaving out the -wal/-shm files that WAL readers keep."""
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(("-wal", "-shm")))


class CrashingParser(StandInParser):
    """Parses ``crash_after`` texts, then fails the way a killed worker or a bug would."""

    def __init__(self, crash_after: int) -> None:
        self.crash_after = crash_after
        self.parsed = 0

    def parse(self, text: str) -> DiscourseTree:
        if self.parsed >= self.crash_after:
            raise RuntimeError("simulated crash in the middle of a build")
        self.parsed += 1
        return super().parse(text)


class PickyParser(StandInParser):
    """Refuses texts mentioning fuses, as a parser refuses unusable text."""

    def parse(self, text: str) -> DiscourseTree:
        if "fuse" in text:
            raise InputError("cannot parse this text")
        return super().parse(text)


def test_build_report_and_searchable_result(tmp_path: Path, standin_parser) -> None:
    out = tmp_path / "sub" / "answers.sqlite"
    report = build_index(dialogues=small_corpus(), parser=standin_parser, backend="sqlite", out=out, progress=False)
    assert (report.dialogues, report.answers, report.indexed, report.skipped) == (4, 5, 5, [])
    assert report.answers_per_second > 0 and report.to_dict()["parser"] == "standin"
    with SqliteIndex(out) as ix:
        assert ix.count() == 5
        assert ix.info()["indexed"] == 5
        hit = ix.search(SearchQuery().with_rr("Contrast", ["battery"]))[0]
        assert hit.matched["rr_terms"] == ["Contrast [battery]"]
    assert files(out.parent) == ["answers.sqlite"]


def test_unparseable_answer_is_skipped_and_reported(tmp_path: Path) -> None:
    report = build_index(dialogues=small_corpus(), parser=PickyParser(), backend="sqlite",
                         out=tmp_path / "a.sqlite", progress=False)
    assert report.indexed == 4
    assert report.skipped == [("overheat#1", "cannot parse this text")]


def test_crash_mid_build_keeps_old_index_and_leaves_no_temp(tmp_path: Path, standin_parser) -> None:
    out = tmp_path / "answers.sqlite"
    build_index(dialogues=small_corpus()[:2], parser=standin_parser, backend="sqlite", out=out, progress=False)
    before = out.read_bytes()
    with pytest.raises(RuntimeError, match="simulated crash"):
        build_index(dialogues=small_corpus(), parser=CrashingParser(crash_after=3), backend="sqlite", out=out,
                    progress=False)
    assert out.read_bytes() == before
    assert files(tmp_path) == ["answers.sqlite"]
    with SqliteIndex(out) as ix:
        assert ix.count() == 3
        assert ix.search(SearchQuery(keywords=("starter",)))


def test_rebuild_replaces_index(tmp_path: Path, standin_parser) -> None:
    out = tmp_path / "answers.sqlite"
    build_index(dialogues=small_corpus()[:1], parser=standin_parser, backend="sqlite", out=out, progress=False)
    with SqliteIndex(out) as old_reader:
        build_index(dialogues=small_corpus(), parser=standin_parser, backend="sqlite", out=out, progress=False)
        assert old_reader.count() == 2  # an open reader keeps its snapshot until it reopens
    with SqliteIndex(out) as ix:
        assert ix.count() == 5


def test_bad_options(tmp_path: Path, standin_parser) -> None:
    with pytest.raises(ConfigError, match="unknown index backend 'solr'"):
        build_index(dialogues=small_corpus(), parser=standin_parser, backend="solr", out=tmp_path / "x")
    with pytest.raises(ConfigError, match="needs an output path"):
        build_index(dialogues=small_corpus(), parser=standin_parser, backend="sqlite", out=None, progress=False)
    with pytest.raises(InputError, match="no answer turns"):
        build_index(dialogues=[], parser=standin_parser, backend="sqlite", out=tmp_path / "x", progress=False)
    with pytest.raises(InputError, match="is a directory"):
        build_index(dialogues=small_corpus(), parser=standin_parser, backend="sqlite", out=tmp_path, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def _side_names(out: Path) -> dict[str, list[str]]:
    from index.index_files import side_files

    return {g: sorted(p.name for p in paths) for g, paths in side_files(out).items()}


def test_dense_rebuild_swaps_index_vectors_and_phrases_together(tmp_path: Path, standin_parser) -> None:
    """The new vectors and phrases are written before the rename, named by the new generation; the old ones go."""
    from index.dense_store import DenseStore
    from index.sg_store import SGPhraseStore

    out = tmp_path / "answers.sqlite"
    build_index(dialogues=small_corpus()[:2], parser=standin_parser, backend="sqlite", out=out, progress=False,
                dense=True, encoder=CountingEncoder())
    with SqliteIndex(out) as old_reader:
        old_generation = old_reader.generation()
        build_index(dialogues=small_corpus()[1:], parser=standin_parser, backend="sqlite", out=out, progress=False,
                    dense=True, encoder=CountingEncoder())
        assert old_reader.generation() == old_generation  # an open reader keeps its snapshot
    with SqliteIndex(out) as index:
        generation = index.generation()
        assert generation != old_generation
        store, phrases = DenseStore.load(out), SGPhraseStore.load(out)
        assert store.generation == generation and store.ids == index.ids()
        assert phrases.in_step_with(index)
    assert _side_names(out) == {generation: [f"answers.sqlite.dense-{generation}.ids.json",
                                             f"answers.sqlite.dense-{generation}.npy",
                                             f"answers.sqlite.sg-{generation}.json"]}
    assert files(tmp_path) == sorted(["answers.sqlite", *_side_names(out)[generation]])  # no temp or lock file


def test_crash_while_writing_phrases_keeps_old_index_with_its_own_vectors(tmp_path: Path, standin_parser,
                                                                          monkeypatch) -> None:
    """The probe: a killed ``--dense`` build had put the new index next to the old vectors."""
    import index.sg_store
    from index.dense_store import DenseStore

    out = tmp_path / "answers.sqlite"
    build_index(dialogues=small_corpus()[:2], parser=standin_parser, backend="sqlite", out=out, progress=False,
                dense=True, encoder=CountingEncoder())
    before, names = out.read_bytes(), _side_names(out)

    def crash(*args, **kwargs):
        raise RuntimeError("simulated crash after the vectors were written")

    monkeypatch.setattr(index.sg_store, "build_for_index", crash)
    with pytest.raises(RuntimeError, match="simulated crash"):
        build_index(dialogues=small_corpus(), parser=standin_parser, backend="sqlite", out=out, progress=False,
                    dense=True, encoder=CountingEncoder())
    assert out.read_bytes() == before and _side_names(out) == names  # the new vectors went with the new index
    with SqliteIndex(out) as index:
        assert DenseStore.load(out).ids == index.ids()
    assert files(tmp_path) == sorted(["answers.sqlite", *next(iter(names.values()))])


def test_refused_outputs_are_left_untouched(tmp_path: Path, standin_parser) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("keep me\n")
    with pytest.raises(InputError, match="not a dtdialog index"):
        build_index(dialogues=small_corpus(), parser=standin_parser, backend="sqlite", out=notes, progress=False)
    assert notes.read_text() == "keep me\n" and files(tmp_path) == ["notes.txt"]
    build_index(dialogues=small_corpus(), parser=standin_parser, backend="sqlite", out=notes, progress=False,
                force=True)
    with SqliteIndex(notes) as index:
        assert index.count() == 5
