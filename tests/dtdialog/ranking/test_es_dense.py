"""Dense signals and one-request hybrid candidates from an Elasticsearch index with vectors.

Everything runs against ``es_fake.FakeElasticsearch`` (tests/index) through the real client, with a
hashing encoder in place of MiniLM, so the tests need neither a server nor the [dense] extra.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("elasticsearch", reason="the elasticsearch client is not installed")

# the fake server and the stand-in parser are shared with the index tests
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "index"))
from es_fake import FakeElasticsearch, HashingEncoder  # noqa: E402
from index_helpers import StandInParser, small_corpus  # noqa: E402

import dtdialog.ranking.factory as factory  # noqa: E402
from dtdialog.ranking.dense_signals import DenseSignals, dense_query_text  # noqa: E402
from dtdialog.ranking.es_dense import ElasticHybridGenerator, EsDenseStore, es_dense_signals  # noqa: E402
from dtdialog.ranking.hybrid_generator import HybridGenerator  # noqa: E402
from dtdialog.understanding.subtrees import split_question  # noqa: E402
from index.base import SearchQuery  # noqa: E402
from index.dense_store import build_dense_store  # noqa: E402
from index.documents import build_document  # noqa: E402
from index.es_index import ElasticsearchIndex  # noqa: E402
from parsers.errors import ConfigError, InputError, ModelNotAvailableError  # noqa: E402

QUESTION = "My battery is new but the car does not start."


@pytest.fixture()
def world():
    """Return ``(server, index with vectors, the same vectors as a local DenseStore, encoder, documents)``."""
    parser = StandInParser()
    docs = [build_document(doc_id=d.answer_id(pos), dialogue_id=d.id, position=pos, text=t.text,
                           tree=parser.parse(t.text), meta={"question": d.question})
            for d in small_corpus() for pos, t in d.answers()]
    encoder = HashingEncoder()
    store = build_dense_store(ids=[d.id for d in docs], texts=[d.text for d in docs], encoder=encoder,
                              progress=False)
    server = FakeElasticsearch()
    es = ElasticsearchIndex("http://fake-es:9200", index_name="answers", client=server.client())
    es.rebuild(docs, dense=store)
    return server, es, store, encoder, docs


@pytest.fixture()
def plan():
    return split_question(StandInParser().parse(QUESTION), question=QUESTION)


def searches(server, since: int) -> list:
    return [r for r in server.requests[since:] if r.path.endswith("/_search")]


def test_an_index_without_vectors_says_how_to_get_them():
    parser = StandInParser()
    docs = [build_document(doc_id="a#1", dialogue_id="a", position=1, text="Check the fuse.",
                           tree=parser.parse("Check the fuse."), meta={})]
    server = FakeElasticsearch()
    es = ElasticsearchIndex("http://fake-es:9200", index_name="plain", client=server.client())
    es.rebuild(docs)
    with pytest.raises(ModelNotAvailableError, match=r"'plain' stores no dense vectors.*dense=True"):
        EsDenseStore.load(es)


def test_cosines_and_hubness_come_from_one_mget_then_the_cache(world):
    server, es, store, encoder, docs = world
    es_store = EsDenseStore.load(es)
    assert len(es_store) == len(docs) and es_store.terms == store.terms and es_store.dimension == 384
    ids = [d.id for d in docs] + ["no-such#1", docs[0].id]
    query = encoder.encode(["the starter relay clicks"])[0]
    before = len(server.requests)
    cos = es_store.cosines(query, ids)
    (mget,) = server.requests[before:]
    assert mget.path == "/answers/_mget" and mget.body == {"ids": list(dict.fromkeys(ids))}
    np.testing.assert_allclose(cos[:-2], store.cosines(query, ids[:-2]), atol=1e-5)
    assert np.isnan(cos[-2]) and cos[-1] == pytest.approx(cos[0])
    hubs = es_store.hub_of(ids)
    np.testing.assert_allclose(hubs, store.hub_of(ids), atol=1e-5)
    assert hubs[-2] == 0.0
    es_store.cosines(query, ids)
    assert len(server.requests) == before + 1  # cached, unknown id included


def test_a_cache_smaller_than_one_request_still_answers(world):
    server, es, store, encoder, docs = world
    es_store = EsDenseStore.load(es, cache_size=2)
    ids = [d.id for d in docs]
    query = encoder.encode(["belt tension"])[0]
    np.testing.assert_allclose(es_store.cosines(query, ids), store.cosines(query, ids), atol=1e-5)
    with pytest.raises(ConfigError):
        EsDenseStore.load(es, cache_size=0)


def test_knn_search_matches_the_local_store(world):
    server, es, store, encoder, docs = world
    es_store = EsDenseStore.load(es)
    query = encoder.encode(["replace the brake pads"])[0]
    remote = es_store.search(query, k=3, exclude_ids=["brakes#1"])
    local = store.search(query, k=3, exclude_ids=["brakes#1"])
    assert [i for i, _ in remote] == [i for i, _ in local]
    np.testing.assert_allclose([c for _, c in remote], [c for _, c in local], atol=1e-5)
    assert es_store.search(query, k=0) == []


def test_one_request_gives_the_two_request_candidates(world, plan):
    server, es, store, encoder, docs = world
    query = SearchQuery(size=5).with_keywords("fuse", "pads")  # lexically far from the question's vector
    two = HybridGenerator(index=es, dense=DenseSignals(store=store, encoder=encoder), dense_k=2, lexical_k=5)
    one = ElasticHybridGenerator(index=es, dense=es_dense_signals(es, encoder=encoder), dense_k=2, lexical_k=5)
    expected = two.generate(plan=plan, part_index=0, query=query, followups=[], size=5)
    before = len(server.requests)
    got = one.generate(plan=plan, part_index=0, query=query, followups=[], size=5)
    assert len(server.requests) == before + 1 and len(searches(server, before)) == 1
    assert [h.document.id for h in got] == [h.document.id for h in expected]
    assert [h.score for h in got] == pytest.approx([h.score for h in expected])
    lexical = [h for h in got if h.score > 0]
    assert lexical and all("dense" not in h.matched for h in lexical)
    dense_only = got[len(lexical):]
    assert dense_only and all(h.score == 0.0 for h in dense_only)
    assert [h.matched["dense"] for h in dense_only] == [h.matched["dense"] for h in expected[len(lexical):]]


def test_the_scorer_reads_cosines_and_hubness_without_another_request(world, plan):
    server, es, store, encoder, docs = world
    dense = es_dense_signals(es, encoder=encoder)
    gen = ElasticHybridGenerator(index=es, dense=dense, dense_k=3)
    hits = gen.generate(plan=plan, part_index=0, query=SearchQuery(size=2).with_keywords("battery"),
                        followups=["It clicks."], size=2)
    before = len(server.requests)
    ids = [h.document.id for h in hits]
    text = dense_query_text(plan.question, ["It clicks."])
    cos = dense.cosines(text, ids)
    hub = dense.store.hub_of(ids)
    assert len(server.requests) == before
    np.testing.assert_allclose(cos, store.cosines(dense.query_vector(text), ids), atol=1e-5)
    np.testing.assert_allclose(hub, store.hub_of(ids), atol=1e-5)


def test_exclusions_and_a_query_without_words(world, plan):
    server, es, store, encoder, docs = world
    gen = ElasticHybridGenerator(index=es, dense=es_dense_signals(es, encoder=encoder), dense_k=3)
    query = SearchQuery(size=3).with_keywords("battery").excluding("alt#1")
    assert "alt#1" not in {h.document.id for h in gen.generate(plan=plan, part_index=0, query=query, followups=[],
                                                               size=3)}
    before = len(server.requests)
    hits = gen.generate(plan=plan, part_index=0, query=SearchQuery(size=3).excluding("nostart#1"), followups=[],
                        size=3)
    (sent,) = searches(server, before)
    assert "query" not in sent.body and sent.body["knn"]["k"] == 3
    assert len(hits) == 3 and all(h.score == 0.0 and "dense" in h.matched for h in hits)
    assert "nostart#1" not in {h.document.id for h in hits}


def test_rrf_mode_and_bad_options(world, plan):
    server, es, store, encoder, docs = world
    dense = es_dense_signals(es, encoder=encoder)
    gen = ElasticHybridGenerator(index=es, dense=dense, dense_k=2, lexical_k=2, mode="rrf")
    hits = gen.generate(plan=plan, part_index=0, query=SearchQuery(size=2).with_keywords("battery"), followups=[],
                        size=2)
    assert "retriever" in server.requests[-1].body
    ids = [h.document.id for h in hits]
    assert len(ids) == len(set(ids)) and gen.to_dict()["mode"] == "rrf" and gen.to_dict()["answers"] == len(docs)
    for bad in ({"dense_k": 0}, {"lexical_k": -1}, {"mode": "sum"}):
        with pytest.raises(ConfigError):
            ElasticHybridGenerator(index=es, dense=dense, **bad)


def test_an_encoder_of_another_size_is_one_clear_error(world, plan):
    server, es, store, encoder, docs = world
    small = ElasticHybridGenerator(index=es, dense=es_dense_signals(es, encoder=HashingEncoder(dim=16)))
    before = len(server.requests)
    with pytest.raises(InputError, match="16-dimensional vectors but the Elasticsearch index stores 384"):
        small.generate(plan=plan, part_index=0, query=SearchQuery(size=2).with_keywords("battery"), followups=[],
                       size=2)
    assert len(server.requests) == before  # refused before anything was sent


# --- the factory -------------------------------------------------------------------------------------
def _engine(es, ranker: str, parser, **hooks):
    """Return the engine over the open Elasticsearch index ``es`` (no SQLite file: vectors live in the index)."""
    from dtdialog.setup.assembly import EngineSpec, build_engine

    return build_engine(EngineSpec(backend="elasticsearch", ranker=ranker), progress=False, parser=parser, index=es,
                        **hooks)


def test_factory_falls_back_once_for_an_index_without_vectors(monkeypatch, caplog):
    import index.dense

    monkeypatch.setattr(index.dense, "dense_available", lambda: True)
    monkeypatch.setattr(factory, "_warned", False)
    parser = StandInParser()
    docs = [build_document(doc_id="a#1", dialogue_id="a", position=1, text="Check the fuse.",
                           tree=parser.parse("Check the fuse."), meta={})]
    es = ElasticsearchIndex("http://fake-es:9200", index_name="plain", client=FakeElasticsearch().client())
    es.rebuild(docs)
    with caplog.at_level(logging.WARNING, logger="dtdialog.ranking"):
        assert _engine(es, "auto", parser).ranker == "rules"
        assert _engine(es, "auto", parser).ranker == "rules"
    warnings = [r.getMessage() for r in caplog.records if "lexically" in r.getMessage()]
    assert len(warnings) == 1 and "stores no dense vectors" in warnings[0]
    with pytest.raises(ModelNotAvailableError, match="stores no dense vectors"):
        _engine(es, "learned", parser)


def test_factory_ranks_an_index_with_vectors_with_the_learned_model(world, monkeypatch):
    from dtdialog.ranking.learned_scorer import DEFAULT_MODEL, LearnedScorer

    if not DEFAULT_MODEL.is_file():
        pytest.skip("no shipped ranker model (python -m eval.train_ranker)")
    import index.dense

    monkeypatch.setattr(index.dense, "dense_available", lambda: True)  # the hashing encoder stands in for MiniLM
    server, es, store, encoder, docs = world
    engine = _engine(es, "learned", StandInParser(), encoder=encoder)
    generator, scorer, selector = engine.generator, engine.scorer, engine.selector
    assert isinstance(generator, ElasticHybridGenerator) and isinstance(scorer, LearnedScorer)
    assert isinstance(generator.dense.store, EsDenseStore) and scorer.extractor.dense is generator.dense
    before = len(server.requests)
    outcome = selector.rank_outcome(question=QUESTION, size=3)
    assert outcome.candidates
    assert len(searches(server, before)) >= 1
    assert all(c.features["dense"] == c.features["dense"] for c in outcome.candidates)  # no NaN: every vector known
    assert [c.score for c in outcome.candidates] == sorted((c.score for c in outcome.candidates), reverse=True)


def test_sg_phrases_stored_in_the_documents_are_read_in_one_mget_per_step():
    """An index built with SG phrases serves them to the learned ranker: no spaCy parse of a candidate per turn."""
    from index.sg_store import ElasticSGPhrases, build_sg_store

    parser = StandInParser()
    docs = [build_document(doc_id=d.answer_id(pos), dialogue_id=d.id, position=pos, text=t.text,
                           tree=parser.parse(t.text), meta={}) for d in small_corpus() for pos, t in d.answers()]
    encoder = HashingEncoder()
    store = build_dense_store(ids=[d.id for d in docs], texts=[d.text for d in docs], encoder=encoder, progress=False)
    sg = build_sg_store(ids=[d.id for d in docs], texts=[d.text for d in docs], progress=False)
    server = FakeElasticsearch()
    es = ElasticsearchIndex("http://fake-es:9200", index_name="withsg", client=server.client())
    es.rebuild(docs, dense=store, sg=sg)
    assert es.dense_info()["sg"] is True
    phrases = ElasticSGPhrases(index=es)
    before = len(server.requests)
    phrases.prime([d.id for d in docs] + ["no-such#1"])
    assert len(server.requests) - before == 1  # one mget for the whole step
    assert all(phrases.phrases(d.id) == sg.phrases(d.id) for d in docs)
    assert all(phrases.phrase_keys(d.id) == sg.phrase_keys(d.id) for d in docs)  # what the SG feature reads
    assert phrases.phrases("no-such#1") is None and phrases.phrase_keys("no-such#1") is None
    assert len(server.requests) - before == 1  # the rest came from the cache
    plain = ElasticsearchIndex("http://fake-es:9200", index_name="nosg", client=server.client())
    plain.rebuild(docs, dense=store)  # vectors without phrases: the ranker falls back to parsing
    assert plain.dense_info()["sg"] is False and ElasticSGPhrases(index=plain).phrases(docs[0].id) is None


@pytest.mark.dense
def test_the_learned_ranker_reads_sg_phrases_from_elasticsearch(monkeypatch):
    from index.dense import dense_available

    if not dense_available():
        pytest.skip("the [dense] extra is not installed")
    from dtdialog.ranking.learned_scorer import DEFAULT_MODEL
    from dtdialog.selection import syntactic_generalization
    from dtdialog.selection.syntactic_generalization import sg_score, sg_score_phrases
    from index.sg_store import ElasticSGPhrases, build_sg_store

    if not DEFAULT_MODEL.is_file():
        pytest.skip("no shipped ranker model")
    parser = StandInParser()
    docs = [build_document(doc_id=d.answer_id(pos), dialogue_id=d.id, position=pos, text=t.text,
                           tree=parser.parse(t.text), meta={}) for d in small_corpus() for pos, t in d.answers()]
    encoder = HashingEncoder()
    store = build_dense_store(ids=[d.id for d in docs], texts=[d.text for d in docs], encoder=encoder, progress=False)
    sg = build_sg_store(ids=[d.id for d in docs], texts=[d.text for d in docs], progress=False)
    server = FakeElasticsearch()
    es = ElasticsearchIndex("http://fake-es:9200", index_name="ranked", client=server.client())
    es.rebuild(docs, dense=store, sg=sg)
    engine = _engine(es, "learned", parser, encoder=encoder)
    extractor = engine.scorer.extractor
    assert extractor.use_sg and isinstance(extractor.sg_store, ElasticSGPhrases) and extractor.sg_store.index is es
    # The store serves the phrases parsed at index time ...
    assert all(extractor.sg_store.phrases(d.id) == sg.phrases(d.id) for d in docs)
    assert all(sg.phrases(d.id) for d in docs)
    # ... and the ranker's sg feature is scored from them, with the value a parse of the answer gives.
    selector = engine.selector

    def no_answer_parse(query, text):
        raise AssertionError(f"answer parsed per turn: {text[:40]}")

    with monkeypatch.context() as patch:
        patch.setattr(syntactic_generalization, "sg_score", no_answer_parse)
        outcome = selector.rank_outcome(question=QUESTION, size=3)
    assert outcome.candidates
    query = dense_query_text(QUESTION, [])
    for cand in outcome.candidates:
        stored = sg_score_phrases(query, sg.phrases(cand.document.id))
        assert cand.features["sg"] == pytest.approx(stored) == sg_score(query, cand.document.text)
    assert any(cand.features["sg"] > 0 for cand in outcome.candidates)
