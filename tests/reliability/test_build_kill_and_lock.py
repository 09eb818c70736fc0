"""Probe finding 7: index builds were only partly atomic.

- Two concurrent builds on one ``--out`` both exited 0, and the last rename won.
- Killed after 9 s, ``index build --dense`` had already put the new SQLite file in place next to the old
  corpus's vectors.
- ``.tmp``, ``-wal`` and ``-shm`` files were left behind after a kill.

Real ``python -m dtdialog index build`` processes. The first build is paused (SIGSTOP) while it holds the lock,
so the second meets the lock every time rather than by luck; ``--dense`` builds are killed (SIGKILL) as soon as
the progress line of each stage appears, and once at the very end, around the rename.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from index.index_files import lock_path
from index.sqlite_index import SqliteIndex

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _build(corpus: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "dtdialog", "index", "build", "--format", "jsonl", "--corpus", str(corpus),
            "--out", str(out), *extra]


def _answer_ids(corpus: Path) -> set[str]:
    from data.model import Dialogue

    dialogues = [Dialogue.from_dict(json.loads(line)) for line in corpus.read_text().splitlines()]
    return {d.answer_id(p) for d in dialogues for p, _ in d.answers()}


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two small corpora of the built-in dialogues with disjoint answer ids: the old index's and the new one's."""
    from data.builtin import load_builtin_corpus

    dialogues = load_builtin_corpus()
    folder = tmp_path_factory.mktemp("corpora")
    paths = []
    for name, part in (("old", dialogues[:2]), ("new", dialogues[2:5])):
        path = folder / f"{name}.jsonl"
        path.write_text("".join(json.dumps(d.to_dict()) + "\n" for d in part))
        paths.append(path)
    assert not _answer_ids(paths[0]) & _answer_ids(paths[1])
    return paths[0], paths[1]


def _read_until(proc: subprocess.Popen, marker: bytes) -> bytes:
    """Return the stderr of ``proc`` read until ``marker`` appears (or the process closes it)."""
    seen = b""
    while marker not in seen:
        chunk = proc.stderr.read1(65536)
        if not chunk:
            break
        seen += chunk
    return seen


def _not_wal(folder: Path) -> list[str]:
    """Return the names in ``folder`` except the live index's -wal/-shm (readers' files, not leftovers)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(("-wal", "-shm")))


@pytest.mark.timeout(300)
def test_second_build_fails_clearly_and_a_waiting_one_runs_after_the_first(corpora, tmp_path) -> None:
    old_corpus, new_corpus = corpora
    out = tmp_path / "answers.sqlite"
    first = subprocess.Popen(_build(old_corpus, out, "--quiet"), env=_env(), stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (lock_path(out).is_file() and lock_path(out).read_text().strip() == str(first.pid)):
        assert first.poll() is None and time.monotonic() < deadline, "the first build never took the lock"
        time.sleep(0.05)
    os.kill(first.pid, signal.SIGSTOP)  # holds the lock, frozen: the next builds meet it for sure
    third = None
    try:
        second = subprocess.run(_build(new_corpus, out, "--quiet"), env=_env(), capture_output=True, text=True,
                                timeout=120)
        assert second.returncode == 2
        assert second.stderr == f"error: another build (pid {first.pid}) is writing {out}; wait for it to finish " \
                                "or give a longer --wait\n"
        third = subprocess.Popen(_build(new_corpus, out, "--wait", "200"), env=_env(), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE)
        assert b"for another build (pid %d)" % first.pid in _read_until(third, b"for another build")
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert first.wait(timeout=120) == 0
    third.communicate(timeout=120)  # reads the rest of its progress output, so it never blocks on a full pipe
    assert third.returncode == 0
    with SqliteIndex(out) as index:  # the waiting build ran after the first, so its complete index is the one left
        assert set(index.ids()) == _answer_ids(new_corpus)
    assert _not_wal(tmp_path) == ["answers.sqlite"]  # no temp or lock file


class _Refuse:
    """An encoder / spaCy pipeline that fails when used: serving must not need to redo anything.

    It names itself the default encoder, so vectors the build made with that one count as its own."""

    @property
    def model_id(self) -> str:
        from index.dense import DenseEncoder

        return DenseEncoder().model_id

    def __getattr__(self, name: str):
        raise AssertionError(f"the index was served with out-of-step derived data (asked for {name!r})")


def _assert_served_complete(out: Path) -> set[str]:
    """Assert the index at ``out`` comes with its own vectors and SG phrases; return its answer ids."""
    from dtdialog.ranking.factory import _store_for
    from index.sg_store import sg_store_for

    with SqliteIndex(out) as index:
        store = _store_for(index, out, encoder=_Refuse(), progress=False)
        assert store.ids == index.ids() and store.generation == index.generation()
        assert sg_store_for(index, out, nlp=_Refuse(), progress=False).in_step_with(index)
        return set(index.ids())


def _killed_at(argv: list[str], marker: bytes) -> int:
    """Run ``argv``, SIGKILL it as soon as its stderr shows ``marker``; return its exit status."""
    proc = subprocess.Popen(argv, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        seen = _read_until(proc, marker)
        proc.kill()
        assert marker in seen or proc.wait() == 0, seen.decode(errors="replace")[-2000:]
        return proc.wait()
    finally:
        proc.kill()
        proc.wait()
        proc.stderr.close()


@pytest.mark.timeout(900)
def test_kill_9_of_a_dense_build_serves_old_or_new_complete_and_the_next_build_cleans_up(corpora, tmp_path) -> None:
    from index.dense import dense_available

    if not dense_available():
        pytest.skip("the [dense] extra is not installed: --dense builds cannot run")
    old_corpus, new_corpus = corpora
    old_ids, new_ids = _answer_ids(old_corpus), _answer_ids(new_corpus)
    template = tmp_path / "template"
    template.mkdir()
    subprocess.run(_build(old_corpus, template / "answers.sqlite", "--dense", "--quiet"), env=_env(), check=True,
                   timeout=300, stdout=subprocess.DEVNULL)
    assert _assert_served_complete(template / "answers.sqlite") == old_ids
    # stages before the rename: the old index must stay, with its own vectors and phrases
    for marker in (b"parsing answers", b"encoding answers", b"SG phrases"):
        folder = tmp_path / marker.decode().replace(" ", "-")
        shutil.copytree(template, folder)
        assert _killed_at(_build(new_corpus, folder / "answers.sqlite", "--dense"), marker) == -signal.SIGKILL
        assert _assert_served_complete(folder / "answers.sqlite") == old_ids, marker
        assert any(name.endswith(".tmp") for name in _not_wal(folder)), "the kill left nothing to clean up"
    # the very end, around the rename: old or new, each complete
    folder = tmp_path / "end"
    shutil.copytree(template, folder)
    _killed_at(_build(new_corpus, folder / "answers.sqlite", "--dense"), b"SG phrases: 100%")
    assert _assert_served_complete(folder / "answers.sqlite") in (old_ids, new_ids)
    # the next build removes what the kill in the SG stage left (temp index, the dead generation's vectors, lock)
    folder = tmp_path / "SG-phrases"
    subprocess.run(_build(new_corpus, folder / "answers.sqlite", "--dense", "--quiet"), env=_env(), check=True,
                   timeout=300, stdout=subprocess.DEVNULL)
    assert _assert_served_complete(folder / "answers.sqlite") == new_ids
    with SqliteIndex(folder / "answers.sqlite") as index:
        generation = index.generation()
    assert _not_wal(folder) == sorted(["answers.sqlite", f"answers.sqlite.dense-{generation}.ids.json",
                                       f"answers.sqlite.dense-{generation}.npy",
                                       f"answers.sqlite.sg-{generation}.json"])
