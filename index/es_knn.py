"""Elasticsearch request bodies for hybrid retrieval: a ``dense_vector`` field plus lexical search.

Pure functions that return dicts (unit-tested without a server):

* ``dense_vector_mapping`` - the mapping fragment of the answer-embedding field;
* ``knn_clause`` - approximate kNN over that field, with excluded ids as a filter;
* ``build_hybrid_body`` - one request that unions the lexical top-k and the dense top-k:
  ``mode="union"`` sends ``query`` (the lexical ``bool`` query of ``index.es_query``) and ``knn``
  side by side, which Elasticsearch 8 answers with the union of both top-k lists, scores summed
  (weights via ``lexical_boost`` / ``knn_boost``); ``mode="rrf"`` uses the reciprocal-rank-fusion
  retriever (Elasticsearch >= 8.14), which fuses by rank and needs no score calibration.

For an index that stores vectors (``ElasticsearchIndex.rebuild(..., dense=store)``):

* ``dense_index_mappings`` - the answer mapping plus the ``embedding`` and ``hub`` fields and a
  ``_meta`` pointer to the companion index that holds the BM25 term statistics;
* ``hybrid_request`` - the ``build_hybrid_body`` request ``ElasticsearchIndex.hybrid_search`` sends:
  the lexical ``bool`` named ``lexical`` (with ``include_named_queries_score`` each hit reports the
  lexical part of its score separately from the kNN part), ``size`` = lexical size + k and a large
  kNN boost so the lexical top list and the kNN top list both fit, and ``_source`` naming the vector
  so it comes back even where Elasticsearch >= 9.2 leaves vectors out of ``_source`` by default;
* ``dense_hits_from_response`` - hits with their exact cosine (computed from the returned vector),
  hubness, and lexical score (0 for a hit only the kNN part found).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from index.base import SearchHit, SearchQuery
from index.es_query import INDEX_MAPPINGS, build_search_body, hits_from_response
from parsers.errors import ConfigError, InputError

EMBEDDING_FIELD = "embedding"
HUB_FIELD = "hub"
#: The answers' syntactic-generalization phrases (``index.sg_store`` encoding), stored for the learned ranker.
SG_FIELD = "sg_phrases"
DEFAULT_DIMS = 384
MODES = ("union", "rrf")
#: ``_name`` of the lexical ``bool`` query inside a hybrid request.
LEXICAL_QUERY_NAME = "lexical"
#: kNN boost of a ``union`` hybrid request: lifts every kNN hit above any lexical-only hit (see ``hybrid_request``).
UNION_KNN_BOOST = 10_000.0
#: First server version that reports named-query scores (``include_named_queries_score``).
NAMED_SCORES_VERSION = (8, 8)
#: Key of the dense description in the mapping's ``_meta``.
META_KEY = "dtdialog_dense"
#: ``_id`` of the one document in the companion ``<index>-meta`` index.
META_DOC_ID = "dense"
#: What a hybrid or kNN request asks back: the document fields (not ``rr_tokens``), the vector, the hubness.
SOURCE_FIELDS = [name for name in INDEX_MAPPINGS["properties"] if name != "rr_tokens"] + [EMBEDDING_FIELD, HUB_FIELD]


def dense_vector_mapping(*, dims: int = DEFAULT_DIMS, field: str = EMBEDDING_FIELD,
                         similarity: str = "cosine") -> dict[str, Any]:
    """Return ``{"properties": {field: dense_vector}}`` to merge into the answer index mapping."""
    if dims < 1:
        raise ConfigError(f"dense_vector dims must be positive, got {dims}")
    if similarity not in ("cosine", "dot_product", "l2_norm", "max_inner_product"):
        raise ConfigError(f"unknown dense_vector similarity {similarity!r}")
    return {"properties": {field: {"type": "dense_vector", "dims": dims, "index": True, "similarity": similarity}}}


def _vector(vector: Sequence[float]) -> list[float]:
    values = [float(v) for v in vector]
    if not values:
        raise InputError("the query vector is empty")
    if any(v != v for v in values):
        raise InputError("the query vector contains NaN")
    return values


def knn_clause(vector: Sequence[float], *, k: int, num_candidates: int | None = None, field: str = EMBEDDING_FIELD,
               exclude_ids: Sequence[str] = (), boost: float | None = None) -> dict[str, Any]:
    """Return the ``knn`` object: the ``k`` nearest answers among ``num_candidates`` (default 4k) per shard."""
    if k < 1:
        raise InputError(f"knn k must be at least 1, got {k}")
    candidates = num_candidates if num_candidates is not None else max(4 * k, 50)
    if candidates < k:
        raise InputError(f"num_candidates ({candidates}) must be at least k ({k})")
    clause: dict[str, Any] = {"field": field, "query_vector": _vector(vector), "k": k, "num_candidates": candidates}
    if exclude_ids:
        clause["filter"] = {"bool": {"must_not": [{"ids": {"values": list(exclude_ids)}}]}}
    if boost is not None:
        clause["boost"] = float(boost)
    return clause


def build_hybrid_body(query: SearchQuery, vector: Sequence[float], *, k: int | None = None, mode: str = "union",
                      num_candidates: int | None = None, lexical_boost: float = 1.0, knn_boost: float = 1.0,
                      rank_constant: int = 60, rank_window_size: int | None = None,
                      field: str = EMBEDDING_FIELD) -> dict[str, Any]:
    """Return one search body that unions the lexical top-``query.size`` and the dense top-``k`` (default: size).

    Raises ``InputError`` for an empty query vector or a query with no searchable word (use
    ``knn_only_body`` then) and ``ConfigError`` for an unknown ``mode``.
    """
    if mode not in MODES:
        raise ConfigError(f"unknown hybrid mode {mode!r}; expected one of {', '.join(MODES)}")
    lexical = build_search_body(query)
    k = k or query.size
    knn = knn_clause(vector, k=k, num_candidates=num_candidates, field=field, exclude_ids=query.exclude_ids)
    size = max(query.size, k)
    if mode == "union":
        bool_query = dict(lexical["query"])
        if lexical_boost != 1.0:
            bool_query = {"bool": {**bool_query["bool"], "boost": float(lexical_boost)}}
        if knn_boost != 1.0:
            knn["boost"] = float(knn_boost)
        body = {"size": size, "query": bool_query, "knn": knn}
        if "highlight" in lexical:
            body["highlight"] = lexical["highlight"]
        return body
    window = rank_window_size if rank_window_size is not None else size
    if window < size:
        raise InputError(f"rank_window_size ({window}) must be at least the result size ({size})")
    return {"size": size, "retriever": {"rrf": {
        "retrievers": [{"standard": {"query": lexical["query"]}}, {"knn": knn}],
        "rank_window_size": window, "rank_constant": int(rank_constant)}}}


def knn_only_body(vector: Sequence[float], *, k: int, exclude_ids: Sequence[str] = (), num_candidates: int | None = None,
                  field: str = EMBEDDING_FIELD) -> dict[str, Any]:
    """Return a dense-only body (for a turn whose text has no searchable keyword)."""
    return {"size": k, "knn": knn_clause(vector, k=k, num_candidates=num_candidates, field=field,
                                         exclude_ids=exclude_ids)}


# --- an index that stores vectors ----------------------------------------------------------------
def meta_index_name(concrete: str) -> str:
    """Return the name of the companion index that holds the term statistics of ``concrete``."""
    return f"{concrete}-meta"


def dense_index_mappings(*, dims: int, model: str, meta_index: str, count: int, hub_k: int,
                         field: str = EMBEDDING_FIELD, sg: bool = False) -> dict[str, Any]:
    """Return ``INDEX_MAPPINGS`` plus the cosine ``dense_vector``, the float ``hub`` and the ``_meta`` description.

    ``_meta`` stays small (model, dims, counts, the companion index's name): it lives in the
    cluster state. The term statistics, which grow with the vocabulary, go to ``meta_index``.
    ``sg``: the documents also carry their syntactic-generalization phrases (``SG_FIELD``, one JSON
    string per answer, kept in ``_source`` only: neither indexed nor in doc values).
    """
    vector = dense_vector_mapping(dims=dims, field=field)["properties"]
    properties = {**INDEX_MAPPINGS["properties"], **vector, HUB_FIELD: {"type": "float"}}
    if sg:
        properties[SG_FIELD] = {"type": "keyword", "index": False, "doc_values": False}
    return {**INDEX_MAPPINGS,
            "_meta": {META_KEY: {"model": model, "dims": dims, "field": field, "meta_index": meta_index,
                                 "count": count, "hub_k": hub_k, "sg": sg}},
            "properties": properties}


#: The companion index's mapping: its one document is stored, never indexed.
META_INDEX_MAPPINGS: dict[str, Any] = {"enabled": False}


def hybrid_request(query: SearchQuery, vector: Sequence[float], *, k: int, mode: str = "union",
                   knn_boost: float | None = UNION_KNN_BOOST, field: str = EMBEDDING_FIELD) -> dict[str, Any]:
    """Return the body ``ElasticsearchIndex.hybrid_search`` sends (``build_hybrid_body`` plus naming and fields).

    ``union``: ``size`` is ``query.size + k`` and the kNN part gets ``knn_boost``. Elasticsearch sums
    the two parts' scores and keeps the best ``size``; a kNN score is at most 1, so without the boost
    any lexical hit beyond the lexical top list (BM25 scores of 5-50) would push kNN-only hits out.
    With every kNN hit above every other hit, the first ``query.size + k`` are exactly the kNN top
    ``k`` plus the best lexical hits, a superset of the union. The boost distorts nothing read back:
    the lexical score comes from the named ``lexical`` query and the cosine from the returned vector.
    ``knn_boost=None`` sends no boost (a server that cannot report named-query scores, where
    ``_score`` must stay the lexical score).
    ``rrf``: the fused list of ``max(query.size, k)`` hits (Elasticsearch >= 8.14).
    """
    body = build_hybrid_body(query, vector, k=k, mode=mode, field=field)
    if mode == "union":
        body["query"] = {"bool": {**body["query"]["bool"], "_name": LEXICAL_QUERY_NAME}}
        body["size"] = query.size + k
        if knn_boost is not None:
            body["knn"]["boost"] = float(knn_boost)
    else:
        standard = body["retriever"]["rrf"]["retrievers"][0]["standard"]
        standard["query"] = {"bool": {**standard["query"]["bool"], "_name": LEXICAL_QUERY_NAME}}
    body["_source"] = {"includes": list(SOURCE_FIELDS)}
    return body


def knn_request(vector: Sequence[float], *, k: int, exclude_ids: Sequence[str] = (),
                field: str = EMBEDDING_FIELD) -> dict[str, Any]:
    """Return a kNN-only body that also asks back the vector and hubness (a turn with no searchable word)."""
    body = knn_only_body(vector, k=k, exclude_ids=exclude_ids, field=field)
    body["_source"] = {"includes": list(SOURCE_FIELDS)}
    return body


@dataclass(frozen=True)
class DenseHit:
    """A hit of a hybrid or kNN request: the ``SearchHit`` (lexical score, 0 when only kNN found it) plus
    its cosine to the query vector, its stored vector and its hubness."""

    hit: SearchHit
    cosine: float
    vector: np.ndarray | None
    hub: float
    lexical: bool

    @property
    def id(self) -> str:
        return self.hit.document.id


def unit(vector: Sequence[float]) -> np.ndarray:
    """Return ``vector`` as a float32 array of length 1 (zero vectors stay zero)."""
    arr = np.asarray(vector, dtype=np.float32).ravel()
    norm = float(np.linalg.norm(arr))
    return arr / norm if norm > 0 else arr


def dense_hits_from_response(response: dict[str, Any], query_vector: Sequence[float], *,
                             field: str = EMBEDDING_FIELD) -> list[DenseHit]:
    """Return the hits of a hybrid/kNN response in server order, each with cosine, vector, hub and lexical score.

    A hit is lexical when the ``lexical`` named query matched it. Its score is that query's own
    score when the server reports named-query scores (``matched_queries`` as an object, Elasticsearch
    >= 8.8), else the hit's ``_score``. A hit the lexical query did not match gets score 0 and
    ``matched["dense"] = [cosine]``, as ``HybridGenerator`` marks dense-only hits. The cosine is computed
    here from the returned vector (NaN when the hit carries none).
    """
    q = unit(query_vector)
    raw_hits = response.get("hits", {}).get("hits", [])
    parsed = hits_from_response(response)
    out: list[DenseHit] = []
    for raw, hit in zip(raw_hits, parsed):
        source = raw.get("_source") or {}
        values = source.get(field)
        vector = np.asarray(values, dtype=np.float32) if values is not None else None
        if vector is not None and vector.shape != q.shape:
            raise InputError(f"stored vector of {hit.document.id!r} has {vector.size} dimensions, "
                             f"the query vector {q.size}: rebuild the index with the same encoder")
        cosine = float(unit(vector) @ q) if vector is not None else float("nan")
        named = raw.get("matched_queries") or []
        lexical = LEXICAL_QUERY_NAME in named
        matched = dict(hit.matched)
        if lexical:
            score = float(named[LEXICAL_QUERY_NAME]) if isinstance(named, dict) else hit.score
        else:
            score = 0.0
            matched = {"dense": [f"{cosine:.3f}"]}  # highlights of a hit the lexical query missed mean nothing
        out.append(DenseHit(hit=SearchHit(document=hit.document, score=score, matched=matched), cosine=cosine,
                            vector=vector, hub=float(source.get(HUB_FIELD) or 0.0), lexical=lexical))
    return out
