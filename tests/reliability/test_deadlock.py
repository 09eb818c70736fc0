"""Probe finding 1: a permanent deadlock. Another process held ``BEGIN IMMEDIATE`` on the serving index for longer
than SQLite's wait, ``POST /index/documents`` failed inside ``SqliteIndex.__init__``, which closed itself under its
own (non-reentrant) lock: from then on every parse, search and turn hung, ``/healthz`` still said ok.

Now the wait is bounded (``parsers.storage.BUSY_TIMEOUT_S``, shortened here), the write fails with a clear 503
``storage_busy`` and everything else keeps working.
"""

from __future__ import annotations

import pytest
from reliability_helpers import sqlite_lock_held_elsewhere

from index.history import StoredVersion
from index.sqlite_index import SqliteIndex, encode_doc
from parsers import storage
from parsers.errors import InputError, StorageBusyError

#: seconds any SQLite call waits for another process's lock in these tests (the default is 5)
SHORT_WAIT = 0.5
NEW_ANSWER = {"text": "If the horn stays silent, check its fuse first, because a blown fuse is the usual cause."}


@pytest.fixture(autouse=True)
def _short_busy_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage, "BUSY_TIMEOUT_S", SHORT_WAIT)


@pytest.mark.timeout(120)
def test_a_write_lock_held_by_another_process_is_a_503_and_nothing_hangs(make_client, index_copy):
    client = make_client(index_path=index_copy, health_stall_seconds=30.0)
    before = client.get("/index").json()["documents"]
    sid = client.post("/sessions").json()["session_id"]
    with sqlite_lock_held_elsewhere(index_copy):
        busy = client.post("/index/documents", json={"answers": [NEW_ANSWER]})
        assert busy.status_code == 503, busy.text
        assert busy.json()["error"]["code"] == "storage_busy"
        assert "locked by another process" in busy.json()["error"]["message"]
        assert busy.headers["retry-after"]
        # everything else still answers while the lock is held
        assert client.get("/healthz").status_code == 200
        assert client.post("/parse", json={"text": "The car stalls, but the battery is new."}).status_code == 200
        assert client.get("/search", params={"q": "the battery dies overnight"}).status_code == 200
        turn = client.post(f"/sessions/{sid}/messages", json={"text": "My battery dies overnight although it is new."})
        assert turn.status_code == 200, turn.text
    assert client.get("/index").json()["documents"] == before  # the refused write left nothing behind
    added = client.post("/index/documents", json={"answers": [NEW_ANSWER]})
    assert added.status_code == 200, added.text
    assert added.json()["documents"] == before + 1
    assert client.get(f"/sessions/{sid}").status_code == 200


@pytest.mark.timeout(60)
def test_opening_a_writer_on_a_locked_new_file_fails_instead_of_deadlocking(tmp_path):
    # the exact path of the deadlock: the schema cannot be written, the failed open must close itself
    path = tmp_path / "new.sqlite"
    path.write_bytes(b"")  # an empty file is an empty database: opening it for writing creates the schema
    with sqlite_lock_held_elsewhere(path), pytest.raises(StorageBusyError, match="locked by another process"):
        SqliteIndex(path, readonly=False)
    with SqliteIndex(path, readonly=False) as index:  # released: the same open works
        assert index.count() == 0


@pytest.mark.timeout(60)
def test_a_locked_index_can_still_be_opened_and_read(index_copy):
    with sqlite_lock_held_elsewhere(index_copy):
        with SqliteIndex(index_copy, readonly=False) as writer:  # an existing index: opening writes nothing
            assert writer.count() > 0
            with pytest.raises(StorageBusyError):
                writer.set_info(probe=True)
        with SqliteIndex(index_copy) as reader:
            assert reader.count() > 0 and reader.lock_free(0.1)


@pytest.mark.timeout(60)
def test_history_writes_on_a_locked_index_are_a_storage_error(index_copy):
    with SqliteIndex(index_copy, readonly=False) as writer:
        answer = writer.get(writer.ids()[0])
        with sqlite_lock_held_elsewhere(index_copy):
            with pytest.raises(StorageBusyError, match="locked by another process"):
                writer.keep_version(answer)
            assert writer.export_history() == []  # reading the history is not blocked (WAL)
            with pytest.raises(StorageBusyError):
                writer.import_history([StoredVersion(answer.id, 1, 0.0, encode_doc(answer))])
        assert writer.history(answer.id) == []  # the refused writes left nothing behind


@pytest.mark.timeout(60)
def test_counting_and_purging_a_locked_session_store_is_a_storage_error(tmp_path):
    from dtdialog.dialogue.session import SessionRecord
    from dtdialog.dialogue.session_store import SessionStore

    path = tmp_path / "sessions.sqlite"
    with SessionStore(path) as store:
        store.save(SessionRecord(id="idle-1"))
        with sqlite_lock_held_elsewhere(path):
            assert store.count() == 1  # reading is not blocked by another process's write lock (WAL)
            with pytest.raises(StorageBusyError, match="session store"):
                store.purge(updated_before=float("inf"))  # the quotas' purge: a 503, never a raw sqlite3 error
        assert store.ids() == ["idle-1"]


@pytest.mark.timeout(60)
def test_a_foreign_file_is_refused_and_the_index_object_is_closed(tmp_path):
    notes = tmp_path / "notes.sqlite"
    notes.write_text("not a database, just notes\n" * 100)
    for readonly in (True, False):
        with pytest.raises(InputError, match="not a dtdialog index"):
            SqliteIndex(notes, readonly=readonly)
