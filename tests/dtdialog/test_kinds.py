"""States, intents and reply kinds are enums whose members store, print and serialise as their plain values."""

from __future__ import annotations

import json
import sqlite3

from engine_helpers import PAPER_Q, car_world, text_of

from dtdialog.dialogue.kinds import IntentKind, ReplyKind, State
from dtdialog.dialogue.session import SessionRecord


def test_a_turn_gives_enum_members_that_read_as_their_values(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    sid = manager.start_session()
    result = manager.handle(session_id=sid, text=text_of(PAPER_Q))
    assert result.kind is ReplyKind.ANSWER and result.state is State.AWAITING_FEEDBACK
    assert result.trace["intent"] is IntentKind.NEW_QUESTION
    # what the API, the chat command and the eval bots print: the plain value, never "ReplyKind.ANSWER"
    assert (str(result.kind), f"{result.state}") == ("answer", "AWAITING_FEEDBACK")
    sent = json.loads(json.dumps(result.to_dict()))
    assert (sent["kind"], sent["state"], sent["trace"]["intent"]) == ("answer", "AWAITING_FEEDBACK", "new_question")


def test_stored_sessions_keep_plain_values_and_load_as_members(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    sid = manager.start_session()
    manager.handle(session_id=sid, text=text_of(PAPER_Q))
    with sqlite3.connect(tmp_path / "sessions.sqlite") as db:
        stored = " ".join(str(v) for row in db.execute("SELECT * FROM sessions") for v in row)
    assert '"state": "AWAITING_FEEDBACK"' in stored and "State." not in stored
    assert manager.session(sid).state is State.AWAITING_FEEDBACK
    # a record written as plain JSON by any earlier version loads with its state as a member
    old = SessionRecord.from_dict({"id": "s1", "state": "AWAITING_DETAIL"})
    assert old.state is State.AWAITING_DETAIL and old.to_dict()["state"] == "AWAITING_DETAIL"
