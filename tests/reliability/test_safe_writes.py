"""Issue 31, items 6 and 7: commands renamed over anything, and the build lock followed links.

``dtdialog test --junit``, ``parse --image`` and ``eval --out DIR`` replaced devices, FIFOs and symbolic links, and
``index build`` truncated whatever its ``.X.sqlite.lock`` linked to. Each now refuses such a path with one
``error:`` line and exit 2, and leaves it as it was (the FIFO a FIFO, the link a link, its target unchanged). In
the API a session lock that is a link fails the turn (503) instead of being opened through.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from reliability_helpers import assert_one_line_error, dtdialog_command, folder_snapshot, python_env

VICTIM = b"the victim's own content\n"
#: what each kind of target is called in the refusal
KINDS = {"fifo": "is a FIFO", "link": "is a symbolic link to a regular file", "device": "is a character device"}
EVAL = ["eval", "--dataset", "builtin", "--methods", "keyword", "--limit", "1", "--bootstrap", "1", "--no-progress"]


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(dtdialog_command(*args), capture_output=True, text=True, env=python_env(), cwd=cwd,
                          timeout=240)


def _make(kind: str, path: Path) -> Path:
    """Make ``path`` a FIFO, a link to a victim file beside it, or a /dev/null-like device (skipped without root)."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link":
        victim = path.parent / "victim.txt"
        victim.write_bytes(VICTIM)
        path.symlink_to(victim)
    else:
        try:
            os.mknod(path, 0o666 | 0o020000, os.makedev(1, 3))  # S_IFCHR: the numbers of /dev/null
        except PermissionError:
            pytest.skip("making a character device needs root (mknod)")
    return path


@pytest.fixture(params=list(KINDS))
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.mark.timeout(300)
def test_junit_report_over_a_special_file_is_refused(tmp_path, kind):
    target = _make(kind, tmp_path / "report.xml")
    before = folder_snapshot(tmp_path)
    assert_one_line_error(_run("test", "--junit", str(target), "--quiet", cwd=tmp_path), "--junit", KINDS[kind])
    assert folder_snapshot(tmp_path) == before


@pytest.mark.timeout(300)
def test_parse_image_over_a_special_file_is_refused(tmp_path, kind):
    target = _make(kind, tmp_path / "tree.svg")
    before = folder_snapshot(tmp_path)
    proc = _run("parse", "My car stalls because the battery is dead.", "--parser", "rules", "--image", str(target),
                cwd=tmp_path)
    assert_one_line_error(proc, str(target), KINDS[kind])
    assert folder_snapshot(tmp_path) == before


@pytest.mark.timeout(300)
def test_eval_report_over_a_special_file_in_out_is_refused(tmp_path, kind):
    out = tmp_path / "out"
    out.mkdir()
    _make(kind, out / "results.md")
    before = {"out": folder_snapshot(out), "top": folder_snapshot(tmp_path)}
    assert_one_line_error(_run(*EVAL, "--out", str(out), cwd=tmp_path), "results.md", KINDS[kind])
    # nothing replaced: no report written beside the refused one either, and no temporary file left
    assert {"out": folder_snapshot(out), "top": folder_snapshot(tmp_path)} == before


@pytest.mark.timeout(300)
def test_eval_out_that_is_a_link_to_a_folder_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").symlink_to(elsewhere)
    assert_one_line_error(_run(*EVAL, "--out", str(tmp_path / "out"), cwd=tmp_path),
                          "is a symbolic link, not a folder")
    assert list(elsewhere.iterdir()) == []


@pytest.mark.timeout(300)
def test_build_lock_that_is_not_a_regular_file_is_refused(tmp_path, kind):
    _make(kind, tmp_path / ".t.sqlite.lock")
    before = folder_snapshot(tmp_path)
    proc = _run("index", "build", "--format", "builtin", "--limit", "3", "--out", "t.sqlite", "--quiet", cwd=tmp_path)
    assert_one_line_error(proc, ".t.sqlite.lock", KINDS[kind].replace(" to a regular file", ""), "refusing to use it")
    assert folder_snapshot(tmp_path) == before  # the victim not truncated, no index and no temporary file made


def test_a_session_lock_that_is_a_link_fails_the_turn_and_leaves_the_target(make_client, tmp_path):
    from dtdialog.runtime.process_lock import bucket_path

    client = make_client()
    sid = client.post("/sessions").json()["session_id"]
    lock = bucket_path(tmp_path / "sessions.sqlite-locks", sid)
    lock.unlink(missing_ok=True)
    _make("link", lock)
    response = client.post(f"/sessions/{sid}/messages", json={"text": "My battery dies overnight."})
    assert response.status_code == 503 and response.json()["error"]["code"] == "storage_unavailable", response.text
    assert lock.is_symlink() and (lock.parent / "victim.txt").read_bytes() == VICTIM
