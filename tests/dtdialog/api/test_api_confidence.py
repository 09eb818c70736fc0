"""The turn response carries the calibrated confidence (issue 13), and the web page words it for a customer."""

from __future__ import annotations

from pathlib import Path

from api_helpers import SPARK_PLUG_QUESTION


def test_turn_response_has_a_confidence_in_0_1_on_answers_and_abstentions(make_client):
    client = make_client()
    sid = client.post("/sessions").json()["session_id"]
    turn = client.post(f"/sessions/{sid}/messages", json={"text": SPARK_PLUG_QUESTION}).json()
    assert "confidence" in turn
    if turn["kind"] in ("answer", "abstain"):
        assert 0.0 <= turn["confidence"] <= 1.0
    else:
        assert turn["confidence"] is None
    hello = client.post(f"/sessions/{sid}/messages", json={"text": "thanks"}).json()
    assert hello["confidence"] is None  # not an answer: nothing to be sure about


def test_web_page_shows_the_confidence_in_words():
    app_js = (Path(__file__).resolve().parents[3] / "dtdialog" / "api" / "static" / "app.js").read_text()
    assert "turn.confidence" in app_js and "I'm fairly sure" in app_js and "I'm not sure" in app_js
