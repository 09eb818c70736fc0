"""Dense signals and hybrid candidates from an Elasticsearch index that stores the answers' vectors.

``EsDenseStore`` offers what ``DenseSignals``, ``HybridGenerator`` and ``SignalExtractor`` use of a
``DenseStore`` (``search``, ``cosines``, ``hub_of``, ``terms``, ``len``), served by an
``ElasticsearchIndex`` built with ``dense=True``: kNN through the server, vectors and hubness for
given ids through one ``mget`` of the ids not seen yet (an LRU of id -> (vector, hub), so the scorer's
cosines for the candidates the generator just returned cost no request at all), and the BM25 term
statistics read once from the companion ``-meta`` index.

``ElasticHybridGenerator`` is the one-request version of ``HybridGenerator``: the lexical ``bool``
query and ``knn`` go to the server together (``ElasticsearchIndex.hybrid_hits``), and the union is
cut client-side to the lexical top ``lexical_k`` (by lexical score) plus the dense top ``dense_k`` (by
cosine), kNN-only hits appended with score 0 - the same candidate list ``HybridGenerator`` builds
from two round trips.

The cache assumes the index behind the alias does not change while the engine runs; after a
rebuild, load the runtime again (as with a SQLite store).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np

from dtdialog.ranking.dense_signals import DenseSignals, dense_query_text
from dtdialog.understanding.subtrees import QuestionPlan
from index.base import SearchHit, SearchQuery
from index.es_knn import MODES, DenseHit, unit
from parsers.errors import ConfigError, InputError, ModelNotAvailableError

#: Answers whose (vector, hub) the store keeps between requests.
CACHE_SIZE = 4096


def no_vectors_message(index_name: str) -> str:
    """Return the one-line explanation for an Elasticsearch index built without vectors."""
    return (f"the Elasticsearch index {index_name!r} stores no dense vectors; rebuild it with them "
            "(index.builder.build_index(..., backend='elasticsearch', dense=True))")


class EsDenseStore:
    """The ``DenseStore`` interface over an ``ElasticsearchIndex`` with vectors (see the module docstring).

    ``info``: the index's ``dense_info()``; ``terms``: its ``term_stats()``; ``cache_size``: answers kept.
    """

    def __init__(self, *, index, info: dict, terms=None, cache_size: int = CACHE_SIZE) -> None:
        if cache_size < 1:
            raise ConfigError(f"cache_size must be at least 1, got {cache_size}")
        self.index = index
        self.info = dict(info)
        self.model = str(info.get("model", ""))
        self.terms = terms
        self.cache_size = cache_size
        self._count = int(info.get("count") or 0)
        self._cache: OrderedDict[str, tuple[np.ndarray | None, float]] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def load(cls, index, *, cache_size: int = CACHE_SIZE) -> EsDenseStore:
        """Return the store of ``index``; raises ``ModelNotAvailableError`` when it was built without vectors."""
        info = index.dense_info()
        if info is None:
            raise ModelNotAvailableError(no_vectors_message(index.index_name))
        return cls(index=index, info=info, terms=index.term_stats(info), cache_size=cache_size)

    def __len__(self) -> int:
        return self._count

    @property
    def dimension(self) -> int:
        return int(self.info.get("dims") or 0)

    def check(self, vector: np.ndarray) -> np.ndarray:
        """Return ``vector`` when it has the index's dimension; ``InputError`` (one line) otherwise."""
        dims = self.dimension
        if dims and np.asarray(vector).size != dims:
            raise InputError(f"the query encoder gives {np.asarray(vector).size}-dimensional vectors but the "
                             f"Elasticsearch index stores {dims}: rebuild it with the same encoder")
        return vector

    # --- the id -> (vector, hub) cache ---------------------------------------------------------
    def remember(self, hits: Iterable[DenseHit]) -> None:
        """Keep the vectors and hubness a hybrid or kNN response brought back."""
        with self._lock:
            for d in hits:
                self._put(d.id, (unit(d.vector) if d.vector is not None else None, d.hub))

    def _put(self, doc_id: str, value: tuple[np.ndarray | None, float]) -> None:
        self._cache[doc_id] = value
        self._cache.move_to_end(doc_id)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def lookup(self, ids: Sequence[str]) -> list[tuple[np.ndarray | None, float]]:
        """Return ``(unit vector or None, hub)`` per id, fetching the uncached ones in one ``mget``."""
        with self._lock:
            missing = [i for i in dict.fromkeys(ids) if i not in self._cache]
        fetched = self.index.fetch_vectors(missing) if missing else {}
        with self._lock:
            for doc_id in missing:  # an id the index lacks is remembered as such: no second request
                vector, hub = fetched.get(doc_id, (None, 0.0))
                self._put(doc_id, (unit(vector) if vector is not None else None, hub))
            found = {i: self._cache[i] for i in dict.fromkeys(ids) if i in self._cache}
        # the cache may be smaller than one request: anything evicted meanwhile is served from the fetch
        return [found.get(i) or _unit_pair(fetched.get(i, (None, 0.0))) for i in ids]

    # --- the DenseStore interface --------------------------------------------------------------
    def cosines(self, query: np.ndarray, ids: Sequence[str]) -> np.ndarray:
        """Return the cosine of ``query`` with each of ``ids``; NaN for an id without a stored vector."""
        q = unit(query)
        out = np.full(len(ids), np.nan, dtype=np.float32)
        for i, (vector, _) in enumerate(self.lookup(ids)):
            if vector is not None:
                out[i] = float(vector @ q)
        return out

    def hub_of(self, ids: Sequence[str]) -> np.ndarray:
        """Return the stored hubness of each of ``ids`` (0 for unknown ids)."""
        return np.array([hub for _, hub in self.lookup(ids)], dtype=np.float32)

    def search(self, query: np.ndarray, *, k: int, exclude_ids: Iterable[str] = ()) -> list[tuple[str, float]]:
        """Return the kNN top ``k`` ``(id, cosine)`` from the server, best first."""
        if k < 1:
            return []
        hits = self.index.knn_hits(self.check(query), k=k, exclude_ids=list(exclude_ids))
        self.remember(hits)
        ranked = sorted(hits, key=lambda d: -_finite(d.cosine))
        return [(d.id, d.cosine) for d in ranked]


def es_dense_signals(index, *, encoder, query_threads: int | None = 1,
                     cache_size: int = CACHE_SIZE) -> DenseSignals:
    """Return ``DenseSignals`` (query encoding + cache) over ``EsDenseStore.load(index)``."""
    return DenseSignals(store=EsDenseStore.load(index, cache_size=cache_size), encoder=encoder,
                        query_threads=query_threads)


class ElasticHybridGenerator:
    """``HybridGenerator`` in one Elasticsearch request: lexical top ``lexical_k`` then kNN-only hits, score 0.

    ``dense``: ``DenseSignals`` over an ``EsDenseStore`` of the same index; ``mode``: ``union``
    (``knn`` + ``bool``, scores summed server-side) or ``rrf`` (Elasticsearch >= 8.14).
    """

    def __init__(self, *, index, dense: DenseSignals, dense_k: int | None = None, lexical_k: int | None = None,
                 mode: str = "union") -> None:
        for name, value in (("dense_k", dense_k), ("lexical_k", lexical_k)):
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be at least 1, got {value}")
        if mode not in MODES:
            raise ConfigError(f"unknown hybrid mode {mode!r}; expected one of {', '.join(MODES)}")
        self.index = index
        self.dense = dense
        self.dense_k = dense_k
        self.lexical_k = lexical_k
        self.mode = mode

    def generate(self, *, plan: QuestionPlan, part_index: int, query: SearchQuery, followups: Sequence[str],
                 size: int) -> list[SearchHit]:
        """Return lexical hits (best lexical score first) then dense-only hits (best cosine first)."""
        lexical_k, dense_k = self.lexical_k or size, self.dense_k or size
        vector = self.dense.query_vector(dense_query_text(plan.question, followups))
        store: EsDenseStore = self.dense.store  # es_dense_signals: vectors and hubness live in this index
        store.check(vector)
        if query.is_empty():
            found = self.index.knn_hits(vector, k=dense_k, exclude_ids=list(query.exclude_ids))
        else:
            found = self.index.hybrid_hits(query.with_size(lexical_k), vector, k=dense_k, mode=self.mode)
        store.remember(found)
        # sorted() is stable: equal lexical scores keep the server's order
        lexical = sorted((d for d in found if d.lexical), key=lambda d: -d.hit.score)[:lexical_k]
        hits = [d.hit for d in lexical]
        seen = {d.id for d in lexical}
        for d in sorted(found, key=lambda d: -_finite(d.cosine))[:dense_k]:
            if d.id in seen:
                continue
            seen.add(d.id)
            hits.append(SearchHit(document=d.hit.document, score=0.0, matched={"dense": [f"{d.cosine:.3f}"]}))
        return hits

    def to_dict(self) -> dict:
        return {"kind": "elastic_hybrid", "mode": self.mode, "dense_k": self.dense_k, "lexical_k": self.lexical_k,
                "answers": len(self.dense.store)}


def _finite(value: float) -> float:
    return value if not math.isnan(value) else -math.inf


def _unit_pair(pair: tuple[np.ndarray | None, float]) -> tuple[np.ndarray | None, float]:
    vector, hub = pair
    return (unit(vector) if vector is not None else None, hub)
