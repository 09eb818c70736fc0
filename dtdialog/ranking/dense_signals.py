"""Query-side dense retrieval over a ``DenseStore``: the query is encoded once per turn and shared.

``HybridGenerator`` (dense top-k) and ``LearnedScorer`` (cosine features) of the same turn ask
for the same query text; the small LRU cache makes that one encoder call.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from index.dense_store import DenseStore
from parsers.errors import ModelNotAvailableError

_QUERY_CACHE = 256


def query_messages(question: str, followups: Sequence[str] = ()) -> tuple[str, ...]:
    """Return the customer's messages a step is ranked for: the question and every non-empty follow-up so far."""
    return (question, *[f for f in followups if f and f.strip()])


def dense_query_text(question: str, followups: Sequence[str] = ()) -> str:
    """Return the text embedded for a step: its messages (``query_messages``), one a line."""
    return "\n".join(query_messages(question, followups))


class _TorchThreads:
    """Run a block with torch limited to ``n`` intra-op threads (restored after), when torch is loaded.

    One query is a tiny forward pass: on a busy 2-core machine torch's default 2 threads spend more
    time contending than computing.
    torch's setting is process-wide and the API's engine threads encode queries side by side: the first
    block to enter sets it and the last to leave restores it (a per-block save and restore could leave
    it at the limit for good when two blocks interleave). A block entering while another holds a different
    limit runs under that one.
    """

    _lock = threading.Lock()
    _users = 0
    _saved: int | None = None

    def __init__(self, n: int | None) -> None:
        self.n = n
        self.entered = False

    def __enter__(self) -> None:
        import sys

        torch = sys.modules.get("torch")
        if self.n is None or torch is None:
            return
        cls = type(self)
        with cls._lock:
            if cls._users == 0:
                cls._saved = torch.get_num_threads()
                if cls._saved != self.n:
                    torch.set_num_threads(self.n)
            cls._users += 1
            self.entered = True

    def __exit__(self, *exc: object) -> None:
        if not self.entered:
            return
        import sys

        cls = type(self)
        with cls._lock:
            cls._users -= 1
            if cls._users == 0 and cls._saved is not None and cls._saved != sys.modules["torch"].get_num_threads():
                sys.modules["torch"].set_num_threads(cls._saved)


def check_same_encoder(store, encoder) -> None:
    """Refuse a store whose vectors another encoder made: int8 query vectors against fp32 answer vectors
    would rank by a slightly different geometry without any error (a SQLite store is re-encoded before
    it gets here, ``factory._store_for``; an Elasticsearch index is rebuilt by its owner)."""
    from index.dense_store import encoder_id

    made_by, queries_by = str(getattr(store, "model", "") or "all-MiniLM-L6-v2"), encoder_id(encoder)
    if made_by != queries_by:
        raise ModelNotAvailableError(f"the index's answer vectors were made by {made_by}, the query encoder is "
                                     f"{queries_by}: rebuild the index's vectors (dtdialog index build --dense)")


class DenseSignals:
    """A dense store plus a query encoder (``encode(texts) -> unit float32 rows``), with a query cache.

    ``query_threads``: torch threads for encoding one query (default 1, see ``_TorchThreads``; None: leave as is).
    """

    def __init__(self, *, store: DenseStore, encoder, query_threads: int | None = 1) -> None:
        check_same_encoder(store, encoder)
        self.store = store
        self.encoder = encoder
        self.query_threads = query_threads
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._pending: dict[str, Future] = {}
        self._executor: ThreadPoolExecutor | None = None

    def prefetch(self, text: str) -> None:
        """Start encoding ``text`` in a worker thread, so the caller's other work (the lexical search) overlaps it.

        torch releases the GIL in its kernels, so on two cores the query's forward pass and the
        SQLite search run side by side; ``query_vector(text)`` then waits for the result.
        """
        with self._lock:
            if text in self._cache or text in self._pending:
                return
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dense-query")
            future = self._executor.submit(self._encode_and_cache, text)
            self._pending[text] = future
        future.add_done_callback(lambda _: self._forget(text))

    def _forget(self, text: str) -> None:
        with self._lock:
            self._pending.pop(text, None)

    def _encode_and_cache(self, text: str) -> np.ndarray:
        with _TorchThreads(self.query_threads):
            vec = np.asarray(self.encoder.encode([text]), dtype=np.float32)[0]
        with self._lock:
            self._cache[text] = vec
            while len(self._cache) > _QUERY_CACHE:
                self._cache.popitem(last=False)
        return vec

    def query_vector(self, text: str) -> np.ndarray:
        """Return the unit embedding of ``text`` (cached; waits for an encoding of it in progress)."""
        with self._lock:
            vec = self._cache.get(text)
            if vec is not None:
                self._cache.move_to_end(text)
                return vec
            pending = self._pending.get(text)
            if pending is None:
                # announced as in progress, so a ``prefetch`` of the same text from another thread waits for this
                # encoding instead of running its own
                pending = self._pending[text] = Future()
                mine = True
            else:
                mine = False
        if not mine:
            return pending.result()
        try:
            vec = self._encode_and_cache(text)
            pending.set_result(vec)
            return vec
        except BaseException as exc:
            pending.set_exception(exc)
            raise
        finally:
            self._forget(text)

    def prime(self, texts: Sequence[str]) -> None:
        """Encode many query texts in one batch (evaluation runs, a turn's nuclei and satellites), filling the cache.

        It does not trim the cache: the next single encoding does (``_encode_and_cache``), so a batch is kept whole.
        """
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
