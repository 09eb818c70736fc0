"""Installing the shipped built-in index on a first start: two chats starting at once in one fresh home, a damaged
bundle, and what a killed install left behind (issue 16, item 5)."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

from data.builtin import load_builtin_corpus
from dtdialog.setup import prebuilt
from index.index_files import index_generation
from index.sqlite_index import SqliteIndex
from parsers.base import get_parser

REPO = Path(__file__).resolve().parents[2]
_INSTALL = """
import sys
from pathlib import Path
from data.builtin import load_builtin_corpus
from dtdialog.setup.prebuilt import install_builtin
from parsers.base import get_parser
ok = install_builtin(Path(sys.argv[1]), parser=get_parser("rules"), dialogues=load_builtin_corpus(), progress=True)
sys.exit(0 if ok else 3)
"""


def test_two_first_starts_at_once_both_get_one_whole_index(tmp_path):
    target = tmp_path / "home" / "index.sqlite"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", _INSTALL, str(target)], env=env, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert [code for code, _ in results] == [0, 0], results
    generation = index_generation(target)
    assert generation == prebuilt.read_manifest(prebuilt.bundle_dir("rules"))["generation"]
    names = sorted(p.name for p in target.parent.iterdir() if not p.name.endswith(("-wal", "-shm")))
    assert names == sorted(["index.sqlite", f"index.sqlite.dense-{generation}.ids.json",
                            f"index.sqlite.dense-{generation}.npy", f"index.sqlite.sg-{generation}.json"])
    with SqliteIndex(target) as index:
        assert index.count() > 0


def test_a_damaged_bundle_installs_nothing(tmp_path, capsys):
    root = tmp_path / "bundles"
    folder = prebuilt.bundle_dir("rules", root)
    shutil.copytree(prebuilt.bundle_dir("rules"), folder)
    # the index file decompresses fine but its content differs: the sha256 check refuses it
    (folder / "index.sqlite.gz").write_bytes(gzip.compress(b"SQLite format 3\x00" + b"\x00" * 4096))
    target = tmp_path / "home" / "index.sqlite"
    assert not prebuilt.install_builtin(target, parser=get_parser("rules"), dialogues=load_builtin_corpus(), root=root)
    assert "does not match its sha256" in capsys.readouterr().err
    assert list(target.parent.iterdir()) == []  # no index, no side files of an index that never went live
    (folder / "sg.json.gz").write_bytes(b"truncated")  # not even gzip
    assert not prebuilt.install_builtin(target, parser=get_parser("rules"), dialogues=load_builtin_corpus(), root=root)
    assert list(target.parent.iterdir()) == []


def test_leftovers_of_a_killed_install_are_cleared_by_the_next(tmp_path):
    target = tmp_path / "home" / "index.sqlite"
    target.parent.mkdir()
    generation = prebuilt.read_manifest(prebuilt.bundle_dir("rules"))["generation"]
    leftovers = [target.parent / f".index.sqlite.dense-{generation}.npy.abcd1234.tmp",
                 target.parent / ".index.sqlite.k1l2m3n4.tmp", target.parent / f"index.sqlite.sg-{generation}.json"]
    for path in leftovers:
        path.write_bytes(b"half")
    assert prebuilt.install_builtin(target, parser=get_parser("rules"), dialogues=load_builtin_corpus(), progress=False)
    assert not leftovers[0].exists() and not leftovers[1].exists()
    with SqliteIndex(target) as index:
        from index.sg_store import SGPhraseStore

        assert SGPhraseStore.load(target, generation=index.generation()).in_step_with(index)
