"""Probe findings 1, 7 and 8: a full disk hung ``index build``; disk full (x2) and read-only (x3) ended in tracebacks;
a valid index on a read-only file system was reported as "not a dtdialog index".

Every storage fault is now one ``error:`` line with exit 2 on the command line, and a specific code in the API
(507 ``storage_full``, 503 ``storage_read_only``/``storage_busy``) with nothing of the failed request stored.
A full disk is made with a file-size limit (``RLIMIT_FSIZE``, portable) or a small tmpfs in a private mount namespace;
a read-only file system with a read-only bind mount there, or ``chmod`` when not running as root.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from reliability_helpers import (
    assert_one_line_error,
    dtdialog_command,
    namespaces_work,
    python_env,
    readonly_setup,
    run_with_mounts,
    small_tmpfs_setup,
)

TURNS = "My battery dies overnight although it is new.\nThe battery is new but the car still will not start.\n"


def _limit_file_size(limit: int):
    def apply() -> None:  # Python ignores SIGXFSZ: writing past the limit fails with EFBIG instead of killing it
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    return apply


# --- disk full -------------------------------------------------------------------------------------------------
_API_DISK_FULL = r"""
import json, os, resource, sys
from fastapi.testclient import TestClient
from dtdialog.api import ApiSettings, create_app

index, sessions = sys.argv[1], sys.argv[2]
out = {}
with TestClient(create_app(ApiSettings(index_path=index, sessions_path=sessions, ranker="rules")),
                base_url="http://localhost", raise_server_exceptions=False) as client:
    created = client.post("/sessions").json()
    sid = created["session_id"]
    client.headers["X-Session-Token"] = created["token"]
    client.post(f"/sessions/{sid}/messages", json={"text": "My battery dies overnight although it is new."})
    out["before"] = client.get(f"/sessions/{sid}").json()
    largest = max(os.path.getsize(p) for p in (sessions, sessions + "-wal") if os.path.exists(p))
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    resource.setrlimit(resource.RLIMIT_FSIZE, (largest, hard))  # no session file may grow: the disk is "full"
    full = client.post(f"/sessions/{sid}/messages", json={"text": "The battery is new but the car will not start."})
    out["full"] = [full.status_code, full.json()]
    out["new_session"] = client.post("/sessions").status_code
    out["while_full"] = client.get(f"/sessions/{sid}").json()
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    again = client.post(f"/sessions/{sid}/messages", json={"text": "The battery is new but the car will not start."})
    out["again"] = again.status_code
    out["after"] = client.get(f"/sessions/{sid}").json()
print(json.dumps(out))
"""


@pytest.mark.timeout(300)
def test_a_full_disk_during_a_turn_is_507_and_the_session_is_kept(small_index, tmp_path):
    proc = subprocess.run([sys.executable, "-c", _API_DISK_FULL, str(small_index), str(tmp_path / "sessions.sqlite")],
                          capture_output=True, text=True, env=python_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    status, body = out["full"]
    assert status == 507 and body["error"]["code"] == "storage_full", body
    assert out["new_session"] == 507
    assert out["while_full"] == out["before"]  # the refused turn left nothing behind
    assert out["again"] == 200 and len(out["after"]["transcript"]) == len(out["before"]["transcript"]) + 2


@pytest.mark.timeout(300)
def test_index_build_on_a_size_limited_disk_is_one_line(tmp_path):
    proc = subprocess.run(dtdialog_command("index", "build", "--out", str(tmp_path / "out.sqlite"), "--quiet",
                                           "--limit", "40"),
                          capture_output=True, text=True, env=python_env(), preexec_fn=_limit_file_size(64_000))
    assert_one_line_error(proc, "the index", "full")
    assert not (tmp_path / "out.sqlite").exists()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_index_build_and_chat_on_a_full_tmpfs_are_one_line(mount_namespace, small_index, tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    build = run_with_mounts(small_tmpfs_setup(disk, 256),
                            dtdialog_command("index", "build", "--out", str(disk / "out.sqlite"), "--quiet"))
    assert_one_line_error(build, "the disk is full")
    (tmp_path / "turns.txt").write_text(TURNS)
    # the store is created while there is room, then a filler takes the rest: the first turn cannot be saved
    fill = (f"{sys.executable} -c \"from dtdialog.dialogue.session_store import SessionStore; SessionStore('{disk}/s.sqlite')\""
            f" && (dd if=/dev/zero of='{disk}/filler' bs=4k 2>/dev/null || true)")
    chat = run_with_mounts(small_tmpfs_setup(disk, 256) + " && " + fill,
                           dtdialog_command("chat", "--index", str(small_index), "--sessions", str(disk / "s.sqlite"),
                                            "--ranker", "rules", "--script", str(tmp_path / "turns.txt")))
    assert_one_line_error(chat, "session store", "full")


# --- read-only ---------------------------------------------------------------------------------------------------
def run_readonly(folder: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run ``command`` while ``folder`` is read-only: ``chmod`` when not root, else a read-only bind mount."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [folder, *folder.iterdir()]}
        for p in modes:
            p.chmod(0o555 if p.is_dir() else 0o444)
        try:
            return subprocess.run(command, capture_output=True, text=True, env=python_env())
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
    reason = namespaces_work()
    if reason is not None:
        pytest.skip(f"running as root, chmod cannot make a folder read-only, and {reason}")
    return run_with_mounts(readonly_setup(folder), command)


@pytest.fixture
def readonly_folder(small_index: Path, tmp_path: Path) -> Path:
    """Return a folder holding a copy of the small index (checkpointed: no -wal/-shm beside it)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    shutil.copy(small_index, folder / "answers.sqlite")
    return folder


@pytest.mark.timeout(300)
def test_a_valid_index_on_a_read_only_file_system_opens_for_reading(readonly_folder):
    proc = run_readonly(readonly_folder, dtdialog_command("index", "search", "battery dies overnight", "--index",
                                                          str(readonly_folder / "answers.sqlite"), "--json"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() and "not a dtdialog index" not in proc.stderr


@pytest.mark.timeout(300)
def test_writing_to_a_read_only_file_system_is_one_line(readonly_folder, small_index, tmp_path):
    build = run_readonly(readonly_folder, dtdialog_command("index", "build", "--out", str(readonly_folder / "new.sqlite"),
                                                           "--quiet", "--limit", "3"))
    assert_one_line_error(build, "ro")
    (tmp_path / "turns.txt").write_text(TURNS)
    chat = run_readonly(readonly_folder, dtdialog_command(
        "chat", "--index", str(small_index), "--sessions", str(readonly_folder / "s.sqlite"), "--ranker", "rules",
        "--script", str(tmp_path / "turns.txt")))
    assert_one_line_error(chat, "read-only")


_API_READ_ONLY = r"""
import json, sys
from fastapi.testclient import TestClient
from dtdialog.api import ApiSettings, create_app

readonly_index, writable, readonly_sessions = sys.argv[1], sys.argv[2], sys.argv[3]
out = {}
with TestClient(create_app(ApiSettings(index_path=readonly_index, sessions_path=writable, ranker="rules")),
                base_url="http://localhost", raise_server_exceptions=False) as client:
    created = client.post("/sessions").json()
    sid = created["session_id"]
    turn = client.post(f"/sessions/{sid}/messages", json={"text": "My battery dies overnight although it is new."},
                       headers={"X-Session-Token": created["token"]})
    out["turn_over_readonly_index"] = turn.status_code
with TestClient(create_app(ApiSettings(index_path=readonly_index, sessions_path=readonly_sessions, ranker="rules")),
                base_url="http://localhost", raise_server_exceptions=False) as client:
    refused = client.post("/sessions")
    out["sessions_on_readonly_folder"] = [refused.status_code, refused.json()]
print(json.dumps(out))
"""


@pytest.mark.timeout(300)
def test_the_api_over_a_read_only_file_system(readonly_folder, tmp_path):
    proc = run_readonly(readonly_folder, [sys.executable, "-c", _API_READ_ONLY, str(readonly_folder / "answers.sqlite"),
                                          str(tmp_path / "sessions.sqlite"), str(readonly_folder / "s.sqlite")])
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["turn_over_readonly_index"] == 200
    status, body = out["sessions_on_readonly_folder"]
    assert status == 503 and body["error"]["code"] == "storage_read_only", body


# --- locked, not an index -------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_chat_on_a_session_store_locked_by_another_process_is_one_line(small_index, tmp_path):
    sessions = tmp_path / "sessions.sqlite"
    from dtdialog.dialogue.session_store import SessionStore

    SessionStore(sessions).close()
    (tmp_path / "turns.txt").write_text(TURNS)
    holder = subprocess.Popen([sys.executable, "-c", "import sqlite3, sys\n"
                               f"c = sqlite3.connect({str(sessions)!r}, isolation_level=None)\n"
                               "c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); sys.stdin.readline()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        chat = subprocess.run(dtdialog_command("chat", "--index", str(small_index), "--sessions", str(sessions),
                                               "--ranker", "rules", "--script", str(tmp_path / "turns.txt")),
                              capture_output=True, text=True, env=python_env())
    finally:
        holder.communicate("release\n")
    assert_one_line_error(chat, "locked by another process")


def test_a_file_that_is_not_an_index_is_one_line(tmp_path, capsys):
    from dtdialog.cli import main

    notes = tmp_path / "notes.sqlite"
    notes.write_text("meeting notes\n" * 50)
    assert main(["index", "search", "battery", "--index", str(notes)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "not a dtdialog index" in err and len(err.strip().splitlines()) == 1
