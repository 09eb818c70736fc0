"""Probe finding 3 (issue 14): "anyone can rewrite what customers are told".

Reproduced here: with default settings an answer was overwritten with a gift-card scam and served to the
next customer; ``POST /index/rebuild`` dropped every answer added through the API; the Host header was not
checked, so a DNS-rebinding page could reach the index endpoints from a browser.
"""

from __future__ import annotations

import hmac

import pytest
from protection_helpers import (  # noqa: F401  (the fixtures are used by name)
    ANSWER_ID,
    API_KEY,
    SCAM,
    app_client_fixture,
    assert_error,
    index_file_fixture,
    protected_index_fixture,
    rebuild_client,
    served_text,
    stored_text,
)

OVERWRITE = {"answers": [{"id": ANSWER_ID, "dialogue_id": "t-brakes-1", "text": SCAM}]}
KEY = {"X-API-Key": API_KEY}


def test_overwrite_without_a_configured_key_is_refused_and_the_answer_is_unchanged(app_client, index_file):
    client = app_client()  # default settings: no key configured
    original = served_text(client)
    assert original and original == stored_text(index_file)
    assert_error(client.post("/index/documents", json=OVERWRITE), 403, "index_writes_disabled")
    # a key the server does not have changes nothing either
    assert_error(client.post("/index/documents", json=OVERWRITE, headers=KEY), 403, "index_writes_disabled")
    assert_error(client.post("/index/rebuild", json={"source": "builtin"}), 403, "index_writes_disabled")
    assert_error(client.post(f"/index/documents/{ANSWER_ID.replace('#', '%23')}/restore"), 403, "index_writes_disabled")
    assert served_text(client) == original == stored_text(index_file)
    # the read-only stats stay open without a key (no answer text in them)
    assert client.get("/index").status_code == 200


def test_a_wrong_key_is_compared_in_constant_time_and_refused(app_client, index_file, monkeypatch):
    calls: list[tuple[int, int]] = []
    real = hmac.compare_digest

    def recording(a: bytes, b: bytes) -> bool:
        calls.append((len(a), len(b)))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", recording)
    client = app_client(api_key=API_KEY)
    original = stored_text(index_file)
    for wrong in ("wrong-key-123", API_KEY[:-1], API_KEY + "x", "x" * 200):
        assert_error(client.post("/index/documents", json=OVERWRITE, headers={"X-API-Key": wrong}), 403,
                     "api_key_invalid")
    assert_error(client.post("/index/documents", json=OVERWRITE), 401, "api_key_required")
    # every check went through compare_digest on equal-length digests, whatever the length of the key sent
    assert len(calls) == 4 and set(calls) == {(32, 32)}
    assert stored_text(index_file) == original and served_text(client) == original


def test_the_right_key_overwrites_and_the_history_restores_the_answer(app_client, index_file):
    client = app_client(api_key=API_KEY)
    original = served_text(client)
    r = client.post("/index/documents", json=OVERWRITE, headers=KEY)
    assert r.status_code == 200, r.text
    assert r.json()["replaced"] == [ANSWER_ID]
    assert served_text(client) == SCAM  # the key holder may change answers: the next customer gets the new text

    path = f"/index/documents/{ANSWER_ID.replace('#', '%23')}"
    assert_error(client.get(path + "/history"), 401, "api_key_required")  # the history is key-protected too
    history = client.get(path + "/history", headers=KEY).json()
    assert history["current"]["text"] == SCAM and history["current"]["source"] == "api"
    assert [v["text"] for v in history["versions"]] == [original] and history["versions"][0]["replaced_at"]

    restored = client.post(path + "/restore", headers=KEY)
    assert restored.status_code == 200, restored.text
    assert restored.json()["restored_version"] == history["versions"][0]["version"]
    assert served_text(client) == original == stored_text(index_file)
    # restoring is itself undoable: the scam is now the newest earlier version
    assert client.get(path + "/history", headers=KEY).json()["versions"][0]["text"] == SCAM
    assert_error(client.post(path + "/restore", json={"version": 99}, headers=KEY), 404, "version_not_found")


def test_the_history_is_stored_in_the_index_and_survives_a_restart(app_client, index_file):
    first = app_client(api_key=API_KEY)
    original = served_text(first)
    assert first.post("/index/documents", json=OVERWRITE, headers=KEY).status_code == 200
    second = app_client(api_key=API_KEY, sessions_path=index_file.parent / "other-sessions.sqlite")
    versions = second.get(f"/index/documents/{ANSWER_ID.replace('#', '%23')}/history", headers=KEY).json()["versions"]
    assert [v["text"] for v in versions] == [original]


def _rebuild_client(app_client, index_file):
    client = rebuild_client(app_client, index_file)
    assert client.post("/index/documents", json=OVERWRITE).status_code == 200
    return client


def _wiper_hits(client) -> list[str]:
    return [h["id"] for h in client.get("/search", params={"q": "wiper motor park switch", "mode": "query"}).json()["hits"]]


@pytest.mark.timeout(300)
def test_rebuild_keeps_the_answers_added_through_the_api(app_client, index_file):
    client = _rebuild_client(app_client, index_file)
    before = client.get("/index").json()["documents"]
    r = client.post("/index/rebuild", json={"source": "path", "path": "small.jsonl"})
    assert r.status_code == 200, r.text
    assert r.json()["kept_api_answers"] == 2 and r.json()["dropped_api_answers"] == 0
    assert r.json()["documents"] == before  # the corpus answers plus the one new API answer, no loss
    assert "api-wipers#1" in _wiper_hits(client)
    assert served_text(client) == SCAM  # an answer the API replaced stays replaced ...
    versions = client.get(f"/index/documents/{ANSWER_ID.replace('#', '%23')}/history").json()["versions"]
    assert SCAM not in [v["text"] for v in versions] and len(versions) == 1  # ... the corpus text is in the history, once


@pytest.mark.timeout(300)
def test_rebuild_drops_api_answers_only_on_request_and_they_stay_restorable(app_client, index_file):
    client = _rebuild_client(app_client, index_file)
    assert_error(client.post("/index/rebuild", json={"source": "path", "path": "small.jsonl",
                                                     "drop_api_answers": "yes"}), 422)
    r = client.post("/index/rebuild", json={"source": "path", "path": "small.jsonl", "drop_api_answers": True})
    assert r.status_code == 200, r.text
    assert r.json()["kept_api_answers"] == 0 and r.json()["dropped_api_answers"] == 2
    assert "api-wipers#1" not in _wiper_hits(client)
    assert served_text(client) != SCAM
    assert client.post("/index/documents/api-wipers%231/restore").status_code == 200
    assert "api-wipers#1" in _wiper_hits(client)


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "localhost.evil.example", "127.0.0.2"])
def test_a_foreign_host_header_is_refused_before_anything_runs(app_client, index_file, host):
    client = app_client(api_key=API_KEY)
    original = stored_text(index_file)
    for method, path, body in (("get", "/healthz", None), ("get", "/index", None),
                               ("post", "/index/documents", OVERWRITE), ("post", "/sessions", None)):
        kwargs = {"json": body} if body is not None else {}
        r = getattr(client, method)(path, headers={"Host": host, **KEY}, **kwargs)
        assert_error(r, 400, "host_not_allowed")
    assert stored_text(index_file) == original


@pytest.mark.parametrize("host", ["localhost:8000", "localhost", "127.0.0.1:8000", "[::1]:8000", "LOCALHOST"])
def test_the_local_host_names_are_served(app_client, host):
    assert app_client().get("/healthz", headers={"Host": host}).status_code == 200


def test_configured_host_names_are_served(app_client):
    client = app_client(allowed_hosts=("localhost", "support.example.com", "*.cars.example"))
    for host in ("support.example.com", "chat.cars.example:443"):
        assert client.get("/healthz", headers={"Host": host}).status_code == 200
    assert_error(client.get("/healthz", headers={"Host": "cars.example.evil"}), 400, "host_not_allowed")
