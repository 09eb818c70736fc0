"""Elasticsearch request bodies for hybrid retrieval: a ``dense_vector`` field plus lexical search.

Pure functions that return dicts (unit-tested without a server):

* ``dense_vector_mapping`` - the mapping fragment of the answer-embedding field;
* ``knn_clause`` - approximate kNN over that field, with excluded ids as a filter;
* ``build_hybrid_body`` - one request that unions the lexical top-k and the dense top-k:
  ``mode="union"`` sends ``query`` (the lexical ``bool`` query of ``index.es_query``) and ``knn``
  side by side, which Elasticsearch 8 answers with the union of both top-k lists, scores summed
  (weights via ``lexical_boost`` / ``knn_boost``); ``mode="rrf"`` uses the reciprocal-rank-fusion
  retriever (Elasticsearch >= 8.14), which fuses by rank and needs no score calibration.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from index.base import SearchQuery
from index.es_query import build_search_body
from parsers.errors import ConfigError, InputError

EMBEDDING_FIELD = "embedding"
DEFAULT_DIMS = 384
MODES = ("union", "rrf")


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
