"""Query-side dense retrieval over a ``DenseStore``: the query is encoded once per turn and shared.

``HybridGenerator`` (dense top-k) and ``LearnedScorer`` (cosine features) of the same turn ask
for the same query text; the small LRU cache makes that one encoder call.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np

from index.dense_store import DenseStore

_QUERY_CACHE = 256


def dense_query_text(question: str, followups: Sequence[str] = ()) -> str:
    """Return the text embedded for a step: the question plus every non-empty follow-up so far."""
    return "\n".join([question, *[f for f in followups if f and f.strip()]])


class DenseSignals:
    """A dense store plus a query encoder (``encode(texts) -> unit float32 rows``), with a query cache."""

    def __init__(self, *, store: DenseStore, encoder) -> None:
        self.store = store
        self.encoder = encoder
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def query_vector(self, text: str) -> np.ndarray:
        """Return the unit embedding of ``text`` (cached)."""
        with self._lock:
            vec = self._cache.get(text)
            if vec is not None:
                self._cache.move_to_end(text)
                return vec
        vec = np.asarray(self.encoder.encode([text]), dtype=np.float32)[0]
        with self._lock:
            self._cache[text] = vec
            while len(self._cache) > _QUERY_CACHE:
                self._cache.popitem(last=False)
        return vec

    def prime(self, texts: Sequence[str]) -> None:
        """Encode many query texts in one batch (evaluation runs), filling the cache."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            vectors = np.asarray(self.encoder.encode(todo), dtype=np.float32)
            with self._lock:
                for text, vec in zip(todo, vectors):
                    self._cache[text] = vec

    def search(self, text: str, *, k: int, exclude_ids: Iterable[str] = ()) -> list[tuple[str, float]]:
        """Return the dense top-``k`` (id, cosine) for ``text``."""
        return self.store.search(self.query_vector(text), k=k, exclude_ids=exclude_ids)

    def cosines(self, text: str, ids: Sequence[str]) -> np.ndarray:
        """Return the cosine of ``text`` with each stored answer of ``ids`` (NaN when not stored)."""
        return self.store.cosines(self.query_vector(text), ids)
