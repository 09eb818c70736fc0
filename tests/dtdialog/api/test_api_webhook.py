"""``POST /webhooks/rest/webhook``: Rasa's REST channel over the dialogue sessions.

Only agents read a webhook conversation through ``/sessions``: these servers have an API key and the clients send it.
"""

from __future__ import annotations

import pytest
from api_helpers import API_KEY, NO_QUOTAS, SPARK_PLUG_QUESTION, assert_error

from dtdialog.api.routes_webhook import WEBHOOK_PATH, rest_message, sender_session_id, webhook_secret
from dtdialog.dialogue.manager import TurnResult
from dtdialog.selection.clarification import ClarifyOption
from dtdialog.understanding.intents import MAX_TURN_CHARS

FOLLOW_UP = "It started on the starting fluid at first, but now it does not."


@pytest.fixture
def make_agent(make_client):
    """Return a factory of clients holding the API key of their server (keyword arguments override settings)."""

    def make(**overrides):
        client = make_client(api_key=API_KEY, **overrides)
        client.headers["X-API-Key"] = API_KEY
        return client

    return make


@pytest.fixture
def client(make_agent):
    return make_agent()


def _session_id(client, sender):
    return sender_session_id(webhook_secret(client.app), sender)


def _say(client, sender, message):
    response = client.post(WEBHOOK_PATH, json={"sender": sender, "message": message})
    assert response.status_code == 200, response.text
    messages = response.json()
    assert isinstance(messages, list) and len(messages) == 1
    assert messages[0]["recipient_id"] == sender and messages[0]["text"]
    return messages[0]


def _transcript(client, sender):
    record = client.get(f"/sessions/{_session_id(client, sender)}")
    assert record.status_code == 200, record.text
    return [m["text"] for m in record.json()["transcript"]]


def test_a_sender_starts_a_session_and_continues_it(client):
    first = _say(client, "customer-42", SPARK_PLUG_QUESTION)
    second = _say(client, "customer-42", FOLLOW_UP)
    assert _transcript(client, "customer-42") == [SPARK_PLUG_QUESTION, first["text"], FOLLOW_UP, second["text"]]
    traces = client.get(f"/sessions/{_session_id(client, 'customer-42')}").json()["traces"]
    assert traces[1]["state_before"] == first["custom"]["state"]  # the second turn continued the first's dialogue


def test_the_reply_is_the_sessions_api_reply(client):
    sid = client.post("/sessions").json()["session_id"]
    turn = client.post(f"/sessions/{sid}/messages", json={"text": SPARK_PLUG_QUESTION}).json()
    message = _say(client, "same-question", SPARK_PLUG_QUESTION)
    assert message["text"] == turn["reply"]
    assert message["custom"]["kind"] == turn["kind"] and message["custom"]["state"] == turn["state"]
    assert message["custom"]["answer_id"] == turn["answer_id"]
    assert message.get("buttons", []) == [{"title": o["label"], "payload": str(o["number"])} for o in turn["options"]]


def test_two_senders_never_share_a_conversation(make_agent):
    client = make_agent(**NO_QUOTAS)
    alice = _say(client, "alice", SPARK_PLUG_QUESTION)
    bob = _say(client, "bob", "My brakes squeal when I stop, even though the pads are new.")
    again = _say(client, "alice", FOLLOW_UP)
    assert _transcript(client, "alice") == [SPARK_PLUG_QUESTION, alice["text"], FOLLOW_UP, again["text"]]
    assert _transcript(client, "bob") == ["My brakes squeal when I stop, even though the pads are new.", bob["text"]]
    assert _session_id(client, "alice") != _session_id(client, "bob")
    # a sender whose name looks like another's session id still gets a conversation of its own
    _say(client, _session_id(client, "alice"), "The engine overheats in traffic but the coolant is full.")
    assert len(_transcript(client, "alice")) == 4


def test_an_expired_conversation_starts_again(client, monkeypatch):
    _say(client, "returning", SPARK_PLUG_QUESTION)
    monkeypatch.setattr(type(client.app.state.quotas), "expired", lambda self, record: True)
    again = _say(client, "returning", "The battery keeps dying overnight although it is new.")
    monkeypatch.undo()
    assert _transcript(client, "returning")[0] == "The battery keeps dying overnight although it is new."
    assert len(_transcript(client, "returning")) == 2 and again["text"]


def test_clarification_options_become_buttons_whose_payload_picks_them():
    result = TurnResult(session_id="s", reply="Which one fits best?", kind="clarify", state="CLARIFYING",
                        options=[ClarifyOption(number=1, label="Check the fuel pump relay", answer_id="d#1"),
                                 ClarifyOption(number=2, label="None of these", answer_id="")])
    message = rest_message("customer-7", result).model_dump(mode="json")
    assert message["recipient_id"] == "customer-7" and message["text"] == "Which one fits best?"
    assert message["buttons"] == [{"title": "Check the fuel pump relay", "payload": "1"},
                                  {"title": "None of these", "payload": "2"}]
    assert message["custom"]["kind"] == "clarify" and message["custom"]["state"] == "CLARIFYING"
    assert rest_message("c", TurnResult(session_id="s", reply="ok", kind="answer")).buttons is None


@pytest.mark.parametrize(("body", "status", "field"), [
    ({"message": "hello"}, 422, "sender"),
    ({"sender": "a"}, 422, "message"),
    ({"sender": "", "message": "hello"}, 422, "sender"),
    ({"sender": "   ", "message": "hello"}, 422, "sender"),
    ({"sender": "x" * 129, "message": "hello"}, 422, "sender"),
    ({"sender": 42, "message": "hello"}, 422, "sender"),
    ({"sender": "a", "message": ["hello"]}, 422, "message"),
    ({"sender": "a", "message": "   "}, 422, None),
    ({"sender": "a", "message": "x" * (MAX_TURN_CHARS + 1)}, 413, "message"),
])
def test_bad_bodies_get_a_clear_error(client, body, status, field):
    error = assert_error(client.post(WEBHOOK_PATH, json=body), status)
    if field:
        assert field in error["message"], error
    assert client.get(f"/sessions/{_session_id(client, 'a')}").status_code == 404  # nothing was started


def test_a_body_that_is_not_json_is_refused(client):
    response = client.post(WEBHOOK_PATH, content=b"sender=a&message=hi",
                           headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert 400 <= response.status_code < 500 and "error" in response.json()


def test_rasa_metadata_is_accepted(client):
    response = client.post(WEBHOOK_PATH, json={"sender": "widget", "message": SPARK_PLUG_QUESTION,
                                               "metadata": {"page": "/help"}})
    assert response.status_code == 200, response.text


def test_the_turn_rate_applies(make_client):
    client = make_client(turn_rate="2/minute")
    _say(client, "busy", SPARK_PLUG_QUESTION)
    _say(client, "busy", FOLLOW_UP)
    limited = client.post(WEBHOOK_PATH, json={"sender": "busy", "message": "thanks"})
    assert_error(limited, 429, "rate_limited")
    assert limited.headers["Retry-After"]


def test_the_session_cap_applies_to_new_senders(make_client):
    client = make_client(max_sessions=1, **NO_QUOTAS)
    _say(client, "first", SPARK_PLUG_QUESTION)
    assert_error(client.post(WEBHOOK_PATH, json={"sender": "second", "message": "hello"}), 503, "session_limit_reached")
    _say(client, "first", FOLLOW_UP)  # a known sender goes on


def test_the_webhook_is_in_the_schema(client):
    operation = client.get("/openapi.json").json()["paths"][WEBHOOK_PATH]["post"]
    assert set(operation["responses"]) >= {"200", "422", "429"}
    assert operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("RestWebhookRequest")
