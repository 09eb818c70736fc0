"""ElasticsearchIndex with dense vectors: mapping, bulk actions, term statistics, one-request hybrid search.

Unit tests drive the real ``elasticsearch`` client against ``es_fake.FakeElasticsearch`` (requests
recorded as sent); live tests (marker ``elasticsearch``) need ``ELASTICSEARCH_URL``.
"""

from __future__ import annotations

import json
import math
import os
import uuid

import numpy as np
import pytest
from es_fake import FakeElasticsearch, HashingEncoder

from index.base import SearchQuery
from index.dense_store import build_dense_store
from index.es_knn import (
    EMBEDDING_FIELD,
    HUB_FIELD,
    META_KEY,
    dense_index_mappings,
    hybrid_request,
    knn_request,
)
from index.es_query import INDEX_MAPPINGS, INDEX_SETTINGS, document_source
from parsers.errors import DTDialogError, InputError, ModelNotAvailableError

pytest.importorskip("elasticsearch", reason="the elasticsearch client is not installed")

from index.es_index import ElasticsearchIndex  # noqa: E402 - needs the client, checked just above

ES_URL = os.environ.get("ELASTICSEARCH_URL")
live = [pytest.mark.elasticsearch,
        pytest.mark.skipif(not ES_URL, reason="ELASTICSEARCH_URL is not set: no live Elasticsearch server")]


@pytest.fixture()
def encoder() -> HashingEncoder:
    return HashingEncoder()


@pytest.fixture()
def store(documents, encoder):
    return build_dense_store(ids=[d.id for d in documents], texts=[d.text for d in documents], encoder=encoder,
                             progress=False)


@pytest.fixture()
def server() -> FakeElasticsearch:
    return FakeElasticsearch()


@pytest.fixture()
def es(server) -> ElasticsearchIndex:
    return ElasticsearchIndex("http://fake-es:9200", index_name="answers", client=server.client())


def cosine(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def battery_query(size: int = 2) -> SearchQuery:
    return SearchQuery(size=size).with_keywords("battery")


# --- writing -----------------------------------------------------------------------------------
def test_without_vectors_the_requests_are_the_lexical_ones(server, es, documents):
    assert es.rebuild(documents) == len(documents)
    (create,) = server.requests_to("", method="PUT")[:1]
    assert create.body == {"settings": INDEX_SETTINGS, "mappings": INDEX_MAPPINGS}
    (bulk,) = server.requests_to("/_bulk")
    assert bulk.body[1::2] == [document_source(d) for d in documents]
    assert not [name for name in server.indices if name.endswith("-meta")]
    assert es.dense_info() is None and not es.has_vectors and es.term_stats() is None


def test_dense_mapping_and_term_statistics(server, es, documents, store):
    assert es.rebuild(documents, dense=store) == len(documents)
    (concrete,) = server.aliases["answers"]
    created = [r for r in server.requests if r.method == "PUT" and r.path == f"/{concrete}"]
    mappings = created[0].body["mappings"]
    assert mappings["properties"][EMBEDDING_FIELD] == {"type": "dense_vector", "dims": 384, "index": True,
                                                       "similarity": "cosine"}
    assert mappings["properties"][HUB_FIELD] == {"type": "float"}
    assert {k: v for k, v in mappings["properties"].items() if k not in (EMBEDDING_FIELD, HUB_FIELD)} \
        == INDEX_MAPPINGS["properties"]
    assert mappings["dynamic"] == "strict"
    info = es.dense_info()
    assert info["index"] == concrete and info["dims"] == 384 and info["count"] == len(documents)
    assert info["meta_index"] == f"{concrete}-meta" and info["meta_index"] in server.indices
    # the statistics are a document, not cluster-state _meta
    assert "terms" not in json.dumps(mappings["_meta"][META_KEY])
    assert es.term_stats(info) == store.terms and es.has_vectors


def test_bulk_actions_carry_vector_and_hub(server, es, documents, store):
    es.rebuild(documents, dense=store)
    (bulk,) = server.requests_to("/_bulk")
    headers, sources = bulk.body[::2], bulk.body[1::2]
    assert [h["index"]["_id"] for h in headers] == [d.id for d in documents]
    for doc, source in zip(documents, sources):
        row = int(store.rows([doc.id])[0])
        assert np.allclose(source[EMBEDDING_FIELD], store.vectors[row], atol=1e-6)
        assert source[HUB_FIELD] == pytest.approx(float(store.hub[row]), abs=1e-6)
        assert {k: v for k, v in source.items() if k not in (EMBEDDING_FIELD, HUB_FIELD)} == document_source(doc)


def test_a_document_without_vector_fails_and_the_alias_stays(server, es, documents, store, encoder):
    es.rebuild(documents, dense=store)
    (before,) = server.aliases["answers"]
    partial = build_dense_store(ids=[d.id for d in documents[1:]], texts=[d.text for d in documents[1:]],
                                encoder=encoder, progress=False)
    with pytest.raises(InputError, match=f"{documents[0].id!r} has no vector"):
        es.rebuild(documents, dense=partial)
    assert server.aliases["answers"] == {before}
    assert sorted(server.indices) == sorted([before, f"{before}-meta"])


@pytest.mark.parametrize("failing", ["bulk", "update_aliases", "put_doc"])
def test_a_failed_dense_rebuild_leaves_nothing_behind(server, es, documents, store, failing):
    es.rebuild(documents, dense=store)
    (before,) = server.aliases["answers"]
    server.fail = {failing}
    with pytest.raises(DTDialogError):
        es.rebuild(documents, dense=store)
    assert server.aliases["answers"] == {before}
    assert sorted(server.indices) == sorted([before, f"{before}-meta"])


def test_rebuild_drops_the_old_statistics_and_delete_index_the_new(server, es, documents, store):
    es.rebuild(documents, dense=store)
    (first,) = server.aliases["answers"]
    es.rebuild(documents, dense=store)
    (second,) = server.aliases["answers"]
    assert first != second and sorted(server.indices) == sorted([second, f"{second}-meta"])
    es.delete_index()
    assert server.indices == {} and server.aliases == {}


# --- reading -----------------------------------------------------------------------------------
def test_hybrid_search_sends_one_request_with_the_hybrid_body(server, es, documents, store, encoder):
    es.rebuild(documents, dense=store)
    vector = encoder.encode(["the brake pads squeal"])[0]
    query = battery_query(size=2).excluding("nostart#3")
    before = len(server.requests)
    es.hybrid_search(query, vector, k=3)
    (sent,) = server.requests[before:]
    assert sent.path == "/answers/_search" and sent.params == {"include_named_queries_score": "true"}
    assert sent.body == json.loads(json.dumps(hybrid_request(query, vector, k=3)))
    assert sent.body["size"] == 5 and sent.body["query"]["bool"]["_name"] == "lexical"
    assert sent.body["knn"]["boost"] == 10_000.0
    assert sent.body["knn"]["k"] == 3 and sent.body["knn"]["filter"]["bool"]["must_not"] == [
        {"ids": {"values": ["nostart#3"]}}]
    assert EMBEDDING_FIELD in sent.body["_source"]["includes"] and "rr_tokens" not in sent.body["_source"]["includes"]


def test_hybrid_hits_lexical_scores_knn_only_zero_and_exact_cosines(server, es, documents, store, encoder):
    es.rebuild(documents, dense=store)
    vector = encoder.encode(["the brake pads squeal when I stop"])[0]
    hits = es.hybrid_hits(battery_query(size=2), vector, k=2)
    lexical = [d for d in hits if d.lexical]
    dense_only = [d for d in hits if not d.lexical]
    battery_docs = {d.id for d in documents if "battery" in d.keywords}
    assert lexical and {d.id for d in lexical} <= battery_docs
    assert dense_only and "brakes#1" in {d.id for d in dense_only}
    for d in hits:
        row = int(store.rows([d.id])[0])
        assert d.cosine == pytest.approx(cosine(store.vectors[row], vector), abs=1e-5)
        assert d.hub == pytest.approx(float(store.hub[row]), abs=1e-6)
    # the lexical score is the named query's own score, not the server's lexical + kNN sum
    assert all(d.hit.score == 1.0 for d in lexical)
    assert all(d.hit.score == 0.0 and d.hit.matched == {"dense": [f"{d.cosine:.3f}"]} for d in dense_only)
    plain = es.hybrid_search(battery_query(size=2), vector, k=2)
    assert [h.document.id for h in plain] == [d.id for d in hits]
    assert all(float(h.matched["cosine"][0]) == pytest.approx(d.cosine, abs=1e-6) for h, d in zip(plain, hits))


def test_before_8_8_no_named_scores_no_boost_and_the_server_score(documents, store, encoder):
    server = FakeElasticsearch(version="8.7.2")  # matched_queries is a list of names there
    es = ElasticsearchIndex("http://fake-es:9200", index_name="answers", client=server.client())
    assert es.server_version == (8, 7)
    es.rebuild(documents, dense=store)
    vector = encoder.encode(["battery"])[0]
    hits = es.hybrid_hits(battery_query(), vector, k=2)
    sent = server.requests[-1]
    assert sent.params == {} and "boost" not in sent.body["knn"]
    assert sent.body == json.loads(json.dumps(hybrid_request(battery_query(), vector, k=2, knn_boost=None)))
    raw = server.handle("POST", "/answers/_search", json.dumps(sent.body).encode())
    scores = {h["_id"]: h["_score"] for h in raw[1]["hits"]["hits"]}
    assert any(d.lexical for d in hits)
    assert all(d.hit.score == pytest.approx(scores[d.id]) for d in hits if d.lexical)
    assert all(d.hit.score == 0.0 for d in hits if not d.lexical)


def test_the_union_boost_keeps_knn_only_hits_that_strong_lexical_hits_would_push_out(server, es, documents, store,
                                                                                        encoder):
    es.rebuild(documents, dense=store)
    vector = encoder.encode(["brake pads rotor thickness"])[0]
    query = SearchQuery(size=1).with_keywords("battery", "starter", "alternator", "belt", "fuse", "engine")
    knn_top = {i for i, _ in store.search(vector, k=1)}
    boosted = {d.id for d in es.hybrid_hits(query, vector, k=1) if not d.lexical}
    assert knn_top == {"brakes#1"} and boosted == knn_top
    body = hybrid_request(query, vector, k=1, knn_boost=None)
    raw = server.handle("POST", "/answers/_search?include_named_queries_score=true", json.dumps(body).encode())[1]
    assert "brakes#1" not in {h["_id"] for h in raw["hits"]["hits"]}  # without the boost it is cut


def test_rrf_mode_names_the_lexical_retriever(server, es, documents, store, encoder):
    es.rebuild(documents, dense=store)
    vector = encoder.encode(["brake pads"])[0]
    hits = es.hybrid_hits(battery_query(size=2), vector, k=2, mode="rrf")
    sent = server.requests[-1].body
    standard = sent["retriever"]["rrf"]["retrievers"][0]["standard"]
    assert standard["query"]["bool"]["_name"] == "lexical" and "query" not in sent and "knn" not in sent
    assert {d.id for d in hits if d.lexical} <= {d.id for d in documents if "battery" in d.keywords}
    assert any(not d.lexical and d.hit.score == 0.0 for d in hits)


def test_knn_hits_and_fetch_vectors(server, es, documents, store, encoder):
    es.rebuild(documents, dense=store)
    vector = encoder.encode(["replace the fuse"])[0]
    hits = es.knn_hits(vector, k=2, exclude_ids=["overheat#1"])
    assert server.requests[-1].body == json.loads(json.dumps(knn_request(vector, k=2, exclude_ids=["overheat#1"])))
    assert len(hits) == 2 and "overheat#1" not in {d.id for d in hits}
    assert all(d.hit.score == 0.0 and not d.lexical for d in hits)
    before = len(server.requests)
    got = es.fetch_vectors(["brakes#1", "no-such#9", "brakes#1"])
    (mget,) = server.requests[before:]
    assert mget.path == "/answers/_mget" and mget.body == {"ids": ["brakes#1", "no-such#9"]}
    assert mget.params == {"_source_includes": f"{EMBEDDING_FIELD},{HUB_FIELD}"}
    assert set(got) == {"brakes#1"}
    row = int(store.rows(["brakes#1"])[0])
    assert np.allclose(got["brakes#1"][0], store.vectors[row], atol=1e-6)
    assert es.fetch_vectors([]) == {} and len(server.requests) == before + 1


def test_dense_mapping_rejects_bad_dims():
    from parsers.errors import ConfigError

    with pytest.raises(ConfigError):
        dense_index_mappings(dims=0, model="m", meta_index="x-meta", count=0, hub_k=10)


# --- index time ----------------------------------------------------------------------------------
@pytest.fixture()
def fake_url(monkeypatch, server):
    """Make every ``ElasticsearchIndex`` built from a URL talk to ``server``."""
    import index.es_index as es_index

    monkeypatch.setattr(es_index, "_client_class", lambda: (lambda *a, **kw: server.client()))
    return "http://fake-es:9200"


def test_build_index_encodes_in_batches_with_a_bar_and_stores_vectors(server, fake_url, corpus, standin_parser,
                                                                      encoder, capfd):
    from index.builder import build_index

    report = build_index(dialogues=corpus, parser=standin_parser, backend="elasticsearch", out=None, url=fake_url,
                         index_name="answers", dense=True, encoder=encoder, progress=True)
    assert report.indexed == 5 and encoder.calls == 1  # 5 answers: one batch
    assert "encoding answers" in capfd.readouterr().err
    (concrete,) = server.aliases["answers"]
    docs = server.indices[concrete]["docs"]
    assert all(len(src[EMBEDDING_FIELD]) == 384 and math.isfinite(src[HUB_FIELD]) for src in docs.values())
    es = ElasticsearchIndex(fake_url, index_name="answers")
    assert es.term_stats().n == 5


def test_build_index_with_a_missing_model_writes_nothing(server, fake_url, corpus, standin_parser):
    from index.builder import build_index

    class Missing:
        def encode(self, texts, *, progress=False):
            raise ModelNotAvailableError("no model here")

    with pytest.raises(ModelNotAvailableError):
        build_index(dialogues=corpus, parser=standin_parser, backend="elasticsearch", out=None, url=fake_url,
                    dense=True, encoder=Missing(), progress=False)
    assert server.indices == {} and [r.path for r in server.requests] == ["/"]


# --- live server -----------------------------------------------------------------------------------
@pytest.fixture()
def live_index():
    es = ElasticsearchIndex(ES_URL or "", index_name=f"dtdialog-test-{uuid.uuid4().hex[:10]}")
    try:
        yield es
    finally:
        es.delete_index()
        es.close()


@pytest.mark.parametrize("mode", ["union", "rrf"])
@pytest.mark.elasticsearch
@pytest.mark.skipif(not ES_URL, reason="ELASTICSEARCH_URL is not set: no live Elasticsearch server")
def test_live_builtin_corpus_hybrid_search(live_index, mode):
    from data.builtin import load_builtin_corpus
    from dtdialog.setup.assembly import engine_parser_name
    from index.builder import build_index
    from parsers.base import get_parser

    encoder = HashingEncoder()
    report = build_index(dialogues=load_builtin_corpus()[:12], parser=get_parser(engine_parser_name()), backend="elasticsearch",
                         out=None, url=ES_URL, index_name=live_index.index_name, dense=True, encoder=encoder,
                         progress=False)
    assert live_index.count() == report.indexed > 0 and live_index.has_vectors
    assert live_index.term_stats().n == report.indexed
    vector = encoder.encode(["my car will not start and the battery is new"])[0]
    hits = live_index.hybrid_hits(SearchQuery(size=5).with_keywords("battery", "start"), vector, k=5, mode=mode)
    assert hits and len({d.id for d in hits}) == len(hits)
    assert any(d.lexical for d in hits)
    assert all(d.hit.score == 0.0 for d in hits if not d.lexical)
    fetched = live_index.fetch_vectors([d.id for d in hits])
    for d in hits:
        assert d.vector is not None and d.cosine == pytest.approx(cosine(fetched[d.id][0], vector), abs=1e-4)


@pytest.mark.dense
@pytest.mark.elasticsearch
@pytest.mark.skipif(not ES_URL, reason="ELASTICSEARCH_URL is not set: no live Elasticsearch server")
def test_live_minilm_hybrid_search(live_index):
    from index.dense import DenseEncoder, dense_available

    if not dense_available():
        pytest.skip("the [dense] extra (onnxruntime, tokenizers) is not installed")
    from data.builtin import load_builtin_corpus
    from dtdialog.setup.assembly import engine_parser_name
    from index.builder import build_index
    from parsers.base import get_parser

    build_index(dialogues=load_builtin_corpus()[:12], parser=get_parser(engine_parser_name()), backend="elasticsearch", out=None,
                url=ES_URL, index_name=live_index.index_name, dense=True, progress=False)
    vector = DenseEncoder().encode(["The engine overheats in traffic."])[0]
    hits = live_index.hybrid_search(SearchQuery(size=5).with_keywords("engine", "overheat"), vector, k=5)
    assert hits and all("cosine" in h.matched for h in hits)
