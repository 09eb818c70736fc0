"""Answer embeddings stored beside a SQLite index: a memory-mapped float32 matrix plus its id list.

Files, for an index ``answers.sqlite``:

* ``answers.sqlite.dense.npy`` - ``(n, dim)`` float32, L2-normalised rows (``np.load(mmap_mode="r")``);
* ``answers.sqlite.dense.ids.json`` - ``{"ids": [...], "model": ..., "dim": ..., "hub": [...], "terms": {...}}``;
* ``answers.sqlite.dense.ann`` - only for stores of ``index.dense_ann.ann_threshold()`` answers or more with
  usearch installed: an HNSW graph over the rows, which ``search`` uses instead of the exact product.

``terms`` holds the answers' document frequencies and mean length (``TermStats``) so the ranker
can score the *whole* question with BM25, next to the engine's per-part keyword query.

``hub`` is each answer's *hubness*: the mean cosine to its ``HUB_K`` nearest other answers.
Generic answers ("check the fuses, then the wiring...") sit close to everything and win too many
dense rankings; subtracting part of the hubness (CSLS, Lample et al. 2018) is one learned-ranker
feature. It needs only the stored answers, so nothing about the queries is fitted.

The files are written to temporary names and renamed, ids file last, so a reader never sees a
half-written store; ``DenseStore.load`` checks that the two agree. Their names carry the generation of the
index they were made from (``index.index_files``): a reader loads the files of the index it opened, so a
rebuilt index and the old vectors are never read together.

The ids file also keeps each answer's text digest and the index ``generation`` the store was built
from: when answers are added or replaced later, ``refresh_dense_store`` re-encodes only the answers
whose text changed and recomputes the hubness and term statistics, instead of encoding everything.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import sys
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from index.index_files import has_side_store, index_generation, load_side_store, side_path
from index.vocabulary import bm25_tokens
from parsers.errors import InputError
from parsers.files import atomic_write

log = logging.getLogger(__name__)

HUB_K = 10
#: Exact searches keep the scores of this many recent query vectors (``DenseStore._all_scores``).
RECENT_QUERIES = 2
_BLOCK = 1024
#: Answers per encoder call of a build.
ENCODE_BATCH = 256


class _OneBlasThread:
    """Run a block with OpenBLAS (numpy's BLAS) on one thread, restored when the last such block leaves.

    A query's product with the answer matrix is little work, but OpenBLAS hands half of it to a worker
    thread that then busy-waits for the next call, taking the other core from the query's own parse and from
    other processes (docs/scale.md). The per-row dot products
    are the same with one thread (checked bit for bit), so the scores do not change. The limit is
    process-wide and the API's engine threads search side by side: the first block to enter sets it and the
    last to leave restores it (as ``dtdialog.ranking.dense_signals._TorchThreads`` does for torch).
    Without threadpoolctl (the ``dense`` extra) it does nothing.
    """

    _lock = threading.Lock()
    _users = 0
    _limiter = None
    _controller = None

    def __enter__(self) -> None:
        cls = type(self)
        with cls._lock:
            if cls._users == 0:
                if cls._controller is None:
                    try:
                        from threadpoolctl import ThreadpoolController
                    except ImportError:
                        cls._controller = False
                    else:  # built once: finding the loaded BLAS libraries is too slow to repeat per search
                        cls._controller = ThreadpoolController()
                if cls._controller:
                    cls._limiter = cls._controller.limit(limits=1, user_api="blas")
            cls._users += 1

    def __exit__(self, *exc: object) -> None:
        cls = type(self)
        with cls._lock:
            cls._users -= 1
            if cls._users == 0 and cls._limiter is not None:
                cls._limiter.restore_original_limits()
                cls._limiter = None


@dataclass(frozen=True)
class TermStats:
    """Document frequencies of the stored answers' tokens, their count and mean length (for BM25)."""

    n: int
    avg_len: float
    df: dict[str, int]

    @classmethod
    def of(cls, texts: Sequence[str]) -> TermStats:
        """Return the statistics of ``texts``."""
        df: Counter[str] = Counter()
        total = 0
        for text in texts:
            tokens = bm25_tokens(text)
            total += len(tokens)
            df.update(set(tokens))
        return cls(n=len(texts), avg_len=total / len(texts) if texts else 0.0, df=dict(df))

    def bm25(self, query: str, texts: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> np.ndarray:
        """Return the Okapi BM25 score of ``query`` against each of ``texts`` with these statistics."""
        q_terms = Counter(bm25_tokens(query))
        idf = {t: math.log(1 + (self.n - self.df.get(t, 0) + 0.5) / (self.df.get(t, 0) + 0.5)) for t in q_terms}
        out = np.zeros(len(texts))
        for i, text in enumerate(texts):
            tokens = bm25_tokens(text)
            tf = Counter(tokens)
            norm = k1 * (1 - b + b * len(tokens) / self.avg_len) if self.avg_len else k1
            out[i] = sum(qf * idf[t] * tf[t] * (k1 + 1) / (tf[t] + norm) for t, qf in q_terms.items() if t in tf)
        return out

    def to_dict(self) -> dict:
        return {"n": self.n, "avg_len": self.avg_len, "df": self.df}

    @classmethod
    def from_dict(cls, data: dict) -> TermStats:
        return cls(n=int(data["n"]), avg_len=float(data["avg_len"]), df={str(k): int(v) for k, v in data["df"].items()})


def text_digest(text: str) -> str:
    """Return a short digest of an answer text (tells a replaced answer from an unchanged one)."""
    return hashlib.sha1(text.encode("utf-8", errors="replace")).hexdigest()[:12]


def dense_paths(index_path: str | Path, generation: str | None = None) -> tuple[Path, Path]:
    """Return ``(matrix path, ids path)`` of the dense store of ``generation`` of the index at ``index_path``.

    ``generation`` defaults to the one stamped in the index file now ("" - no index, or one never written -
    gives the unversioned names).
    """
    if generation is None:
        generation = index_generation(index_path)
    return side_path(index_path, "dense", ".npy", generation), side_path(index_path, "dense", ".ids.json", generation)


def ann_path(index_path: str | Path, generation: str | None = None) -> Path:
    """Return the path of the ANN graph of ``generation`` (default: the index's current one) beside the index."""
    if generation is None:
        generation = index_generation(index_path)
    return side_path(index_path, "dense", ".ann", generation)


def hubness(vectors: np.ndarray, *, k: int = HUB_K, ann=None) -> np.ndarray:
    """Return, per row, the mean cosine to its ``k`` nearest other rows (0 when there are no others).

    Works in blocks of rows so a 100k-answer store never builds the full n x n matrix. That is still
    quadratic (hours at 1M), so with an ANN graph (``index.dense_ann.AnnIndex``) each row's neighbours come
    from the graph instead, their cosines computed exactly: the same feature up to the graph's recall.
    """
    n = len(vectors)
    out = np.zeros(n, dtype=np.float32)
    k = min(k, n - 1)
    if k < 1:
        return out
    for start in range(0, n, _BLOCK):
        rows = np.asarray(vectors[start:start + _BLOCK], dtype=np.float32)
        if ann is not None:
            out[start:start + len(rows)] = _graph_hubness(vectors, rows, start, k, ann)
            continue
        block = rows @ np.asarray(vectors, dtype=np.float32).T
        idx = np.arange(block.shape[0])
        block[idx, idx + start] = -np.inf  # never one's own neighbour
        top = np.partition(block, -k, axis=1)[:, -k:]
        out[start:start + block.shape[0]] = top.mean(axis=1)
    return out


def _graph_hubness(vectors: np.ndarray, rows: np.ndarray, start: int, k: int, ann) -> np.ndarray:
    """Return the hubness of ``rows`` (rows ``start..`` of ``vectors``) from their graph neighbours."""
    keys = ann.search_many(rows, (k + 1) * ann.settings.oversample)
    own = np.arange(start, start + len(rows))[:, None]
    valid = (keys >= 0) & (keys != own)
    cos = np.einsum("ij,ikj->ik", rows, np.asarray(vectors[np.maximum(keys, 0).ravel()]).reshape(*keys.shape, -1))
    cos = np.where(valid, cos, -np.inf)
    top = -np.sort(-cos, axis=1)[:, :k]
    finite = np.isfinite(top)
    return np.where(finite, top, 0.0).sum(axis=1) / np.maximum(finite.sum(axis=1), 1)


class DenseStore:
    """Unit-length answer vectors with their ids; ``cosines`` and ``search`` are plain dot products."""

    def __init__(self, *, ids: Sequence[str], vectors: np.ndarray, hub: np.ndarray | None = None,
                 model: str = "all-MiniLM-L6-v2", terms: TermStats | None = None,
                 digests: Sequence[str] | None = None, generation: str = "") -> None:
        if vectors.ndim != 2 or len(ids) != vectors.shape[0]:
            raise InputError(f"dense store: {len(ids)} ids for a matrix of shape {vectors.shape}")
        if len(set(ids)) != len(ids):
            raise InputError("dense store: duplicate answer ids")
        if digests is not None and len(digests) != len(ids):
            raise InputError(f"dense store: {len(digests)} text digests for {len(ids)} ids")
        #: per-answer text digests (None for a store saved before they were kept) and the index generation
        self.digests = list(digests) if digests is not None else None
        self.generation = generation
        self.ids = list(ids)
        self.vectors = vectors
        self.model = model
        self.terms = terms
        self._row = {doc_id: i for i, doc_id in enumerate(self.ids)}
        #: the HNSW graph ``search`` uses (``index.dense_ann``); None: exact search
        self.ann = None
        self._recent: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        if hub is None:
            self.attach_ann()  # a store large enough to need the graph gets it now: hubness uses it too
        self.hub = np.asarray(hub, dtype=np.float32) if hub is not None else hubness(vectors, ann=self.ann)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def dimension(self) -> int:
        return int(self.vectors.shape[1])

    def rows(self, ids: Sequence[str]) -> np.ndarray:
        """Return the row numbers of ``ids`` (-1 for an id the store does not hold)."""
        return np.array([self._row.get(doc_id, -1) for doc_id in ids], dtype=np.int64)

    def cosines(self, query: np.ndarray, ids: Sequence[str]) -> np.ndarray:
        """Return the cosine of ``query`` (unit vector) with each of ``ids``; NaN for unknown ids."""
        rows = self.rows(ids)
        out = np.full(len(ids), np.nan, dtype=np.float32)
        known = rows >= 0
        if known.any():
            with _OneBlasThread():
                out[known] = np.asarray(self.vectors[rows[known]]) @ query
        return out

    def hub_of(self, ids: Sequence[str]) -> np.ndarray:
        """Return the hubness of each of ``ids`` (0 for unknown ids)."""
        rows = self.rows(ids)
        return np.where(rows >= 0, self.hub[np.maximum(rows, 0)], 0.0).astype(np.float32)

    def search(self, query: np.ndarray, *, k: int, exclude_ids: Iterable[str] = ()) -> list[tuple[str, float]]:
        """Return the ``k`` ids with the highest cosine to ``query``, best first (ties by store order).

        With an ANN graph attached (``self.ann``) the candidates are the graph's approximate nearest rows,
        re-scored exactly; without one, every row is scored.
        """
        if k < 1 or not self.ids:
            return []
        query = np.asarray(query, dtype=np.float32)
        excluded = [self._row[i] for i in exclude_ids if i in self._row]
        if self.ann is not None:
            rows = self.ann.search(query, k + len(excluded))
            rows = np.sort(rows[(rows >= 0) & (rows < len(self.ids))])  # store order: ties break as in exact search
            if excluded:
                rows = rows[~np.isin(rows, excluded)]
            with _OneBlasThread():
                scores = np.asarray(self.vectors[rows]) @ query
            return self._best(rows, scores, k)
        scores = self._all_scores(query)
        if excluded:
            scores = scores.copy()
            scores[excluded] = -np.inf
        return self._best(np.arange(len(self.ids)), scores, k)

    def _all_scores(self, query: np.ndarray) -> np.ndarray:
        """Return the cosine of ``query`` with every row (read-only), kept for the last ``RECENT_QUERIES`` queries: a
        turn searches twice with one query vector (the scope gate for its nearest answer, the generator for its
        top k), and the second search reuses the product (at most 2 x 4 bytes per answer)."""
        key = query.tobytes()
        with self._lock:
            scores = self._recent.get(key)
        if scores is None:
            with _OneBlasThread():
                scores = np.asarray(self.vectors) @ query
            scores.flags.writeable = False
            with self._lock:
                self._recent[key] = scores
                while len(self._recent) > RECENT_QUERIES:
                    self._recent.popitem(last=False)
        return scores

    def _best(self, rows: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Return the ``k`` best ``(id, score)`` of ``rows`` (in store order) by ``scores``, best first."""
        want = min(k, len(rows))
        if want < 1:
            return []
        top = np.argpartition(-scores, want - 1)[:want] if want < len(rows) else np.arange(len(rows))
        top = top[np.lexsort((top, -scores[top]))]
        return [(self.ids[rows[i]], float(scores[i])) for i in top if np.isfinite(scores[i])]

    def attach_ann(self, *, threads: int = 0, progress: bool = False) -> bool:
        """Build the ANN graph when the store is large enough and usearch is installed; return whether it did."""
        from index.dense_ann import AnnIndex, ann_available, ann_threshold

        if self.ann is not None or len(self) < ann_threshold() or not ann_available():
            return self.ann is not None
        self.ann = AnnIndex.build(self.vectors, threads=threads, progress=progress)
        return True

    # --- persistence --------------------------------------------------------
    def save(self, index_path: str | Path) -> tuple[Path, Path]:
        """Write the store beside ``index_path`` atomically, named by its ``generation``; return the two paths.

        A store of ``ann_threshold()`` answers or more also gets its ANN graph (built here when it has none),
        written before the ids file, which comes last and makes the store visible.
        """
        matrix_path, ids_path = dense_paths(index_path, self.generation)
        matrix_path.parent.mkdir(parents=True, exist_ok=True)
        meta = {"ids": self.ids, "model": self.model, "dim": self.dimension,
                "hub": [round(float(h), 6) for h in self.hub], "hub_k": HUB_K,
                "terms": self.terms.to_dict() if self.terms is not None else None,
                "digests": self.digests, "generation": self.generation}
        atomic_write(matrix_path, lambda f: np.save(f, np.ascontiguousarray(self.vectors, dtype=np.float32)))
        if self.attach_ann():
            self.ann.save(ann_path(index_path, self.generation))
        atomic_write(ids_path, lambda f: f.write(json.dumps(meta).encode("utf-8")))
        return matrix_path, ids_path

    @classmethod
    def exists(cls, index_path: str | Path, *, generation: str | None = None) -> bool:
        """Return True when the store of the index's ``generation`` (default: its current one) is beside it."""
        return has_side_store(index_path, "dense", ".ids.json", generation=generation,
                              load=lambda g: cls.load(index_path, generation=g))

    @classmethod
    def load(cls, index_path: str | Path, *, generation: str | None = None, latest: bool = False) -> DenseStore:
        """Return the store of ``generation`` (default: the index file's current one) beside ``index_path``, memory-mapped.

        A store written before files were named by generation is returned only when it records that
        generation. ``latest=True`` falls back to the newest store of any generation: what a refresh starts from.
        Raises ``ModelNotAvailableError`` when there is none, ``InputError`` when it is corrupt.
        """
        return load_side_store(index_path, "dense", ".ids.json", generation=generation, latest=latest,
                               read=lambda g: cls._read(index_path, *dense_paths(index_path, g)),
                               generation_of=lambda store: store.generation,
                               missing=f"no dense vectors beside {index_path}; rebuild the index with --dense")

    @classmethod
    def _read(cls, index_path: str | Path, matrix_path: Path, ids_path: Path) -> DenseStore:
        try:
            meta = json.loads(ids_path.read_text(encoding="utf-8"))
            vectors = np.load(matrix_path, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise InputError(f"corrupt dense store beside {index_path}: {exc}") from None
        if not isinstance(meta, dict) or vectors.dtype != np.float32 or vectors.ndim != 2 \
                or len(meta.get("ids", ())) != vectors.shape[0]:
            raise InputError(f"corrupt dense store beside {index_path}: ids and matrix disagree; rebuild it")
        hub = np.asarray(meta["hub"], dtype=np.float32) if len(meta.get("hub", ())) == vectors.shape[0] else None
        terms = TermStats.from_dict(meta["terms"]) if meta.get("terms") else None
        digests = meta.get("digests")
        if digests is not None and len(digests) != vectors.shape[0]:
            digests = None  # unusable: a refresh re-encodes everything
        store = cls(ids=meta["ids"], vectors=vectors, hub=hub, model=str(meta.get("model", "")), terms=terms,
                    digests=digests, generation=str(meta.get("generation") or ""))
        store.ann = _open_ann(Path(str(matrix_path)[:-len(".npy")] + ".ann"), store)
        return store


def _open_ann(path: Path, store: DenseStore):
    """Return the ANN graph at ``path`` when the store should use it and it matches the vectors, else None.

    The graph only speeds search up: a missing library, a missing file or one that does not match the
    matrix (a damaged or foreign file) means exact search, with a warning for the last two.
    """
    from index.dense_ann import AnnIndex, ann_available, ann_threshold

    if len(store) < ann_threshold() or not ann_available():
        return None
    if not path.is_file():
        log.warning("no ANN index %s for %d answers: searching exactly (rebuild the index to make it)", path, len(store))
        return None
    try:
        ann = AnnIndex.open(path)
    except (OSError, ValueError, RuntimeError) as exc:
        log.warning("ignoring the ANN index %s: %s; searching exactly", path, exc)
        return None
    if len(ann) != len(store) or ann.dimension != store.dimension:
        log.warning("ignoring the ANN index %s: %d vectors of %d dimensions for a store of %d x %d; searching exactly",
                    path, len(ann), ann.dimension, len(store), store.dimension)
        return None
    return ann


def build_dense_store(*, ids: Sequence[str], texts: Sequence[str], encoder=None, batch_size: int = ENCODE_BATCH,
                      progress: bool = True) -> DenseStore:
    """Encode ``texts`` in batches (tqdm bar on stderr) and return the store; ``encoder`` defaults to MiniLM.

    ``encoder`` is anything with ``encode(texts, *, progress=False) -> float32 unit rows``.
    """
    from tqdm import tqdm

    if len(ids) != len(texts):
        raise InputError(f"{len(ids)} ids for {len(texts)} texts")
    if encoder is None:
        from index.dense import DenseEncoder

        encoder = DenseEncoder()
    parts: list[np.ndarray] = []
    with tqdm(total=len(texts), desc="encoding answers", unit="answer", file=sys.stderr, disable=not progress,
              dynamic_ncols=True) as bar:
        for start in range(0, len(texts), batch_size):
            chunk = list(texts[start:start + batch_size])
            parts.append(np.asarray(encoder.encode(chunk), dtype=np.float32))
            bar.update(len(chunk))
    dim = parts[0].shape[1] if parts else 384
    vectors = np.vstack(parts) if parts else np.zeros((0, dim), dtype=np.float32)
    return DenseStore(ids=ids, vectors=vectors, model=encoder_id(encoder), terms=TermStats.of(texts),
                      digests=[text_digest(t) for t in texts])


class BackgroundEncoding:
    """Encode answers in one worker thread as they arrive, while the caller goes on (the builder: parsing).

    The encoder's ONNX session releases the GIL, so the parse keeps one core and the encoding the rest.
    Texts are cut into the batches ``build_dense_store`` makes of the same texts in the same order: the int8
    model quantizes each batch as a whole, so other batches could give other vectors. ``store()`` waits for the
    last batch and returns the store ``build_dense_store`` would have; ``close()`` drops what is not started.
    """

    def __init__(self, encoder, *, total: int = 0, progress: bool = True, batch_size: int = ENCODE_BATCH) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.encoder = encoder
        self.batch_size = batch_size
        self._ids: list[str] = []
        self._texts: list[str] = []
        self._start = 0  # first text not submitted yet
        self._batches: list = []
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dtdialog-encode")
        self._total, self._progress = total, progress
        self._bar = None  # shown from the first answer on: the encoding stage starts with the parse's output

    def add(self, doc_id: str, text: str) -> None:
        """Queue one answer; a full batch goes to the worker at once."""
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=self._total or None, desc="encoding answers", unit="answer", file=sys.stderr,
                             disable=not self._progress, dynamic_ncols=True)
        self._ids.append(doc_id)
        self._texts.append(text)
        if len(self._texts) - self._start >= self.batch_size:
            self._submit()

    def _submit(self) -> None:
        chunk = self._texts[self._start:self._start + self.batch_size]
        self._start += len(chunk)
        self._batches.append(self._pool.submit(self._encode, chunk))

    def _encode(self, chunk: list[str]) -> np.ndarray:
        vectors = np.asarray(self.encoder.encode(chunk), dtype=np.float32)
        self._bar.update(len(chunk))
        return vectors

    def store(self) -> DenseStore:
        """Return the store of every answer added (raises what the encoder raised)."""
        while self._start < len(self._texts):
            self._submit()
        parts = [batch.result() for batch in self._batches]
        self.close()
        dim = parts[0].shape[1] if parts else 384
        vectors = np.vstack(parts) if parts else np.zeros((0, dim), dtype=np.float32)
        return DenseStore(ids=self._ids, vectors=vectors, model=encoder_id(self.encoder),
                          terms=TermStats.of(self._texts), digests=[text_digest(t) for t in self._texts])

    def close(self) -> None:
        """Stop: batches not started are dropped (a running one ends on its own, its result unused)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._bar is not None:
            self._bar.close()


def encoder_id(encoder) -> str:
    """Return the id of the vectors ``encoder`` makes (an encoder without ``model_id``: the fp32 MiniLM's)."""
    return str(getattr(encoder, "model_id", None) or "all-MiniLM-L6-v2")


#: Largest element difference between stored vectors and the same texts encoded again that still counts as one
#: encoder: a runtime gives its own vectors back exactly, ONNX Runtime fp32 and OpenVINO bf16 differ by ~1e-3.
SAME_VECTORS_TOLERANCE = 1e-5
#: Answers re-encoded to learn which runtime made a store labelled before ids named it.
PROBE_ANSWERS = 8


def unsettled_label(store: DenseStore, encoder) -> bool:
    """Return True when ``store`` was labelled before ids named the runtime, with ``encoder``'s model file: the
    vectors may be this encoder's or another runtime's (``adopt_unsettled``)."""
    made_by = encoder_id(encoder)
    return "/" not in store.model and "/" in made_by and made_by.split("/", 1)[0] == store.model


def adopt_unsettled(store: DenseStore, *, ids: Sequence[str], texts: Sequence[str], encoder) -> DenseStore:
    """Return ``store`` under ``encoder``'s id when its label is unsettled and a few of its unchanged answers
    encoded again give its vectors back (``SAME_VECTORS_TOLERANCE``), else ``store`` as it is."""
    if not unsettled_label(store, encoder) or store.digests is None:
        return store
    row_of = {doc_id: (row, digest) for row, (doc_id, digest) in enumerate(zip(store.ids, store.digests))}
    probe = [(row_of[doc_id][0], text) for doc_id, text in zip(ids, texts)
             if doc_id in row_of and row_of[doc_id][1] == text_digest(text)][:PROBE_ANSWERS]
    if not probe:
        return store
    again = np.asarray(encoder.encode([text for _, text in probe]), dtype=np.float32)
    stored = np.asarray(store.vectors[[row for row, _ in probe]], dtype=np.float32)
    if again.shape != stored.shape or float(np.abs(again - stored).max()) > SAME_VECTORS_TOLERANCE:
        return store
    return DenseStore(ids=store.ids, vectors=store.vectors, hub=store.hub, model=encoder_id(encoder),
                      terms=store.terms, digests=store.digests, generation=store.generation)


def refresh_dense_store(store: DenseStore, *, ids: Sequence[str], texts: Sequence[str], encoder=None,
                        progress: bool = True) -> tuple[DenseStore, int]:
    """Return ``(store for ids/texts, number of answers encoded)``, reusing ``store``'s unchanged vectors.

    An answer keeps its old vector when its id and text digest are unchanged; new and edited answers
    are encoded; answers no longer in ``ids`` are dropped. Hubness and term statistics depend on all
    answers, so they are recomputed (cheap next to encoding). A store without digests, or made by another
    encoder than ``encoder`` (its ``model`` id differs), is rebuilt whole: vectors of two encoders never mix. A
    store labelled before ids named the runtime keeps its vectors when they prove to be ``encoder``'s
    (``adopt_unsettled``).
    """
    if len(ids) != len(texts):
        raise InputError(f"{len(ids)} ids for {len(texts)} texts")
    if encoder is None:
        from index.dense import DenseEncoder

        encoder = DenseEncoder()
    store = adopt_unsettled(store, ids=ids, texts=texts, encoder=encoder)
    if store.digests is None or store.model != encoder_id(encoder):
        return build_dense_store(ids=ids, texts=texts, encoder=encoder, progress=progress), len(ids)
    old = {doc_id: (row, digest) for row, (doc_id, digest) in enumerate(zip(store.ids, store.digests))}
    digests = [text_digest(t) for t in texts]
    todo = [i for i, (doc_id, digest) in enumerate(zip(ids, digests)) if old.get(doc_id, (-1, None))[1] != digest]
    fresh = build_dense_store(ids=[ids[i] for i in todo], texts=[texts[i] for i in todo], encoder=encoder,
                              progress=progress) if todo else None
    vectors = np.zeros((len(ids), store.dimension), dtype=np.float32)
    position = {i: j for j, i in enumerate(todo)}
    for i, doc_id in enumerate(ids):
        vectors[i] = fresh.vectors[position[i]] if i in position else store.vectors[old[doc_id][0]]
    refreshed = DenseStore(ids=ids, vectors=vectors, model=store.model, terms=TermStats.of(texts), digests=digests)
    return refreshed, len(todo)


def build_for_index(index_path: str | Path, *, encoder=None, progress: bool = True,
                    beside: str | Path | None = None, previous: DenseStore | None = None) -> DenseStore:
    """Encode every answer of the SQLite index at ``index_path`` and save the store beside it (or beside ``beside``).

    The hook ``index.builder.build_index(..., dense=True)`` calls on the finished temporary index, with
    ``beside`` the path it is about to be renamed to: the files carry its generation, so no reader of the
    index still in place looks at them. ``previous``: a store made by the same encoder whose unchanged
    answers keep their vectors (``refresh_dense_store``).
    """
    from index.sqlite_index import SqliteIndex

    with SqliteIndex(Path(index_path)) as index:
        ids, texts = index.answer_texts()
        generation = index.generation()
    if previous is None:
        store = build_dense_store(ids=ids, texts=texts, encoder=encoder, progress=progress)
    else:
        store, _ = refresh_dense_store(previous, ids=ids, texts=texts, encoder=encoder, progress=progress)
    store.generation = generation
    store.save(beside if beside is not None else index_path)
    return store
