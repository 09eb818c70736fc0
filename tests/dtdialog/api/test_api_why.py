"""The turn response's ``why``: the customer's plain reason for an answer (none for other replies), beside the agents'
explain view, which keeps the ids, scores and features."""

from __future__ import annotations

import re
from dataclasses import replace

from api_helpers import SPARK_PLUG_QUESTION

#: what a customer must never read: an answer id ("t-brakes-1#1"), a score ("0.82"), braces or brackets
AGENT_ONLY = re.compile(r"\S#\d|\d\.\d|[{}\[\]]")
BRAKES = "My brakes squeal when I stop, even though I replaced the pads."
NO_START = "I replaced the battery and the spark plugs, but my car will not start."


def test_an_answer_carries_a_plain_why_and_the_explain_view_keeps_the_details(client):
    sid = client.post("/sessions").json()["session_id"]
    body = client.post(f"/sessions/{sid}/messages", json={"text": BRAKES}).json()
    assert body["kind"] == "answer" and body["explain"] is None
    why = body["why"]
    assert why.startswith('This answers "My brakes squeal when I stop"') and "replaced the pads" in why, why
    assert not AGENT_ONLY.search(why) and body["answer_id"] not in why, why
    sid = client.post("/sessions").json()["session_id"]
    agent = client.post(f"/sessions/{sid}/messages?explain=true", json={"text": BRAKES}).json()
    assert agent["why"] == why  # the same reason, and the details besides
    ex = agent["explain"]
    assert ex["summary"][0] == f"Chose answer {agent['answer_id']}." and ex["details"]
    assert any(re.search(r"\d\.\d\d", line) for line in ex["summary"] + ex["details"])  # scores, for agents


def test_a_reply_that_is_not_an_answer_has_no_why(client):
    sid = client.post("/sessions").json()["session_id"]
    body = client.post(f"/sessions/{sid}/messages", json={"text": SPARK_PLUG_QUESTION}).json()
    assert body["kind"] != "answer" and body["why"] is None  # the small index abstains on it
    body = client.post(f"/sessions/{sid}/messages", json={"text": "I want to talk to a human"}).json()
    assert body["kind"] == "handoff" and body["why"] is None


def test_an_option_picked_is_explained_from_the_turn_that_offered_it(client):
    sid = client.post("/sessions").json()["session_id"]  # loads the engine: offer a choice on any close call
    manager = client.app.state.service.manager()
    always_offer = replace(manager.config.clarify, clarify_margin=1.0, clarify_ratio=0.0)
    manager.config = replace(manager.config, clarify=always_offer)
    offer = client.post(f"/sessions/{sid}/messages", json={"text": NO_START}).json()
    assert offer["kind"] == "clarify" and offer["why"] is None, offer["kind"]
    picked = client.post(f"/sessions/{sid}/messages", json={"text": "1"}).json()
    assert picked["kind"] == "answer" and not picked["trace"]["steps"]  # ranked on the offering turn
    assert picked["why"] == 'This answers "but my car will not start"; it leaves out what you already did: ' \
        "replaced the battery and the spark plugs.", picked["why"]


def test_the_webhook_says_why_in_its_custom_data(client):
    message = client.post("/webhooks/rest/webhook", json={"sender": "why-test", "message": BRAKES}).json()[0]
    assert message["custom"]["kind"] == "answer" and "replaced the pads" in message["custom"]["why"]


def test_a_stored_session_gives_each_answer_its_why_again(client):
    sid = client.post("/sessions").json()["session_id"]
    first = client.post(f"/sessions/{sid}/messages", json={"text": BRAKES}).json()
    client.post(f"/sessions/{sid}/messages", json={"text": "I want to talk to a human"})
    transcript = client.get(f"/sessions/{sid}").json()["transcript"]
    bots = [m for m in transcript if m["role"] == "bot"]
    assert bots[0]["why"] == first["why"] and "why" not in bots[1]  # the hand-off is no answer
