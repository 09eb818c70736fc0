"""Probe findings 3, 5 and 6 meeting in ``POST /index/rebuild`` (issue 14, the merge of their fixes).

Finding 3: a rebuild dropped the answers added through the API (now carried over in the builder's swap).
Finding 5: two builds of one index file both "succeeded", the last rename winning, and a ``--dense`` build
could put a new index next to the old vectors (now a build lock, and side files named by generation).
Finding 6: unsafe ids were stored and echoed (now refused where answers are stored).
Reproduced here through the API: a rebuild while another build holds the lock, a rebuild of a server that
ranks with vectors, and a legacy API answer whose id is no longer accepted.
"""

from __future__ import annotations

import os
from dataclasses import replace
from urllib.parse import quote

import numpy
import pytest
from protection_helpers import (  # noqa: F401  (the fixtures are used by name)
    app_client_fixture,
    assert_error,
    index_file_fixture,
    protected_index_fixture,
    rebuild_client,
)

REBUILD = {"source": "path", "path": "small.jsonl"}


class HashEncoder:
    """A stand-in for MiniLM (hashing vectors) that records what it encoded, shared by every instance."""

    seen: list[str] = []

    def encode(self, texts, *, progress: bool = False):
        HashEncoder.seen.extend(texts)
        rows = [numpy.random.RandomState(abs(hash(t)) % (2**32)).randn(8) for t in texts]
        v = numpy.asarray(rows, dtype=numpy.float32).reshape(len(texts), 8)
        return v / numpy.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.timeout(300)
def test_a_rebuild_while_another_build_holds_the_lock_is_409_and_changes_nothing(app_client, index_file):
    from index.index_files import build_lock

    client = rebuild_client(app_client, index_file)
    before, stored = client.get("/index").json(), index_file.read_bytes()
    with build_lock(index_file):  # what `dtdialog index build --out <this file>` holds while it runs
        error = assert_error(client.post("/index/rebuild", json=REBUILD), 409, "index_busy")
    assert f"pid {os.getpid()}" in error["message"] and str(index_file.parent) not in error["message"]
    assert index_file.read_bytes() == stored and client.get("/index").json() == before
    r = client.post("/index/rebuild", json=REBUILD)  # the lock is free again: the rebuild runs and keeps the answer
    assert r.status_code == 200, r.text
    assert r.json()["kept_api_answers"] == 1 and r.json()["documents"] == before["documents"]


@pytest.mark.timeout(300)
def test_a_rebuild_of_a_server_ranking_with_vectors_swaps_in_their_new_files(app_client, index_file, monkeypatch):
    import index.dense
    from dtdialog.api.service import EngineService
    from index.dense_store import DenseStore
    from index.index_files import side_files
    from index.sqlite_index import SqliteIndex

    client = rebuild_client(app_client, index_file)
    monkeypatch.setattr(EngineService, "ranks_with_vectors", lambda self: True)
    monkeypatch.setattr(index.dense, "DenseEncoder", HashEncoder)
    monkeypatch.setattr(HashEncoder, "seen", [])
    assert client.post("/index/rebuild", json=REBUILD).status_code == 200
    with SqliteIndex(index_file) as index:
        generation, ids = index.generation(), index.ids()
    assert "api-wipers#1" in ids and len(HashEncoder.seen) == len(ids)  # no vectors before: all encoded
    assert DenseStore.load(index_file, generation=generation).ids == ids
    assert set(side_files(index_file)) == {generation}  # the new index's vectors and phrases, nothing older
    HashEncoder.seen.clear()
    assert client.post("/index/rebuild", json=REBUILD).status_code == 200
    assert HashEncoder.seen == []  # the next rebuild starts from those vectors: nothing changed, nothing encoded
    with SqliteIndex(index_file) as index:
        assert DenseStore.load(index_file, generation=index.generation()).ids == index.ids() == ids


@pytest.mark.timeout(300)
def test_a_legacy_api_answer_with_an_unsafe_id_goes_to_the_history_and_cannot_be_restored(app_client, index_file,
                                                                                          monkeypatch):
    import index.sqlite_index
    from index.sqlite_index import SqliteIndex

    client = rebuild_client(app_client, index_file)
    unsafe = "<img src=x>#1"
    with SqliteIndex(index_file) as reader:
        legacy = reader.get("api-wipers#1")
    with monkeypatch.context() as m:  # written before ids were checked where answers are stored
        m.setattr(index.sqlite_index, "checked_documents", lambda docs: docs)
        with SqliteIndex(index_file, readonly=False) as writer:
            writer.add([replace(legacy, id=unsafe)])
    r = client.post("/index/rebuild", json=REBUILD)
    assert r.status_code == 200, r.text  # one unsafe answer does not fail the rebuild ...
    assert r.json()["kept_api_answers"] == 1 and r.json()["dropped_api_answers"] == 1
    path = f"/index/documents/{quote(unsafe, safe='')}"
    history = client.get(path + "/history").json()
    assert history["current"] is None and [v["id"] for v in history["versions"]] == [unsafe]  # ... nor is it lost
    error = assert_error(client.post(path + "/restore"), 422, "invalid_input")
    assert "not a valid id" in error["message"]
    with SqliteIndex(index_file) as reader:
        assert reader.get(unsafe) is None and reader.get("api-wipers#1") is not None
