"""``GET /profile``: the served bot's wording, read from the index (or ``serve --profile``) without loading the engine."""

from __future__ import annotations

from api_helpers import API_KEY

from dtdialog.setup.profile import PROFILE_INFO_KEY, Profile, builtin_profile, generic_profile


def test_an_index_without_a_profile_speaks_generically(client):
    r = client.get("/profile")
    assert r.status_code == 200
    assert r.json() == generic_profile().page()
    assert client.get("/healthz").json()["engine_loaded"] is False  # the page's first call loads nothing


def test_the_index_s_stored_profile_and_the_serve_option(make_client, index_copy, tmp_path):
    from index.sqlite_index import SqliteIndex

    stored = Profile(domain="plumbing", page_title="Plumbing help", greeting="Hi! What leaks?")
    index = SqliteIndex(index_copy, readonly=False)
    try:
        index.set_info(**{PROFILE_INFO_KEY: stored.to_dict()})
    finally:
        index.close()
    client = make_client(index_path=index_copy)
    assert client.get("/profile").json() == stored.page()
    session = client.post("/sessions").json()["session_id"]
    turn = client.post(f"/sessions/{session}/messages", json={"text": "hello"}).json()
    assert "plumbing questions" in turn["reply"]
    assert client.get("/profile").json() == stored.page()  # the loaded engine's profile is the same one

    given = tmp_path / "garden.yaml"
    given.write_text("domain: gardening\npage_title: Garden help\n", encoding="utf-8")
    assert make_client(index_path=index_copy, profile=given).get("/profile").json()["title"] == "Garden help"


def test_the_builtin_corpus_speaks_the_car_profile(make_client):
    assert make_client(index_path=None).get("/profile").json() == builtin_profile().page()


def test_a_rebuild_over_http_keeps_the_served_profile(make_client, index_copy, tmp_path):
    from index.sqlite_index import SqliteIndex

    given = tmp_path / "garden.yaml"
    given.write_text("domain: gardening\n", encoding="utf-8")
    client = make_client(index_path=index_copy, profile=given, api_key=API_KEY)
    r = client.post("/index/rebuild", json={"source": "builtin"}, headers={"X-API-Key": API_KEY})
    assert r.status_code == 200, r.text
    index = SqliteIndex(index_copy)
    try:
        assert index.info()[PROFILE_INFO_KEY]["domain"] == "gardening"
    finally:
        index.close()
