"""Index builds: reports, skipped answers, and atomic rebuilds that survive a crash half-way."""

from __future__ import annotations

from pathlib import Path

import pytest
from index_helpers import StandInParser, small_corpus

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
