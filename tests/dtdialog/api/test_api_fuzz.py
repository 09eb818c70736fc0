"""Bad-input fuzzing: schema-driven (schemathesis over the OpenAPI schema) and property-based (hypothesis).

Both are bounded (max_examples) and assert one property: the server never answers 5xx.
"""

from __future__ import annotations

import json

import pytest
from api_helpers import API_KEY, NO_QUOTAS, SPARK_PLUG_QUESTION
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is not installed (pip install schemathesis)")

_SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                     suppress_health_check=list(HealthCheck))


@pytest.fixture
def fuzz_client(make_client):
    # The key is configured and never sent, so the index endpoints answer 401 instead of rebuilding
    # the index; their validation is covered by the hypothesis tests below.
    # Quotas are off: these tests send hundreds of requests from one client on purpose (the quotas have their
    # own tests); schemathesis calls the app as Host "testserver", which is allowed here explicitly.
    client = make_client(api_key=API_KEY, max_text_chars=2_000, max_body_bytes=20_000, **NO_QUOTAS,
                         allowed_hosts=("localhost", "testserver"))
    assert client.post("/search", json={"query": SPARK_PLUG_QUESTION}).status_code == 200  # load the engine once
    return client


@pytest.fixture
def api_schema(fuzz_client):
    return schemathesis.openapi.from_asgi("/openapi.json", fuzz_client.app)


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@_SETTINGS
def test_schema_fuzz_never_gets_a_5xx(case):
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    response = case.call()
    assert response.status_code < 500, f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:300]}"
    # Beyond "no 5xx": every status is documented and every body (errors included) matches its schema.
    case.validate_response(response, checks=[not_a_server_error, status_code_conformance, content_type_conformance,
                                             response_schema_conformance])


_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400)


@given(text=_TEXT)
@_SETTINGS
def test_any_text_to_parse_search_and_a_session_is_never_5xx(fuzz_client, text):
    c = fuzz_client
    assert c.post("/parse?svg=true", json={"text": text}).status_code < 500
    assert c.post("/search", json={"query": text, "size": 3}).status_code < 500
    assert c.get("/search", params={"q": text, "mode": "query"}).status_code < 500
    sid = c.post("/sessions").json()["session_id"]
    r = c.post(f"/sessions/{sid}/messages?explain=true", json={"text": text})
    assert r.status_code < 500, r.text[:300]
    assert c.get(f"/sessions/{sid}").status_code == 200


@given(body=st.one_of(st.binary(max_size=300), st.text(max_size=200).map(lambda s: s.encode("utf-8", "surrogatepass"))))
@_SETTINGS
def test_any_bytes_as_a_body_are_a_clean_4xx(fuzz_client, body):
    for path in ("/parse", "/search", "/sessions/0/messages"):
        r = fuzz_client.post(path, content=body, headers={"Content-Type": "application/json"})
        if r.status_code != 200:
            assert 400 <= r.status_code < 500 and set(r.json()) == {"error"}, (path, body, r.text[:200])


_JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _TEXT,
                        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
                        max_leaves=12)


@given(answers=st.one_of(_JSONISH, st.lists(st.fixed_dictionaries({"text": _TEXT}, optional={
    "id": _JSONISH, "dialogue_id": _JSONISH, "position": _JSONISH, "question": _JSONISH}), max_size=3)))
@_SETTINGS
def test_any_json_to_the_index_endpoints_is_never_5xx(make_client, index_copy, answers):
    client = make_client(index_path=index_copy, api_key=API_KEY)
    headers = {"X-API-Key": API_KEY, "Content-Type": "application/json"}
    body = json.dumps({"answers": answers}, ensure_ascii=False).encode("utf-8", "surrogatepass")
    r = client.post("/index/documents", content=body, headers=headers)
    assert r.status_code < 500, r.text[:300]
    r = client.post("/index/rebuild", content=json.dumps({"source": "path", "path": answers}).encode("utf-8", "surrogatepass"),
                    headers=headers)
    assert r.status_code < 500, r.text[:300]
