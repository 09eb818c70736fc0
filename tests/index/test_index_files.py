"""The files of a SQLite index on disk: the output check, the build lock, side files by generation, leftovers."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from index_helpers import StandInParser, small_corpus

from index.builder import build_index
from index.index_files import (
    IndexBusyError,
    build_lock,
    check_output,
    clean_leftovers,
    index_generation,
    lock_path,
    prune_side_files,
    side_files,
    side_path,
)
from parsers.errors import InputError


@pytest.fixture()
def built(tmp_path: Path) -> Path:
    out = tmp_path / "answers.sqlite"
    build_index(dialogues=small_corpus()[:2], parser=StandInParser(), backend="sqlite", out=out, progress=False)
    return out


def test_output_check_accepts_nothing_or_an_index_and_refuses_the_rest(tmp_path: Path, built: Path) -> None:
    check_output(tmp_path / "new.sqlite")
    check_output(built)
    (tmp_path / "link.sqlite").symlink_to(built)
    check_output(tmp_path / "link.sqlite")  # a link to an index: the link is what gets replaced
    text = tmp_path / "notes.txt"
    text.write_text("my notes\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "to-fifo").symlink_to(fifo)
    (tmp_path / "to-text").symlink_to(text)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(InputError, match="exists and is not a dtdialog index.*--force"):
        check_output(text)
    check_output(text, force=True)
    for path, message in [(tmp_path, "is a directory"), (fifo, "is a FIFO"),
                          (tmp_path / "to-fifo", "symbolic link to a FIFO"),
                          (tmp_path / "to-text", "symbolic link to a file that is not a dtdialog index"),
                          (tmp_path / "dangling", "symbolic link to a missing file")]:
        with pytest.raises(InputError, match=message):
            check_output(path, force=True)  # --force never applies to anything but a regular file
    assert text.read_text() == "my notes\n"


def test_side_file_names_carry_a_hex_generation_only(tmp_path: Path) -> None:
    assert side_path(tmp_path / "a.sqlite", "dense", ".npy", "") == tmp_path / "a.sqlite.dense.npy"
    assert side_path(tmp_path / "a.sqlite", "sg", ".json", "00ff") == tmp_path / "a.sqlite.sg-00ff.json"
    with pytest.raises(InputError, match="not a hex token"):
        side_path(tmp_path / "a.sqlite", "sg", ".json", "../../etc/passwd")


def test_second_lock_holder_fails_naming_the_first_and_a_waiter_gets_it(tmp_path: Path) -> None:
    out = tmp_path / "answers.sqlite"
    order: list[str] = []
    with build_lock(out):
        assert lock_path(out).read_text().strip() == str(os.getpid())
        with pytest.raises(IndexBusyError, match=rf"another build \(pid {os.getpid()}\) is writing"):
            with build_lock(out, timeout=0.2):
                pass

        def waiter() -> None:
            with build_lock(out, timeout=30):
                order.append("waiter")

        thread = threading.Thread(target=waiter)
        thread.start()
        time.sleep(0.3)
        order.append("holder done")
    thread.join(timeout=30)
    assert order == ["holder done", "waiter"]
    assert not lock_path(out).exists()  # removed on release: a finished build leaves only the index


def test_leftovers_of_killed_builds_are_removed_and_nothing_else(built: Path) -> None:
    folder, name = built.parent, built.name
    live = index_generation(built)
    assert live
    ours = [f".{name}.k3x_9abc.tmp", f".{name}.k3x_9abc.tmp-wal", f".{name}.k3x_9abc.tmp-shm",
            f".{name}.dense-{'ab' * 8}.npy.q1w2e3r4.tmp", f"{name}.dense-{'ab' * 8}.npy",
            f"{name}.dense-{'ab' * 8}.ids.json", f"{name}.sg-{'ab' * 8}.json"]
    kept = [f"{name}-wal", f"{name}-shm", ".other.sqlite.k3x_9abc.tmp", f".{name}.notes.tmp", "notes.txt",
            f"{name}.dense-{live}.npy", f"{name}.dense-{live}.ids.json", f"{name}.sg-{live}.json",
            f".{name}.sg-{live}.json.a1b2c3d4.tmp"]  # a server may be refreshing the live files right now
    for entry in ours + kept:
        (folder / entry).write_bytes(b"x")
    removed = clean_leftovers(built)
    assert sorted(p.name for p in removed) == sorted(ours)
    assert all((folder / entry).exists() for entry in kept) and built.is_file()


def test_prune_keeps_the_newest_older_set_as_refresh_base_until_the_current_one_exists(tmp_path: Path) -> None:
    index = tmp_path / "a.sqlite"
    index.write_bytes(b"")
    for age, generation in ((30, "aa"), (20, "bb")):
        for kind, ext in (("dense", ".npy"), ("dense", ".ids.json"), ("sg", ".json")):
            path = side_path(index, kind, ext, generation)
            path.write_bytes(b"x")
            os.utime(path, (time.time() - age, time.time() - age))
    prune_side_files(index, "cc", locked=True)
    assert sorted(side_files(index)) == ["bb"]  # "cc" has none yet: the newest older set stays as the base
    side_path(index, "dense", ".npy", "cc").write_bytes(b"x")
    side_path(index, "dense", ".ids.json", "cc").write_bytes(b"x")
    prune_side_files(index, "cc", kinds=("dense",), locked=True)
    assert {g: sorted(p.name for p in ps) for g, ps in side_files(index).items()} == {
        "bb": ["a.sqlite.sg-bb.json"], "cc": ["a.sqlite.dense-cc.ids.json", "a.sqlite.dense-cc.npy"]}


def test_unlocked_prune_leaves_files_alone_while_a_build_holds_the_lock(built: Path) -> None:
    stale = side_path(built, "sg", ".json", "ab" * 8)
    side_path(built, "sg", ".json", index_generation(built)).write_bytes(b"x")
    stale.write_bytes(b"x")
    with build_lock(built):
        assert prune_side_files(built, index_generation(built)) == []
    assert stale.exists()
    assert prune_side_files(built, "0123") == []  # not the generation on disk: someone newer prunes
    assert prune_side_files(built, index_generation(built)) == [stale]
