"""Probe finding 2, continued: a turn that failed was still saved half-way (the engine wrote the session, then the
response failed), and the session was broken from then on. Now the session is written once, after the reply and its
response are complete: a turn that fails anywhere before that leaves the session exactly as it was.
"""

from __future__ import annotations

import pytest

from dtdialog.api import routes_sessions
from dtdialog.dialogue.outcomes import Outcomes

FIRST = "My battery dies overnight although it is new."
SECOND = "The battery is new but the car still will not start."


def _stored(client, sid: str) -> dict:
    data = client.get(f"/sessions/{sid}").json()
    return {k: data[k] for k in ("transcript", "traces", "state", "turns", "delivered", "question")}


def _failing(*args, **kwargs):
    raise RuntimeError("injected failure")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("where", ["engine after ranking", "API response"])
def test_a_failed_turn_leaves_the_session_as_it_was(make_client, monkeypatch, where):
    client = make_client()
    sid = client.post("/sessions").json()["session_id"]
    assert client.post(f"/sessions/{sid}/messages", json={"text": FIRST}).status_code == 200
    before = _stored(client, sid)
    with monkeypatch.context() as patch:
        if where == "engine after ranking":  # the selector has ranked; the answer is about to be delivered
            patch.setattr(Outcomes, "deliver", _failing)
            patch.setattr(Outcomes, "offer", _failing)
            patch.setattr(Outcomes, "fallback", _failing)
            patch.setattr(Outcomes, "abstain", _failing)
        else:
            patch.setattr(routes_sessions, "turn_out", _failing)
        failed = client.post(f"/sessions/{sid}/messages", json={"text": SECOND})
        assert failed.status_code == 500 and failed.json()["error"]["code"] == "internal_error"
    assert _stored(client, sid) == before  # nothing of the failed turn was written
    after = client.post(f"/sessions/{sid}/messages", json={"text": SECOND})
    assert after.status_code == 200, after.text
    assert after.json()["trace"]["turn"] == before["turns"] + 1
    assert len(_stored(client, sid)["transcript"]) == len(before["transcript"]) + 2
