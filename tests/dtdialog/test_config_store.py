"""Engine options and the durable session store."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from engine_helpers import PAPER_Q, car_world, text_of

from dtdialog.dialogue.session import AWAITING_FEEDBACK, SessionNotFoundError, SessionRecord
from dtdialog.dialogue.session_store import SessionStore
from dtdialog.setup.engine_config import ClarifyConfig, EngineConfig, RetrievalConfig
from parsers.errors import ConfigError, InputError


def test_config_round_trip_and_validation():
    cfg = EngineConfig(retrieval=RetrievalConfig(candidates=5), clarify=ClarifyConfig(clarify_margin=0.1))
    assert EngineConfig.from_dict(cfg.to_dict()) == cfg
    for bad in ({"candidates": 0}, {"clarify_margin": 2}, {"max_options": "3"}, {"require_agreement": "yes"},
                {"agreement_weight": -0.1}):
        with pytest.raises(ConfigError):
            EngineConfig.from_dict(bad)
    with pytest.raises(ConfigError, match="unknown option"):
        EngineConfig.from_dict({"candidatez": 3})


def test_store_saves_loads_and_survives_reopen(tmp_path):
    path = tmp_path / "deep" / "sessions.sqlite"
    with SessionStore(path) as store:
        record = SessionRecord(id="s1", state=AWAITING_FEEDBACK, question="q", delivered=["a#1"])
        record.add_message("user", "q")
        store.save(record)
        assert store.exists("s1") and not store.exists("s2")
    with SessionStore(path) as store:
        again = store.load("s1")
        assert again.state == AWAITING_FEEDBACK and again.delivered == ["a#1"] and again.transcript[0]["text"] == "q"
        assert store.ids() == ["s1"]
        with pytest.raises(SessionNotFoundError):
            store.load("s2")
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_store_many_threads(tmp_path):
    store = SessionStore(tmp_path / "s.sqlite")

    def work(k: int) -> None:
        for turn in range(5):
            record = SessionRecord(id=f"s{k}", turns=turn)
            store.save(record)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(store.ids()) == [f"s{k}" for k in range(6)]
    assert all(store.load(f"s{k}").turns == 4 for k in range(6))
    store.close()


def test_bad_records_and_paths(tmp_path):
    with pytest.raises(InputError):
        SessionRecord.from_dict({"state": "NEW"})
    with pytest.raises(InputError):
        SessionRecord.from_dict({"id": "x", "state": "FLYING"})
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError):
        SessionStore(tmp_path / "file" / "sessions.sqlite")


def test_traces_are_appended_per_turn_pruned_to_max_and_survive_restart(tmp_path):
    path = tmp_path / "s.sqlite"
    with SessionStore(path, max_traces=10) as store:
        store.save(SessionRecord(id="s1"))
        for turn in range(1, 8):
            record = store.load("s1", traces=False)   # what a turn reads: no history parsed
            assert record.traces == []
            record.turns = turn
            record.traces.append({"turn": turn, "user_text": f"t{turn}"})
            store.save(record, keep_traces=3)
        rows = store._conn().execute("SELECT turn FROM traces WHERE session_id = 's1' ORDER BY turn").fetchall()
        assert [r[0] for r in rows] == [5, 6, 7]    # the oldest are deleted, not kept forever
    with SessionStore(path) as store:               # a restart loses nothing that is kept
        again = store.load("s1")
        assert again.turns == 7 and [t["user_text"] for t in again.traces] == ["t5", "t6", "t7"]
        again.state = AWAITING_FEEDBACK
        store.save(again)                           # re-saving loaded traces neither duplicates nor drops them
        assert [t["turn"] for t in store.load("s1").traces] == [5, 6, 7]


def test_manager_keeps_max_traces_per_session(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0, max_traces=2, max_failures=9)
    sid = manager.start_session()
    manager.handle(session_id=sid, text=text_of(PAPER_Q))
    for _ in range(3):
        manager.handle(session_id=sid, text="hmm")
    assert [t["turn"] for t in manager.session(sid).traces] == [3, 4]
    assert manager.session(sid, traces=False).traces == []
