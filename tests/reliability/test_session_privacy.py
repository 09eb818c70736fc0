"""Issue 31, item 1: anyone could read a webhook customer's conversation.

A webhook session's id was ``rest-`` + an unkeyed sha256 of the sender, so ``GET /sessions/rest-<sha256("customer-42")
[:32]>`` returned a stranger's transcript (VIN and phone number included), and posting into it worked; any session
id alone opened its session. Now a session answers only its own token (``X-Session-Token``) or the API key, anything
else is answered exactly as an unknown id, and webhook ids are an HMAC under a secret kept beside the sessions.
"""

from __future__ import annotations

import hashlib
import hmac
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from protection_helpers import LOCAL_URL, NO_QUOTAS, assert_error
from reliability_helpers import API_KEY

from dtdialog.api import ApiSettings, create_app

WEBHOOK = "/webhooks/rest/webhook"
SENDER = "customer-42"
PRIVATE = "My car with VIN 1HGCM82633A004352 will not start; call me back at 555-0142."
AGENT = {"X-API-Key": API_KEY}


@pytest.fixture
def make_app(small_index: Path, tmp_path: Path) -> Iterator[Callable[..., TestClient]]:
    """Return ``make(sessions=PATH)``: a started client of a new app with an API key; the client sends no secret."""
    with ExitStack() as started:
        def make(sessions: Path = tmp_path / "sessions.sqlite", **overrides: Any) -> TestClient:
            settings = ApiSettings(**{"index_path": small_index, "sessions_path": sessions, "api_key": API_KEY,
                                      "ranker": "rules", **NO_QUOTAS, **overrides})
            return started.enter_context(TestClient(create_app(settings), base_url=LOCAL_URL,
                                                    raise_server_exceptions=False))
        yield make


def _keyed_id(folder: Path, sender: str) -> str:
    """Return the documented webhook session id: ``rest-`` + HMAC-SHA256(secret file, sender), 32 hex digits."""
    secret = bytes.fromhex((folder / "webhook.secret").read_text().strip())
    return "rest-" + hmac.new(secret, sender.encode(), hashlib.sha256).hexdigest()[:32]


def _say(client: TestClient, sender: str, message: str) -> None:
    response = client.post(WEBHOOK, json={"sender": sender, "message": message})
    assert response.status_code == 200, response.text


def _assert_unknown(response: Any, client: TestClient, session_id: str, method: str) -> None:
    """Assert ``response`` is the very answer an id that never existed gets (its id aside)."""
    never = "0" * len(session_id)
    if method == "GET":
        unknown = client.get(f"/sessions/{never}")
    else:
        unknown = client.post(f"/sessions/{never}/messages", json={"text": "hello"})
    assert_error(response, 404, "session_not_found")
    assert response.json() == {"error": {**unknown.json()["error"],
                                         "message": unknown.json()["error"]["message"].replace(never, session_id)}}
    assert dict(response.headers) == dict(unknown.headers) | {"content-length": response.headers["content-length"]}


def test_a_stranger_cannot_read_or_write_a_webhook_customers_conversation(make_app, tmp_path):
    client = make_app()
    _say(client, SENDER, PRIVATE)
    # the attack: the unkeyed digest of the sender
    guessed = "rest-" + hashlib.sha256(SENDER.encode()).hexdigest()[:32]
    _assert_unknown(client.get(f"/sessions/{guessed}"), client, guessed, "GET")
    _assert_unknown(client.post(f"/sessions/{guessed}/messages", json={"text": "read me your VIN"}), client, guessed,
                    "POST")
    # the real id needs the server's secret, and even with it the session answers only the API key
    real = _keyed_id(tmp_path, SENDER)
    assert real != guessed
    assert stat.S_IMODE((tmp_path / "webhook.secret").stat().st_mode) == 0o600
    _assert_unknown(client.get(f"/sessions/{real}"), client, real, "GET")
    _assert_unknown(client.post(f"/sessions/{real}/messages", json={"text": "read me your VIN"}), client, real, "POST")
    record = client.get(f"/sessions/{real}", headers=AGENT)
    assert record.status_code == 200, record.text
    texts = [m["text"] for m in record.json()["transcript"]]
    assert PRIVATE in texts and len(texts) == 2  # the stranger's posts were not taken
    assert "token" not in record.text  # the record never shows a token or its digest


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_session_answers_only_its_token_or_the_api_key(make_app, method):
    client = make_app()
    mine, other = client.post("/sessions").json(), client.post("/sessions").json()
    sid = mine["session_id"]

    def call(**headers: str) -> Any:
        if method == "GET":
            return client.get(f"/sessions/{sid}", headers=headers)
        return client.post(f"/sessions/{sid}/messages", json={"text": PRIVATE}, headers=headers)

    tampered = ("y" if mine["token"][0] == "x" else "x") + mine["token"][1:]  # always one character off
    for refused in ({}, {"X-Session-Token": tampered}, {"X-Session-Token": other["token"]},
                    {"X-Session-Token": ""}, {"X-API-Key": "not-the-key"}):
        _assert_unknown(call(**refused), client, sid, method)
    assert call(**{"X-Session-Token": mine["token"]}).status_code == 200
    assert call(**AGENT).status_code == 200
    transcript = client.get(f"/sessions/{sid}", headers=AGENT).json()["transcript"]
    assert len(transcript) == (4 if method == "POST" else 0)  # only the two allowed posts became turns


def test_a_session_stored_before_tokens_opens_only_with_the_api_key(make_app, tmp_path):
    # a store of the earlier schema (no token column) holding one session
    sessions = tmp_path / "old" / "sessions.sqlite"
    sessions.parent.mkdir()
    with sqlite3.connect(sessions) as db:
        db.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, data TEXT NOT NULL, state TEXT NOT NULL, "
                   "updated REAL NOT NULL)")
        db.execute("CREATE TABLE traces (session_id TEXT NOT NULL, turn INTEGER NOT NULL, data TEXT NOT NULL, "
                   "PRIMARY KEY (session_id, turn))")
        db.execute("INSERT INTO sessions VALUES ('0123abcd', ?, 'NEW', strftime('%s','now'))",
                   ('{"schema": 1, "id": "0123abcd", "state": "NEW", "transcript": [{"role": "user", "text": "hi"}]}',))
    client = make_app(sessions=sessions)
    _assert_unknown(client.get("/sessions/0123abcd"), client, "0123abcd", "GET")
    _assert_unknown(client.get("/sessions/0123abcd", headers={"X-Session-Token": ""}), client, "0123abcd", "GET")
    assert client.get("/sessions/0123abcd", headers=AGENT).json()["transcript"][0]["text"] == "hi"


def test_the_webhook_secret_survives_a_restart_and_is_shared_by_apps_on_one_folder(make_app, tmp_path):
    first = make_app()
    _say(first, SENDER, PRIVATE)
    first.__exit__(None, None, None)  # the app is shut down; a new one starts on the same folder
    restarted = make_app()
    _say(restarted, SENDER, "It cranks but does not catch.")
    real = _keyed_id(tmp_path, SENDER)
    assert len(restarted.get(f"/sessions/{real}", headers=AGENT).json()["transcript"]) == 4  # one conversation

    # two apps serving one folder at once (as the workers of `dtdialog serve --workers N`): either one continues it
    shared = tmp_path / "shared"
    one, two = make_app(sessions=shared / "sessions.sqlite"), make_app(sessions=shared / "sessions.sqlite")
    _say(one, "customer-7", PRIVATE)
    _say(two, "customer-7", "It cranks but does not catch.")
    _say(one, "customer-7", "Thanks.")
    transcript = two.get(f"/sessions/{_keyed_id(shared, 'customer-7')}", headers=AGENT).json()["transcript"]
    assert [m["text"] for m in transcript[::2]] == [PRIVATE, "It cranks but does not catch.", "Thanks."]


def test_processes_racing_to_make_the_secret_all_get_the_same_one(tmp_path):
    from dtdialog.api.webhook_secret import load_or_create

    path = tmp_path / "webhook.secret"
    barrier, got = threading.Barrier(8), []

    def race() -> None:
        barrier.wait()
        got.append(load_or_create(path))

    threads = [threading.Thread(target=race) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and len(set(got)) == 1 and len(got[0]) == 32
    assert [p.name for p in tmp_path.iterdir()] == ["webhook.secret"]  # no temporary file left behind


def test_a_secret_file_that_is_a_link_is_refused_in_one_line(make_app, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (tmp_path / "webhook.secret").symlink_to(victim)
    client = make_app()
    error = assert_error(client.post(WEBHOOK, json={"sender": SENDER, "message": PRIVATE}), 503)
    assert "webhook secret" in error["message"]
    assert victim.read_text() == "keep me\n"
