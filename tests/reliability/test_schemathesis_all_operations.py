"""Issue 14's target "0 5xx over a schemathesis run of all operations (including /index/rebuild against a
throwaway root)".

The probe sent 8,006 schemathesis requests without a key, so every index write stopped at 401/403 and was never
exercised. Here every operation of the OpenAPI schema is fuzzed WITH the key (quotas off, the Host allowed) against
this test's own copy of a small index and a throwaway rebuild root holding a tiny corpus, and no answer may be a
5xx (schemathesis' ``not_a_server_error``), an undocumented status or body, a schema-valid request refused, or an
``Allow`` header that names other methods than the schema.

Bounded for CI: ``DTDIALOG_SCHEMATHESIS_EXAMPLES`` examples per operation (default 20), derandomized. A deeper run
outside CI: ``DTDIALOG_SCHEMATHESIS_EXAMPLES=100 pytest tests/reliability/test_schemathesis_all_operations.py``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, settings
from protection_helpers import API_KEY as WRITER_KEY
from protection_helpers import assert_error, write_corpus
from reliability_helpers import API_KEY, STRIDE

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is not installed (pip install schemathesis)")

EXAMPLES = int(os.environ.get("DTDIALOG_SCHEMATHESIS_EXAMPLES", "20"))
KEY = {"X-API-Key": API_KEY}
ANSWER = {"text": "If the wipers stop in the middle of the glass, replace the wiper motor park switch.",
          "dialogue_id": "api-wipers", "position": 1}

assert WRITER_KEY != API_KEY  # the API tests' key is not this server's key (used below as the wrong key)


def _checks() -> list[Any]:
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        allow_header_conformance,
        content_type_conformance,
        positive_data_acceptance,
        response_schema_conformance,
        status_code_conformance,
    )

    # a schema-valid request must not be refused (ST202), an Allow header must name the path's methods (ST205)
    return [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
            positive_data_acceptance, allow_header_conformance]


@pytest.fixture
def rebuild_root(tmp_path: Path) -> Path:
    """Return a throwaway rebuild root holding ``small.jsonl`` (six hand-written dialogues)."""
    root = tmp_path / "corpora"
    root.mkdir()
    write_corpus(root / "small.jsonl")
    return root


@pytest.fixture
def keyed_client(make_client: Callable[..., Any], index_copy: Path, rebuild_root: Path,
                 monkeypatch: pytest.MonkeyPatch) -> Any:
    """Return a key-holding client of a server over a private index copy that may rebuild from ``rebuild_root``.

    ``{"source": "builtin"}`` rebuilds read a slice of the built-in corpus (the same code path, ~0.5 s instead of
    ~10 s per rebuild): schemathesis sends that body often and the whole pass must stay within a few minutes.
    """
    from data import builtin

    full = builtin.load_builtin_corpus
    monkeypatch.setattr(builtin, "load_builtin_corpus", lambda directory=None: full(directory)[::STRIDE])
    # schemathesis calls the app as Host "testserver"
    client = make_client(index_path=index_copy, rebuild_roots=(rebuild_root,),
                         allowed_hosts=("localhost", "testserver"))
    assert client.get("/index").status_code == 200  # load the engine once
    return client


@pytest.fixture
def live_ids(keyed_client: Any) -> dict[str, str]:
    """Return ids that exist on the keyed server: a session, and an API answer with one earlier version."""
    sid = keyed_client.post("/sessions").json()["session_id"]
    doc_id = keyed_client.post("/index/documents", json={"answers": [ANSWER]}).json()["ids"][0]
    changed = {**ANSWER, "text": ANSWER["text"] + " Check the fuse too."}
    assert keyed_client.post("/index/documents", json={"answers": [changed]}).json()["replaced"] == [doc_id]
    # schemathesis sends a path parameter as given: '#' must be encoded, as a client would
    return {"session_id": sid, "doc_id": quote(doc_id, safe="")}


def _aim_at_live_ids(case: Any, live_ids: dict[str, str]) -> None:
    """Point half of the valid cases of an operation on a session or answer at one that exists.

    Random ids almost never exist, so turns, history and restore would only ever answer 404; invalid ids and
    the other half of the valid ones are sent as generated (422 and 404 stay exercised).
    """
    from schemathesis import GenerationMode

    params = case.path_parameters or {}
    if case.meta is None or case.meta.generation.mode != GenerationMode.POSITIVE:
        return
    for name, value in live_ids.items():
        if name in params and len(str(params[name])) % 2 == 0:
            params[name] = value


@pytest.fixture
def api_schema(keyed_client: Any) -> Any:
    return schemathesis.openapi.from_asgi("/openapi.json", keyed_client.app)


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.mark.slow
@pytest.mark.timeout(900)
@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_every_operation_with_the_key_never_gets_a_5xx(case: Any, live_ids: dict[str, str]) -> None:
    _aim_at_live_ids(case, live_ids)
    response = case.call(headers=KEY)
    assert response.status_code < 500, f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:300]}"
    case.validate_response(response, checks=_checks())


def _call(api_schema: Any, method: str, path: str, **parts: Any) -> Any:
    """Send one hand-written case of the schema's ``method path`` with the key; check it like a fuzzed one."""
    case = api_schema[path][method].Case(**parts)
    response = case.call(headers=KEY)
    case.validate_response(response, checks=_checks())
    return response


@pytest.mark.slow
def test_the_writes_fuzzing_rarely_reaches_succeed_under_the_same_checks(api_schema, keyed_client, index_copy):
    # Random ids and paths almost never name a real answer, session or corpus file: these cases do, so the write
    # paths behind them (replace, history, restore, rebuild from the root) run under the same checks.
    added = _call(api_schema, "POST", "/index/documents", body={"answers": [ANSWER]}).json()
    doc_id = added["ids"][0]
    # schemathesis sends a hand-written path parameter as given: '#' must be encoded, as a client would
    doc_path = {"doc_id": quote(doc_id, safe="")}
    changed = {**ANSWER, "text": ANSWER["text"] + " Check the fuse too."}
    assert _call(api_schema, "POST", "/index/documents", body={"answers": [changed]}).json()["replaced"] == [doc_id]
    history = _call(api_schema, "GET", "/index/documents/{doc_id}/history", path_parameters=doc_path).json()
    assert [v["text"] for v in history["versions"]] == [ANSWER["text"]]
    restored = _call(api_schema, "POST", "/index/documents/{doc_id}/restore", path_parameters=doc_path)
    assert restored.status_code == 200, restored.text
    before = keyed_client.get("/index").json()["documents"]
    rebuilt = _call(api_schema, "POST", "/index/rebuild", body={"source": "path", "path": "small.jsonl"}).json()
    assert rebuilt["dialogues"] == 6 and rebuilt["kept_api_answers"] == 1
    assert rebuilt["documents"] == keyed_client.get("/index").json()["documents"] != before
    sid = _call(api_schema, "POST", "/sessions").json()["session_id"]
    turn = _call(api_schema, "POST", "/sessions/{session_id}/messages", path_parameters={"session_id": sid},
                 body={"text": "My wipers stop in the middle of the glass."})
    assert turn.status_code == 200, turn.text
    # the wrong key still changes nothing
    assert keyed_client.post("/index/rebuild", json={}, headers={"X-API-Key": WRITER_KEY}).status_code in (401, 403)


# What the deeper run (and probing the rebuild root by hand around it) found, kept as regressions.


def test_rebuild_documents_its_404_for_a_missing_corpus(api_schema, keyed_client):
    # found by the schemathesis pass: 404 corpus_not_found was sent but not in the schema (ST103)
    assert "404" in api_schema.raw_schema["paths"]["/index/rebuild"]["post"]["responses"]
    _call(api_schema, "POST", "/index/rebuild", body={"source": "path", "path": "missing.jsonl"})


@pytest.mark.parametrize("name, make", [
    ("a" * 300, None),  # one name longer than the file system allows: OSError ENAMETOOLONG was a 500
    ("loop", lambda root: (root / "loop").symlink_to(root / "loop")),  # resolve() raised RuntimeError: a 500
    ("loop/small.jsonl", lambda root: (root / "loop").symlink_to(root / "loop")),
], ids=["name-too-long", "symlink-loop", "under-a-symlink-loop"])
def test_a_rebuild_path_that_cannot_be_looked_up_is_a_422(keyed_client, rebuild_root, index_copy, name, make):
    if make is not None:
        make(rebuild_root)
    before = keyed_client.get("/index").json()
    error = assert_error(keyed_client.post("/index/rebuild", json={"source": "path", "path": name}), 422, "invalid_path")
    assert str(rebuild_root) not in error["message"]
    assert keyed_client.get("/index").json() == before  # nothing was rebuilt


@pytest.mark.timeout(60)  # hang guard: reading the pipe used to block the engine thread for good
@pytest.mark.parametrize("name", ["pipe.jsonl", "."])
def test_a_pipe_in_the_rebuild_root_is_refused_not_read(keyed_client, rebuild_root, name):
    os.mkfifo(rebuild_root / "pipe.jsonl")
    before = keyed_client.get("/index").json()
    error = assert_error(keyed_client.post("/index/rebuild", json={"source": "path", "path": name}), 422,
                         "invalid_input")
    assert "pipe.jsonl is not a regular file" in error["message"]
    assert keyed_client.get("/index").json() == before
    rebuilt = keyed_client.post("/index/rebuild", json={"source": "path", "path": "small.jsonl"})
    assert rebuilt.status_code == 200, rebuilt.text  # the engine thread is free


# Issue 31's target: the probe's "--checks all" run found schema-valid requests refused (ST202) and an Allow header
# naming one method of two (ST205). The schema and the server now agree; these keep them agreeing.


def _model(api_schema: Any, name: str) -> dict[str, Any]:
    """Return the schema of the request body model ``name`` (its fields refer to no other model)."""
    return api_schema.raw_schema["components"]["schemas"][name]


@pytest.mark.parametrize("path", ["/search", "/sessions/{session_id}", "/index/documents/{doc_id}/history", "/healthz"])
def test_a_refused_method_is_answered_with_every_method_the_path_takes(api_schema, keyed_client, path):
    declared = {m.upper() for m in api_schema.raw_schema["paths"][path]}
    response = keyed_client.request("OPTIONS", path.replace("{session_id}", "x").replace("{doc_id}", "x"))
    assert response.status_code == 405
    assert set(response.headers["allow"].split(", ")) - {"HEAD"} == declared  # /search: "GET" alone before


@pytest.mark.parametrize("path, model, body", [
    ("/search", "SearchRequest", {"query": "battery dies", "size": 21.0}),
    ("/index/documents/{doc_id}/restore", "RestoreRequest", {"version": 1.0}),
])
def test_a_whole_number_written_with_a_fraction_is_an_integer(api_schema, keyed_client, live_ids, path, model, body):
    # JSON Schema's "integer" takes 21.0; the server said "size: Input should be a valid integer"
    from jsonschema import Draft202012Validator

    assert Draft202012Validator(_model(api_schema, model)).is_valid(body)
    response = keyed_client.post(path.replace("{doc_id}", live_ids["doc_id"]), json=body)
    assert response.status_code == 200, response.text
    for bad in (21.5, True, "21"):  # a fraction, a bool or a string is still refused
        assert keyed_client.post("/search", json={"query": "battery", "size": bad}).status_code == 422


@pytest.mark.parametrize("model, field", [("MessageRequest", "text"), ("SearchRequest", "query"),
                                          ("ParseRequest", "text"), ("RestWebhookRequest", "message")])
def test_text_that_cleans_to_nothing_is_outside_the_schema(api_schema, model, field):
    # "\u0086" or "\u007f\u007f" met the schema (a non-empty string) and got 422 "text is empty"
    import re

    pattern = _model(api_schema, model)["properties"][field]["pattern"]
    for empty in ("\u0086", "\u007f\u007f", " \t\n", "\u200b\ufeff"):
        assert re.search(pattern, empty) is None, repr(empty)
    for kept in ("x", "\u0086?", "\U0001f697", "\u00e9"):
        assert re.search(pattern, kept) is not None, repr(kept)


def test_a_query_string_of_stop_words_finds_nothing(keyed_client):
    response = keyed_client.get("/search", params={"q": "0", "mode": "query"})  # was 422 "no searchable words"
    assert response.status_code == 200, response.text
    assert response.json()["hits"] == []


def test_the_schema_states_when_a_rebuild_needs_a_path(api_schema):
    from jsonschema import Draft202012Validator

    rebuild = Draft202012Validator(_model(api_schema, "RebuildRequest"))
    assert rebuild.is_valid({}) and rebuild.is_valid({"source": "path", "path": "small.jsonl"})
    assert not rebuild.is_valid({"source": "path", "path": None})  # answered 422 "source='path' needs a path"
    assert not rebuild.is_valid({"source": "builtin", "path": "small.jsonl"})


def test_a_question_with_nothing_to_show_is_no_question(keyed_client):
    # "question" may be null or blank; one of control characters only got 422 "text is empty"
    answer = {**ANSWER, "question": "\u0086\u007f"}
    response = keyed_client.post("/index/documents", json={"answers": [answer]})
    assert response.status_code == 200, response.text


def test_the_schema_states_which_ids_can_be_restored(api_schema, keyed_client):
    # restore stores the answer again, so it refuses an unsafe id (422): the schema said any string would do
    import re

    (param,) = api_schema.raw_schema["paths"]["/index/documents/{doc_id}/restore"]["post"]["parameters"]
    assert re.search(param["schema"]["pattern"], "\u215d\u00f3\u00c4D") is None
    assert_error(keyed_client.post(f"/index/documents/{quote('⅝óÄD', safe='')}/restore"), 422, "invalid_input")
