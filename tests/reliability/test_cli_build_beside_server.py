"""A CLI build of the file a server serves (issue 14: "API writes do not take the CLI build lock").

An operator runs ``dtdialog index build --out <served file>`` (a nightly rebuild from new logs) while the server
runs and key holders add answers through the API. Before: an API write during the build landed in the file the
build then replaced (acknowledged, then lost); the build dropped every answer added through the API; and the
server went on serving the old file until restarted. Now API writes take the file's build lock (409 ``index_busy``
while a build holds it), every rebuild carries the API answers and the history over, and the server loads the
new file as soon as it notices the swap.
"""

from __future__ import annotations

from protection_helpers import (  # noqa: F401  (the fixtures are used by name)
    ANSWER_ID,
    SCAM,
    WIPERS,
    app_client_fixture,
    assert_error,
    index_file_fixture,
    protected_index_fixture,
    rebuild_client,
    served_text,
    stored_text,
    write_corpus,
)

from dtdialog.cli import main

WIPER_QUESTION = "wiper motor park switch"
EXTRA = {"answers": [{"text": "A clicking relay under the dash with the hazard lights on is the flasher unit; replace it.",
                      "dialogue_id": "api-flasher", "position": 1}]}


def _ids(client, query: str) -> list[str]:
    r = client.get("/search", params={"q": query, "mode": "query"})
    assert r.status_code == 200, r.text
    return [h["id"] for h in r.json()["hits"]]


def _cli_build(index_file, *extra: str) -> None:
    corpus = index_file.parent / "nightly.jsonl"
    write_corpus(corpus)
    assert main(["index", "build", "--format", "jsonl", "--corpus", str(corpus), "--out", str(index_file),
                 "--quiet", *extra]) == 0


def test_an_api_write_during_a_build_is_refused_and_nothing_is_stored(app_client, index_file):
    from index.index_files import build_lock

    client = rebuild_client(app_client, index_file)
    before = client.get("/index").json()["documents"]
    with build_lock(index_file):  # what `dtdialog index build --out <this file>` holds while it runs
        assert_error(client.post("/index/documents", json=EXTRA), 409, "index_busy")
        assert_error(client.post(f"/index/documents/{ANSWER_ID.replace('#', '%23')}/restore"), 409, "index_busy")
    assert client.get("/index").json()["documents"] == before
    assert "api-flasher#1" not in _ids(client, "flasher relay hazard")
    assert client.post("/index/documents", json=EXTRA).status_code == 200  # the build is over: accepted
    assert "api-flasher#1" in _ids(client, "flasher relay hazard")


def test_a_cli_rebuild_keeps_the_api_answers_and_the_server_serves_the_new_file(app_client, index_file, capsys):
    client = rebuild_client(app_client, index_file)  # holds the WIPERS answer, added through the API
    assert client.post("/index/documents", json={"answers": [{"id": ANSWER_ID, "text": SCAM}]}).status_code == 200
    old_inode = index_file.stat().st_ino
    capsys.readouterr()
    _cli_build(index_file)
    assert "kept 2 answer(s) added through the API" in capsys.readouterr().out
    assert index_file.stat().st_ino != old_inode  # a new file was renamed over the served one
    assert "api-wipers#1" in _ids(client, WIPER_QUESTION)  # served from the new file, without a restart
    assert served_text(client) == SCAM and stored_text(index_file) == SCAM  # an edit survives the rebuild too
    # a write after the swap lands in the file that is served, not in the replaced one
    assert client.post("/index/documents", json=EXTRA).status_code == 200
    assert "api-flasher#1" in _ids(client, "flasher relay hazard")
    assert stored_text(index_file, "api-flasher#1") is not None


def test_a_cli_rebuild_drops_the_api_answers_only_when_asked_and_keeps_them_restorable(app_client, index_file, capsys):
    client = rebuild_client(app_client, index_file)
    capsys.readouterr()
    _cli_build(index_file, "--drop-api-answers")
    assert "kept 0 answer(s) added through the API, 1 moved to the answer history" in capsys.readouterr().out
    assert "api-wipers#1" not in _ids(client, WIPER_QUESTION)
    assert client.post("/index/documents/api-wipers%231/restore").status_code == 200
    assert "api-wipers#1" in _ids(client, WIPER_QUESTION)


def test_drop_api_answers_is_refused_for_elasticsearch(capsys):
    assert main(["index", "build", "--backend", "elasticsearch", "--drop-api-answers"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--drop-api-answers" in err and err.count("\n") == 1
