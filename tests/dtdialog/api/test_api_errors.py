"""Every error path answers with a clean JSON 4xx (or a generic 500), never a traceback or a server path."""

from __future__ import annotations

import pytest
from api_helpers import assert_error


def test_empty_and_blank_text_are_422(client):
    assert_error(client.post("/parse", json={"text": ""}), 422, "validation_error")
    assert_error(client.post("/parse", json={"text": "   \n\t "}), 422, "invalid_input")
    assert_error(client.post("/search", json={"query": ""}), 422, "validation_error")
    assert_error(client.get("/search", params={"q": ""}), 422, "validation_error")
    sid = client.post("/sessions").json()["session_id"]
    assert_error(client.post(f"/sessions/{sid}/messages", json={"text": ""}), 422, "validation_error")


def test_oversized_text_is_413(make_client):
    client = make_client(max_text_chars=500, max_body_bytes=10_000)
    long_text = "The engine stalls. " * 40
    err = assert_error(client.post("/parse", json={"text": long_text}), 413, "text_too_long")
    assert "500" in err["message"]
    assert_error(client.get("/search", params={"q": long_text}), 413, "text_too_long")
    sid = client.post("/sessions").json()["session_id"]
    assert_error(client.post(f"/sessions/{sid}/messages", json={"text": long_text}), 413, "text_too_long")


def test_body_over_the_limit_is_413_by_header_and_when_streamed(make_client):
    client = make_client(max_text_chars=500, max_body_bytes=1_000)
    big = b'{"text": "' + b"a" * 5_000 + b'"}'
    assert_error(client.post("/parse", content=big, headers={"Content-Type": "application/json"}),
                 413, "payload_too_large")

    def chunks():  # no Content-Length: the limit must hold while reading
        yield b'{"text": "'
        for _ in range(10):
            yield b"a" * 500
        yield b'"}'

    assert_error(client.post("/parse", content=chunks(), headers={"Content-Type": "application/json"}),
                 413, "payload_too_large")


def test_invalid_json_is_400_and_wrong_shapes_are_422(client):
    headers = {"Content-Type": "application/json"}
    assert_error(client.post("/parse", content=b'{"text": "unterminated', headers=headers), 400, "invalid_json")
    assert_error(client.post("/parse", content=b"\xff\xfe\x00binary", headers=headers), 400, "invalid_json")
    assert_error(client.post("/parse", content=b"[1, 2]", headers=headers), 422, "validation_error")
    assert_error(client.post("/parse", content=b"text=hello"), 422, "validation_error")
    assert_error(client.post("/parse", json={"text": 5}), 422, "validation_error")
    err = assert_error(client.post("/parse", json={"text": "ok", "surprise": 1}), 422, "validation_error")
    assert "surprise" in err["message"]
    assert_error(client.post("/search", json={"query": "brakes", "size": 0}), 422)
    assert_error(client.get("/search", params={"q": "brakes", "size": 10_000}), 422)
    assert_error(client.get("/search", params={"q": "brakes", "mode": "sql"}), 422)


def test_unknown_session_is_404(client):
    assert_error(client.get("/sessions/0123456789abcdef"), 404, "session_not_found")
    assert_error(client.post("/sessions/0123456789abcdef/messages", json={"text": "hello"}), 404, "session_not_found")
    assert_error(client.get("/sessions/" + "x" * 300), 422)


def test_unknown_route_and_method(client):
    assert_error(client.get("/no/such/thing"), 404, "not_found")
    assert_error(client.delete("/healthz"), 405, "method_not_allowed")


def test_unexpected_errors_become_a_generic_500_with_an_error_id(client, caplog):
    service = client.app.state.service

    def broken() -> None:
        raise RuntimeError("secret detail at /srv/dtdialog/secret.py line 42")

    service.parser = broken
    with caplog.at_level("ERROR", logger="dtdialog.api"):
        r = client.post("/parse", json={"text": "hello there"})
    err = assert_error(r, 500, "internal_error")
    assert "secret" not in r.text and "RuntimeError" not in r.text
    assert err["error_id"] and err["error_id"] in caplog.text  # the log has the id next to the traceback
    assert "secret detail" in caplog.text


@pytest.mark.parametrize("message", ["index not found at /home/me/.cache/dtdialog/answers.sqlite; build it"])
def test_engine_error_messages_lose_their_server_paths(message):
    from dtdialog.api.errors import scrub_paths

    cleaned = scrub_paths(message)
    assert "/home" not in cleaned and "answers.sqlite" in cleaned


def test_an_unusable_index_is_a_clean_503(make_client, tmp_path):
    bogus = tmp_path / "not-an-index.sqlite"
    bogus.write_text("this is not a database\n")
    client = make_client(index_path=bogus)
    err = assert_error(client.post("/search", json={"query": "brakes squeal"}), 503, "engine_unavailable")
    assert "not-an-index.sqlite" in err["message"]
    assert client.get("/healthz").status_code == 200
