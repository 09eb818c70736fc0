"""``parsers.files.atomic_write``: the old content or the new one, never a half-written file or a leftover."""

from __future__ import annotations

import os

import pytest

from parsers.files import atomic_write


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
