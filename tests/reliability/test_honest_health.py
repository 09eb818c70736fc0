"""Issue 31, item 8: ``/healthz`` stayed 200 on 22 of 22 polls while another process held ``BEGIN EXCLUSIVE`` on the
sessions database and every turn failed; the same with a locked or damaged index; ``/readyz`` kept a stale
``problem`` after recovery.

``/readyz`` now tries what a turn needs (the session store's write lock, a read of the index) within about a second
and names what fails; ``/healthz`` stays a process check, 200 through all of it (a restart would not help).
"""

from __future__ import annotations

import sqlite3
import time

import pytest
from protection_helpers import assert_error
from reliability_helpers import sqlite_lock_held_elsewhere

from dtdialog.api import service as service_module
from dtdialog.dialogue.session_store import SessionStore

QUESTION = "My battery dies overnight although it is new."


def _wait_until(condition) -> None:
    # polled, never timed: the test's timeout mark is the hang guard
    while not condition():
        time.sleep(0.1)


def _ready_again(client) -> dict:
    """Poll ``/readyz`` until it answers 200 (the last answer is reused for a second); return its body."""
    _wait_until(lambda: client.get("/readyz").status_code == 200)
    return client.get("/readyz").json()


@pytest.mark.timeout(120)
def test_a_session_store_locked_by_another_process_is_not_ready_and_recovers(make_client, tmp_path):
    client = make_client()
    sid = client.post("/sessions").json()["session_id"]  # loads the engine
    with sqlite_lock_held_elsewhere(tmp_path / "sessions.sqlite", "EXCLUSIVE"):
        error = assert_error(client.get("/readyz"), 503, "not_ready")
        assert "session store" in error["message"] and "locked" in error["message"], error
        live = client.get("/healthz")
        assert live.status_code == 200, live.text  # alive: restarting would not free another process's lock
        assert client.post(f"/sessions/{sid}/messages", json={"text": QUESTION}).status_code == 503  # what it foretold
    body = _ready_again(client)
    assert body["problem"] is None and body["ready"] is True
    assert client.post(f"/sessions/{sid}/messages", json={"text": QUESTION}).status_code == 200


@pytest.mark.timeout(120)
def test_before_the_first_load_the_session_store_is_tried_too(make_client, tmp_path):
    sessions = tmp_path / "sessions.sqlite"
    SessionStore(sessions).close()
    client = make_client()  # lazy: nothing loaded yet
    with sqlite_lock_held_elsewhere(sessions, "EXCLUSIVE"):
        error = assert_error(client.get("/readyz"), 503, "not_ready")
        assert "session store" in error["message"]
    assert _ready_again(client)["engine_loaded"] is False  # the probe never loads the engine


@pytest.mark.timeout(120)
def test_a_locked_index_is_not_ready(make_client, index_copy):
    # in WAL mode readers pass another process's write lock (turns then work, and readiness says so); an index in
    # rollback-journal mode, as other tools may leave it, is unreadable while the lock is held
    with sqlite3.connect(index_copy) as conn:
        assert conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete"
    client = make_client(index_path=index_copy)
    client.post("/sessions")
    with sqlite_lock_held_elsewhere(index_copy, "EXCLUSIVE"):
        error = assert_error(client.get("/readyz"), 503, "not_ready")
        assert "answer index" in error["message"] and "locked" in error["message"], error
        assert client.get("/healthz").status_code == 200
        assert client.get("/search", params={"q": "battery dies"}).status_code == 503  # what it foretold
    assert _ready_again(client)["problem"] is None


@pytest.mark.timeout(120)
def test_a_damaged_index_file_is_not_ready_until_restored(make_client, index_copy):
    client = make_client(index_path=index_copy)
    client.post("/sessions")
    with index_copy.open("r+b") as f:
        header = f.read(100)
        f.seek(0)
        f.write(b"\xde\xad\xbe\xef" * 25)  # "SQLite format 3" and the page size gone
    error = assert_error(client.get("/readyz"), 503, "not_ready")
    assert "answer index" in error["message"] and str(index_copy.parent) not in error["message"], error
    assert client.get("/healthz").status_code == 200
    with index_copy.open("r+b") as f:
        f.write(header)
    assert _ready_again(client)["problem"] is None


@pytest.mark.timeout(300)
def test_a_failed_start_up_load_is_tried_again_and_leaves_no_stale_problem(make_client, index_copy, monkeypatch):
    monkeypatch.setattr(service_module, "WARM_UP_RETRY_S", 0.0)
    header = index_copy.read_bytes()[:100]
    with index_copy.open("r+b") as f:
        f.write(b"\x00" * 100)
    client = make_client(index_path=index_copy, warm_up_in_background=True)
    _wait_until(lambda: not client.get("/healthz").json()["loading"])
    assert client.get("/healthz").json()["problem"]
    assert_error(client.get("/readyz"), 503, "engine_unavailable")  # no request comes to load it: readyz tries
    with index_copy.open("r+b") as f:
        f.write(header)
    body = _ready_again(client)
    assert body["problem"] is None and body["engine_loaded"] is True
    assert client.get("/healthz").json()["problem"] is None
