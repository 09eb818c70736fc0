"""Probe finding 6: stored markup, raw-HTML ids, and silently coerced request fields.

The HTML stripper decoded entities *after* stripping, so ``&lt;svg onload=...&gt;`` was stored and served as a
live ``<svg onload=...>``; ``id`` and ``dialogue_id`` accepted raw HTML; ``{"position": false}`` and ``"1"`` were
silently coerced. Here: entity-encoded markup through a CSV corpus and through ``POST /index/documents`` is
stored inert, unsafe ids are refused at the storage boundary and by the API, and request fields are strict.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from dtdialog.api import ApiSettings, create_app
from index.sqlite_index import SqliteIndex
from parsers.errors import InputError

#: A ``<`` an HTML parser would read as the start of a tag, comment or declaration: what "live markup" needs.
LIVE = re.compile(r"<\s*[A-Za-z/!?]")
HOSTILE = ("Check the fuse first. &lt;svg onload=alert(1)&gt; Then the relay. "
           "&amp;lt;img src=x onerror=alert(2)&amp;gt; &lt;<script>x</script>script&gt;alert(3)&lt;/script&gt;")
KEY = "reliability-key-0123456789"


def _assert_inert(text: str) -> None:
    assert not LIVE.search(text), text
    assert "onload" not in text and "onerror" not in text, text


@pytest.fixture(scope="module")
def parser():
    from dtdialog.setup.assembly import engine_parser_name
    from parsers.base import get_parser

    return get_parser(engine_parser_name())


@pytest.fixture(scope="module")
def csv_index(tmp_path_factory: pytest.TempPathFactory, parser) -> Path:
    """An index built from a CSV corpus whose HTML answers hide markup behind entities."""
    from data.loaders import load_corpus
    from index.builder import build_index

    folder = tmp_path_factory.mktemp("csv")
    rows = [("Why does my car not start?", f"<p>{HOSTILE}</p>"),
            ("&lt;b onmouseover=alert(4)&gt;Why do the brakes squeal?", "<p>Replace the pads.</p><p>Then &amp; "
             "check the rotors.</p>")]
    corpus = folder / "faq.csv"
    corpus.write_text("QUESTION,ANSWER\n" + "".join(f'"{q}","{a}"\n' for q, a in rows), encoding="utf-8")
    out = folder / "answers.sqlite"
    build_index(dialogues=load_corpus(corpus, fmt="csv"), parser=parser, backend="sqlite", out=out, progress=False)
    return out


def test_entity_encoded_markup_in_a_csv_answer_is_stored_inert(csv_index: Path) -> None:
    with SqliteIndex(csv_index) as index:
        docs = [index.get(doc_id) for doc_id in index.ids()]
    assert len(docs) == 2
    for doc in docs:
        _assert_inert(doc.text)
        _assert_inert(doc.meta.get("question", ""))
        _assert_inert(json.dumps(doc.tree))
    assert "Check the fuse first." in docs[0].text and "Then the relay." in docs[0].text
    assert "Then & check the rotors." in docs[1].text  # ordinary entities still decode


def test_unsafe_ids_are_refused_at_the_storage_boundary(csv_index: Path, tmp_path: Path, parser) -> None:
    import shutil
    from dataclasses import replace

    from data.model import ANSWER, QUESTION, Dialogue, Turn
    from index.builder import build_index

    copy = tmp_path / "answers.sqlite"
    shutil.copy(csv_index, copy)
    with SqliteIndex(copy, readonly=False) as index:
        good = index.get(index.ids()[0])
        before = index.count()
        for bad in ({"id": "<svg onload=alert(1)>"}, {"dialogue_id": "a b"}, {"id": "x" * 257}, {"id": ""}):
            with pytest.raises(InputError, match="is not a valid id"):
                index.add([replace(good, id="fresh#1"), replace(good, **bad)])
            assert index.count() == before and index.get("fresh#1") is None  # one transaction: nothing added
    turns = (Turn(QUESTION, "Why does the engine overheat?"), Turn(ANSWER, "The radiator fan relay failed."))
    report = build_index(dialogues=[Dialogue("ok-1", turns), Dialogue("<img src=x onerror=alert(1)>", turns)],
                         parser=parser, backend="sqlite", out=tmp_path / "built.sqlite", progress=False)
    assert report.indexed == 1 and len(report.skipped) == 1 and "is not a valid id" in report.skipped[0][1]


@pytest.fixture()
def client(csv_index: Path, tmp_path: Path) -> TestClient:
    import shutil

    index = tmp_path / "answers.sqlite"
    shutil.copy(csv_index, index)
    app = create_app(ApiSettings(index_path=index, sessions_path=tmp_path / "sessions.sqlite", api_key=KEY,
                                 ranker="rules"))
    with TestClient(app, base_url="http://localhost", raise_server_exceptions=False,
                    headers={"X-API-Key": KEY}) as test_client:
        yield test_client


def test_entity_encoded_markup_through_the_api_is_stored_and_served_inert(client: TestClient) -> None:
    answer = {"text": HOSTILE, "id": "api-fuse#1", "question": "<img src=x onerror=alert(5)>Which fuse &lt;b&gt;?"}
    response = client.post("/index/documents", json={"answers": [answer]})
    assert response.status_code == 200, response.text
    stored = client.app.state.service.runtime().index.get("api-fuse#1")
    _assert_inert(stored.text)
    _assert_inert(stored.meta["question"])
    assert stored.meta["question"] == "Which fuse ?"
    hits = client.post("/search", json={"query": "fuse relay", "mode": "query"}).json()["hits"]
    assert any(h["id"] == "api-fuse#1" for h in hits)
    for hit in hits:
        _assert_inert(hit["text"])


@pytest.mark.parametrize(("answer", "where"), [
    ({"text": "Check the fuse.", "id": "<svg onload=alert(1)>"}, "answers.0.id"),
    ({"text": "Check the fuse.", "dialogue_id": "a\"onmouseover=\"x"}, "answers.0.dialogue_id"),
    ({"text": "Check the fuse.", "id": "x" * 201}, "answers.0.id"),
    ({"text": "Check the fuse.", "position": False}, "answers.0.position"),
    ({"text": "Check the fuse.", "position": "1"}, "answers.0.position"),
    ({"text": "Check the fuse.", "position": 1.5}, "answers.0.position"),  # 1.0 is the integer 1 to JSON Schema
    ({"text": 5}, "answers.0.text"),
])
def test_bad_ids_and_coercible_values_are_refused_with_a_clear_error(client: TestClient, answer, where) -> None:
    before = client.get("/index").json()["documents"]
    response = client.post("/index/documents", json={"answers": [answer]})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "validation_error" and error["message"].startswith(f"{where}: ")
    assert client.get("/index").json()["documents"] == before


@pytest.mark.parametrize("body", [{"query": "fuse", "size": "3"}, {"query": "fuse", "size": True},
                                  {"query": 7}])
def test_search_request_fields_are_strict(client: TestClient, body) -> None:
    response = client.post("/search", json={**body, "mode": "query"})
    assert response.status_code == 422 and response.json()["error"]["code"] == "validation_error"
