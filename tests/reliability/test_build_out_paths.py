"""Probe finding 5: ``dtdialog index build --out`` renamed over any path.

As root, ``--out /dev/null`` replaced the device with an SQLite file, and text files were replaced too. Now
anything that exists and is not a dtdialog index is refused (one ``error:`` line, exit 2, left untouched),
unless ``--force`` is given for a regular file. The device-like case is a FIFO made here (never /dev/null).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from reliability_helpers import folder_snapshot

from dtdialog.cli import main

BUILD = ["index", "build", "--format", "builtin", "--limit", "1", "--quiet"]


@pytest.fixture()
def targets(tmp_path: Path) -> dict[str, Path]:
    """A directory, a text file, a FIFO, a link to the FIFO and a link to a text file, side by side."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "notes.txt").write_text("my notes, not an index\n")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "to-fifo").symlink_to(tmp_path / "fifo")
    (tmp_path / "to-notes").symlink_to(tmp_path / "notes.txt")
    return {name: tmp_path / name for name in ("folder", "notes.txt", "fifo", "to-fifo", "to-notes")}


@pytest.mark.timeout(60)  # a FIFO opened for reading would hang: the guard turns that into a failure
@pytest.mark.parametrize(("name", "force", "message"), [
    ("folder", False, "is a directory"),
    ("folder", True, "is a directory"),
    ("notes.txt", False, "exists and is not a dtdialog index; refusing to replace it (--force replaces a regular file)"),
    ("fifo", False, "is a FIFO, not a dtdialog index"),
    ("fifo", True, "is a FIFO, not a dtdialog index"),
    ("to-fifo", False, "is a symbolic link to a FIFO, not a dtdialog index"),
    ("to-fifo", True, "is a symbolic link to a FIFO, not a dtdialog index"),
    ("to-notes", True, "is a symbolic link to a file that is not a dtdialog index"),
])
def test_out_that_is_not_an_index_is_refused_and_untouched(targets, tmp_path, capsys, name, force, message) -> None:
    before = folder_snapshot(tmp_path)
    assert main([*BUILD, "--out", str(targets[name]), *(["--force"] if force else [])]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert folder_snapshot(tmp_path) == before  # nothing replaced, no lock or temp file left


@pytest.mark.timeout(300)
def test_force_replaces_a_text_file_and_an_index_is_rebuilt_without_it(targets, capsys) -> None:
    from index.sqlite_index import SqliteIndex

    notes = targets["notes.txt"]
    assert main([*BUILD, "--out", str(notes), "--force"]) == 0
    with SqliteIndex(notes) as index:
        assert index.count() > 0
    assert main([*BUILD, "--out", str(notes)]) == 0  # now a dtdialog index: replaced without --force
    assert "indexed" in capsys.readouterr().out
    assert sorted(p.name for p in notes.parent.iterdir() if not p.name.endswith(("-wal", "-shm"))) == sorted(targets)
