"""``parsers.files``: the old content or the new one, never a half-written file or a leftover, and nothing but a
regular file replaced (no FIFO, device, folder or link; lock files and logs never opened through a link)."""

from __future__ import annotations

import os

import pytest

from parsers import files
from parsers.errors import InputError, StorageError
from parsers.files import atomic_write, check_out_dir, open_append, open_lock_file


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "sub" / "data.bin"
    assert atomic_write(target, lambda fh: fh.write(b"old")) == target
    with pytest.raises(RuntimeError):
        atomic_write(target, lambda fh: (fh.write(b"half"), (_ for _ in ()).throw(RuntimeError("disk"))))
    assert target.read_bytes() == b"old"
    assert [p.name for p in target.parent.iterdir()] == ["data.bin"]
    atomic_write(target, lambda fh: fh.write(b"new"))
    umask = os.umask(0)
    os.umask(umask)
    assert target.read_bytes() == b"new"
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask  # the usual permissions, not mkstemp's 0600


# --- the safe-write rule: only a missing path or a regular file is replaced ------------------------------------
VICTIM = b"somebody else's file\n"


def _specials(folder):
    """A FIFO, a link to a victim file, a broken link and a folder: what may never be replaced."""
    os.mkfifo(folder / "fifo")
    (folder / "victim").write_bytes(VICTIM)
    (folder / "link").symlink_to(folder / "victim")
    (folder / "broken").symlink_to(folder / "nowhere")
    (folder / "dir").mkdir()
    return folder


@pytest.mark.parametrize(("name", "message"), [
    ("fifo", "is a FIFO; refusing to replace it"),
    ("link", "is a symbolic link to a regular file; refusing to replace it"),
    ("broken", "is a symbolic link to a missing file; refusing to replace it"),
    ("dir", "is a directory; give a file path"),
])
def test_anything_but_a_regular_file_is_refused_and_left_as_it_was(tmp_path, name, message):
    _specials(tmp_path)
    before = sorted((p.name, os.lstat(p).st_mode) for p in tmp_path.iterdir())
    with pytest.raises(InputError, match=message) as err:
        atomic_write(tmp_path / name, lambda fh: fh.write(b"new"))
    assert str(err.value).startswith(str(tmp_path / name)) and "\n" not in str(err.value)
    assert sorted((p.name, os.lstat(p).st_mode) for p in tmp_path.iterdir()) == before  # no temporary left
    assert (tmp_path / "victim").read_bytes() == VICTIM and not (tmp_path / "nowhere").exists()


def test_a_link_put_there_during_the_write_is_refused_at_the_rename(tmp_path):
    (tmp_path / "victim").write_bytes(VICTIM)
    target = tmp_path / "out.txt"

    def write(fh):
        fh.write(b"new")
        target.symlink_to(tmp_path / "victim")

    with pytest.raises(InputError, match="symbolic link"):
        atomic_write(target, write)
    assert target.is_symlink() and (tmp_path / "victim").read_bytes() == VICTIM
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt", "victim"]


def test_the_folder_swapped_for_a_link_during_the_write_is_not_followed(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "elsewhere").mkdir()

    def write(fh):
        fh.write(b"new")
        (tmp_path / "real").rename(tmp_path / "moved")
        (tmp_path / "real").symlink_to(tmp_path / "elsewhere")

    atomic_write(tmp_path / "real" / "out.txt", write)
    assert list((tmp_path / "elsewhere").iterdir()) == []
    assert (tmp_path / "moved" / "out.txt").read_bytes() == b"new"  # the folder opened first got it


def test_a_link_at_the_temporary_name_is_never_written_through(tmp_path, monkeypatch):
    (tmp_path / "victim").write_bytes(VICTIM)
    monkeypatch.setattr(files.secrets, "choice", lambda chars: "a")  # every try picks the same temporary name
    (tmp_path / ".out.txt.aaaaaaaa.tmp").symlink_to(tmp_path / "victim")
    with pytest.raises(FileExistsError):
        atomic_write(tmp_path / "out.txt", lambda fh: fh.write(b"new"))
    assert (tmp_path / "victim").read_bytes() == VICTIM and not (tmp_path / "out.txt").exists()


def test_out_dir_is_a_real_folder_or_nothing(tmp_path):
    _specials(tmp_path)
    (tmp_path / "to-dir").symlink_to(tmp_path / "dir")
    assert check_out_dir(tmp_path / "dir") == tmp_path / "dir"
    assert check_out_dir(tmp_path / "new") == tmp_path / "new" and not (tmp_path / "new").exists()
    for name, kind in (("to-dir", "a symbolic link"), ("victim", "a regular file"), ("fifo", "a FIFO")):
        with pytest.raises(InputError, match=f"is {kind}, not a folder"):
            check_out_dir(tmp_path / name)


def test_a_lock_file_is_made_0600_and_never_opened_through_a_link_or_on_a_fifo(tmp_path):
    _specials(tmp_path)
    fd = open_lock_file(tmp_path / "new.lock")
    os.close(fd)
    assert (tmp_path / "new.lock").stat().st_mode & 0o777 == 0o600
    for name, kind in (("link", "a symbolic link"), ("broken", "a symbolic link"), ("fifo", "a FIFO"),
                       ("dir", "a directory")):
        with pytest.raises(StorageError, match=f"the lock file .*{name} is {kind}; refusing to use it"):
            open_lock_file(tmp_path / name)
    assert (tmp_path / "victim").read_bytes() == VICTIM and not (tmp_path / "nowhere").exists()


def test_a_log_is_appended_to_a_regular_file_only(tmp_path):
    _specials(tmp_path)
    for _ in range(2):
        with open(open_append(tmp_path / "trace.jsonl"), "a") as fh:
            fh.write("{}\n")
    assert (tmp_path / "trace.jsonl").read_text() == "{}\n{}\n"
    with pytest.raises(InputError, match="link is a symbolic link; refusing to use it"):
        open_append(tmp_path / "link")
    with pytest.raises(InputError, match="fifo is a FIFO"):
        open_append(tmp_path / "fifo")  # no reader: without O_NONBLOCK this open would wait for ever
    assert (tmp_path / "victim").read_bytes() == VICTIM
