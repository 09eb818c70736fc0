"""Sessions live in SQLite: they survive an app restart, and concurrent sessions never mix."""

from __future__ import annotations

import threading

import pytest
from api_helpers import API_KEY, LOCAL_URL, SPARK_PLUG_QUESTION, assert_error
from fastapi.testclient import TestClient

from dtdialog.api import ApiSettings, create_app
from dtdialog.understanding.intents import MAX_TURN_CHARS
from parsers.errors import ConfigError
from parsers.text_input import MAX_CHARS


def test_a_session_continues_on_a_new_app_over_the_same_database(make_settings):
    settings = make_settings()
    with TestClient(create_app(settings), base_url=LOCAL_URL) as first:
        created = first.post("/sessions").json()
        sid, token = created["session_id"], {"X-Session-Token": created["token"]}
        one = first.post(f"/sessions/{sid}/messages", json={"text": SPARK_PLUG_QUESTION}, headers=token).json()
    # The first app is shut down (its engine thread and SQLite connections closed); the token still opens the session.
    with TestClient(create_app(make_settings()), base_url=LOCAL_URL, headers=token) as second:
        before = second.get(f"/sessions/{sid}")
        assert before.status_code == 200
        assert [m["text"] for m in before.json()["transcript"]] == [SPARK_PLUG_QUESTION, one["reply"]]
        two = second.post(f"/sessions/{sid}/messages", json={"text": "It started on the starting fluid at first, "
                                                                      "but now it does not."})
        assert two.status_code == 200, two.text
        record = second.get(f"/sessions/{sid}").json()
    assert len(record["transcript"]) == 4 and len(record["traces"]) == 2
    assert record["traces"][1]["state_before"] == one["state"]  # the state machine picked up where it stopped


def test_concurrent_turns_on_different_sessions_never_mix(make_client):
    n_sessions, n_turns = 8, 3
    # the 8 customers share the test client's address: let all of them wait for the engine at once
    client = make_client(max_pending=n_sessions)
    ids = [client.post("/sessions").json()["session_id"] for _ in range(n_sessions)]
    problems = ["my brakes squeal with new pads", "the battery keeps dying overnight", SPARK_PLUG_QUESTION,
                "the engine overheats in traffic"]
    errors: list[str] = []
    sent: dict[str, list[str]] = {sid: [] for sid in ids}

    def talk(i: int, sid: str) -> None:
        for t in range(n_turns):
            text = f"{problems[(i + t) % len(problems)]} (customer {i:02d} turn {t})"
            r = client.post(f"/sessions/{sid}/messages", json={"text": text})
            if r.status_code != 200 or r.json()["session_id"] != sid:
                errors.append(f"{sid}: {r.status_code} {r.text[:200]}")
            sent[sid].append(text)

    threads = [threading.Thread(target=talk, args=(i, sid)) for i, sid in enumerate(ids)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not errors, errors
    for i, sid in enumerate(ids):
        transcript = client.get(f"/sessions/{sid}").json()["transcript"]
        user_texts = [m["text"] for m in transcript if m["role"] == "user"]
        assert user_texts == sent[sid]  # no lost turn, in order
        assert all(f"customer {i:02d} " in t for t in user_texts)  # nothing from another session
        assert len(transcript) == 2 * n_turns


def test_session_ids_are_distinct_and_unknown_ones_404(client):
    ids = {client.post("/sessions").json()["session_id"] for _ in range(5)}
    assert len(ids) == 5
    assert_error(client.get("/sessions/not-a-session"), 404, "session_not_found")


def _padded(text: str, length: int) -> str:
    return text + " " * (length - len(text))


def test_the_api_refuses_exactly_the_turns_the_engine_refuses(client):
    manager = client.app.state.service.manager()
    limit = manager.config.dialogue.max_input_chars
    assert limit == MAX_TURN_CHARS
    over = _padded(SPARK_PLUG_QUESTION, limit + 1)
    sid = client.post("/sessions").json()["session_id"]
    err = assert_error(client.post(f"/sessions/{sid}/messages", json={"text": over}), 413, "text_too_long")
    assert f"the limit is {limit}" in err["message"]
    assert client.get(f"/sessions/{sid}").json()["transcript"] == []  # refused before the engine saw it
    engine = manager.handle(session_id=manager.start_session(), text=over)
    assert engine.kind == "prompt" and f"over {limit} characters" in engine.reply
    at = client.post(f"/sessions/{sid}/messages", json={"text": _padded(SPARK_PLUG_QUESTION, limit)})
    assert at.status_code == 200, at.text
    assert at.json()["kind"] != "prompt" and at.json()["trace"]["user_text"] == SPARK_PLUG_QUESTION


def test_texts_that_are_not_turns_keep_the_parser_limit_for_key_holders(make_client):
    client = make_client(api_key=API_KEY)
    assert client.app.state.service.settings.max_text_chars == MAX_CHARS
    text = _padded("The car will not start.", MAX_TURN_CHARS + 1)
    parsed = client.post("/parse", json={"text": text}, headers={"X-API-Key": API_KEY})
    assert parsed.status_code == 200, parsed.text
    # an anonymous client may make the single engine thread parse a turn's worth at most (issue 14, quotas)
    assert_error(client.post("/parse", json={"text": text}), 413, "text_too_long")


@pytest.mark.parametrize("value", [MAX_CHARS + 1, 0])
def test_the_text_limit_cannot_leave_the_parser_ceiling(tmp_path, value):
    with pytest.raises(ConfigError, match="max_text_chars"):
        ApiSettings(sessions_path=tmp_path / "s.sqlite", max_text_chars=value, max_body_bytes=10 * MAX_CHARS)
