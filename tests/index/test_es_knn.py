"""Hybrid Elasticsearch bodies as plain dicts: dense_vector mapping, knn clause, union and RRF requests."""

from __future__ import annotations

import pytest

from index.base import SearchQuery
from index.es_knn import build_hybrid_body, dense_vector_mapping, knn_clause, knn_only_body
from index.es_query import build_search_body
from parsers.errors import ConfigError, InputError

VEC = [0.1, 0.2, 0.3]


def query(**kw) -> SearchQuery:
    q = SearchQuery(size=kw.pop("size", 20)).with_keywords("battery", "alternator")
    return q.with_rr("Contrast", ["replaced", "battery"]).excluding(*kw.pop("exclude", ()))


def test_mapping_fragment():
    m = dense_vector_mapping(dims=384)
    assert m == {"properties": {"embedding": {"type": "dense_vector", "dims": 384, "index": True,
                                              "similarity": "cosine"}}}
    with pytest.raises(ConfigError):
        dense_vector_mapping(dims=0)
    with pytest.raises(ConfigError):
        dense_vector_mapping(similarity="manhattan")


def test_knn_clause_defaults_and_filter():
    c = knn_clause(VEC, k=10)
    assert c == {"field": "embedding", "query_vector": VEC, "k": 10, "num_candidates": 50}
    c = knn_clause(VEC, k=20, exclude_ids=["a#1"], boost=0.5)
    assert c["num_candidates"] == 80 and c["boost"] == 0.5
    assert c["filter"] == {"bool": {"must_not": [{"ids": {"values": ["a#1"]}}]}}
    for bad in ({"k": 0}, {"k": 10, "num_candidates": 5}):
        with pytest.raises(InputError):
            knn_clause(VEC, **bad)
    with pytest.raises(InputError):
        knn_clause([], k=3)
    with pytest.raises(InputError, match="NaN"):
        knn_clause([float("nan")], k=3)


def test_union_body_keeps_the_lexical_query_and_adds_knn():
    q = query(exclude=["x#1"])
    body = build_hybrid_body(q, VEC, k=30)
    lexical = build_search_body(q)
    assert body["query"] == lexical["query"]
    assert body["knn"]["k"] == 30 and body["knn"]["query_vector"] == VEC
    assert body["knn"]["filter"]["bool"]["must_not"][0]["ids"]["values"] == ["x#1"]
    assert body["size"] == 30
    boosted = build_hybrid_body(q, VEC, lexical_boost=0.3, knn_boost=2.0)
    assert boosted["query"]["bool"]["boost"] == 0.3 and boosted["knn"]["boost"] == 2.0
    assert boosted["size"] == 20 and boosted["knn"]["k"] == 20


def test_rrf_body_uses_the_retriever_api():
    q = query()
    body = build_hybrid_body(q, VEC, mode="rrf", rank_constant=10)
    rrf = body["retriever"]["rrf"]
    assert rrf["retrievers"][0] == {"standard": {"query": build_search_body(q)["query"]}}
    assert rrf["retrievers"][1]["knn"]["query_vector"] == VEC
    assert rrf["rank_constant"] == 10 and rrf["rank_window_size"] == body["size"] == 20
    assert "query" not in body and "knn" not in body
    with pytest.raises(InputError):
        build_hybrid_body(q, VEC, mode="rrf", rank_window_size=5)


def test_bad_mode_and_empty_query():
    with pytest.raises(ConfigError):
        build_hybrid_body(query(), VEC, mode="sum")
    with pytest.raises(InputError):
        build_hybrid_body(SearchQuery(), VEC)
    assert knn_only_body(VEC, k=5)["knn"]["k"] == 5
