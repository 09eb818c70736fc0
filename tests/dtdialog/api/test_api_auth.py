"""Index management: writes are refused without a configured key (403 index_writes_disabled); with a key
configured, every index endpoint needs X-API-Key: 401 without one, 403 with a wrong one."""

from __future__ import annotations

import pytest
from api_helpers import API_KEY, assert_error

from dtdialog.api import ApiSettings
from parsers.errors import ConfigError

ENDPOINTS = [("get", "/index", None), ("post", "/index/documents", {"answers": [{"text": "Check the fuse."}]}),
             ("post", "/index/rebuild", {"source": "builtin"})]


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
def test_missing_key_is_401_and_wrong_key_is_403(make_client, method, path, body):
    client = make_client(api_key=API_KEY)
    kwargs = {"json": body} if body is not None else {}
    assert_error(getattr(client, method)(path, **kwargs), 401, "api_key_required")
    assert_error(getattr(client, method)(path, headers={"X-API-Key": "wrong-key-123"}, **kwargs), 403, "api_key_invalid")


def test_right_key_is_accepted_and_other_endpoints_need_none(make_client):
    client = make_client(api_key=API_KEY)
    assert client.get("/index", headers={"X-API-Key": API_KEY}).status_code == 200
    assert client.get("/healthz").status_code == 200
    assert client.post("/sessions").status_code == 201


def test_no_key_configured_leaves_only_the_read_only_stats_open(client):
    assert client.get("/index").status_code == 200
    for method, path, body in ENDPOINTS[1:]:
        assert_error(getattr(client, method)(path, json=body), 403, "index_writes_disabled")
    # a key sent to a server that has none configured changes nothing
    assert_error(client.post("/index/rebuild", json={"source": "builtin"}, headers={"X-API-Key": API_KEY}), 403,
                 "index_writes_disabled")


def test_rebuild_paths_are_confined_to_the_rebuild_roots(make_client, index_copy, tmp_path):
    root = tmp_path / "allowed"
    root.mkdir()
    client = make_client(index_path=index_copy, rebuild_roots=(root,), api_key=API_KEY)
    client.headers["X-API-Key"] = API_KEY
    assert_error(client.post("/index/rebuild", json={"source": "path", "path": "/etc/passwd"}), 403, "path_not_allowed")
    assert_error(client.post("/index/rebuild", json={"source": "path", "path": "../../etc"}), 403, "path_not_allowed")
    assert_error(client.post("/index/rebuild", json={"source": "path", "path": "absent.jsonl"}), 404, "corpus_not_found")
    assert_error(client.post("/index/rebuild", json={"source": "path"}), 422)
    bad = root / "broken.jsonl"
    bad.write_text("{not json\n")
    r = client.post("/index/rebuild", json={"source": "path", "path": "broken.jsonl"})
    assert_error(r, 422, "invalid_input")


def test_rebuild_by_path_is_refused_without_a_root(make_client):
    assert_error(make_client(api_key=API_KEY).post("/index/rebuild", json={"source": "path", "path": "x.jsonl"},
                                                   headers={"X-API-Key": API_KEY}), 403, "rebuild_path_disabled")


def test_settings_are_validated_early(tmp_path):
    with pytest.raises(ConfigError):
        ApiSettings(api_key="short")
    with pytest.raises(ConfigError):
        ApiSettings(backend="mongodb")
    with pytest.raises(ConfigError):
        ApiSettings(max_body_bytes=0)
    with pytest.raises(ConfigError):
        ApiSettings(sessions_path=tmp_path)


def test_api_key_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("DTDIALOG_API_KEY", API_KEY)
    assert ApiSettings.from_env().api_key == API_KEY
    assert ApiSettings.from_env().to_dict()["api_key"] == "***"
