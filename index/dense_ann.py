"""An approximate nearest-neighbour (HNSW) index over a dense store's rows, with usearch (the ``[ann]`` extra).

Exact search (one matrix-vector product) costs time linear in the answers (``eval.ann_bench``,
docs/scale.md). Above ``ann_threshold()`` answers, and only when usearch is installed, ``index.dense_store``
saves an HNSW graph beside the vectors and searches it instead; below it, without usearch, or when the file
is missing or does not match the vectors, it searches exactly. The graph stores the vectors as int8
(a quarter of float32), and scores are recomputed exactly from the float32 rows, so only *which* rows
come back is approximate, never their cosines.

The file (``answers.sqlite.dense-<generation>.ann``) carries the generation of the index like the other
side files (``index.index_files``), so an atomic rebuild swaps it with the index; it is opened as a
memory-mapped view, which several server workers share read-only.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from parsers.errors import ConfigError, ModelNotAvailableError
from parsers.files import atomic_write

log = logging.getLogger(__name__)

ANN_HINT = "pip install 'dtdialog[ann]'"
THRESHOLD_ENV = "DTDIALOG_ANN_THRESHOLD"
#: A query's graph search fetches at least this many rows and the last ``RECENT_QUERIES`` queries' rows are kept:
#: a turn searches twice with one query vector (the scope gate for its nearest answer, then the generator for its
#: top k), and the second search is then a slice of the first (``AnnIndex.search``). 8 x 128 int64: 8 KB.
RECALLED_ROWS = 128
RECENT_QUERIES = 8
#: Exact search below this many answers, where it costs little beside the ranker's other work (docs/scale.md).
DEFAULT_THRESHOLD = 50_000
_DTYPES = ("i8", "f16", "f32")


def ann_available() -> bool:
    """Return True when usearch is importable."""
    return importlib.util.find_spec("usearch") is not None


def ann_threshold() -> int:
    """Return the store size from which the ANN index is used (``DTDIALOG_ANN_THRESHOLD``, default 50000)."""
    raw = os.environ.get(THRESHOLD_ENV, str(DEFAULT_THRESHOLD))
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{THRESHOLD_ENV} must be a positive integer, got {raw!r}")
    return int(raw)


@dataclass(frozen=True)
class AnnSettings:
    """HNSW settings: graph degree (``connectivity``), beam widths when adding and searching, stored precision.

    The defaults are the ones ``eval.ann_bench`` chose at 1M vectors: high recall against exact float32 search
    for a few ms per query (docs/scale.md).
    ``oversample``: the graph returns ``oversample * k`` rows, which the store re-scores exactly before keeping
    the top k. The int8 graph ranks with coarse distances (MiniLM's coordinates are small, so int8 keeps few
    levels of each), which misorders rows near the k-th; asking for twice as many and re-scoring them in
    float32 recovers them at little cost.
    """

    connectivity: int = 32
    expansion_add: int = 128
    expansion_search: int = 500
    dtype: str = "i8"
    oversample: int = 2

    def __post_init__(self) -> None:
        for name in ("connectivity", "expansion_add", "expansion_search"):
            if getattr(self, name) < 2:
                raise ConfigError(f"ANN {name} must be at least 2, got {getattr(self, name)}")
        if self.oversample < 1:
            raise ConfigError(f"ANN oversample must be at least 1, got {self.oversample}")
        if self.dtype not in _DTYPES:
            raise ConfigError(f"ANN dtype must be one of {', '.join(_DTYPES)}, got {self.dtype!r}")


class AnnIndex:
    """An HNSW graph over rows ``0..n-1`` of a unit-vector matrix (inner product = cosine)."""

    def __init__(self, raw, settings: AnnSettings) -> None:
        self._raw = raw
        self.settings = settings
        self._recent: OrderedDict[tuple[bytes, int], tuple[int, np.ndarray]] = OrderedDict()  # (count asked, rows)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return int(self._raw.size)

    @property
    def dimension(self) -> int:
        return int(self._raw.ndim)

    @property
    def nbytes(self) -> int:
        """Bytes of the graph and its stored vectors (what ``save`` writes)."""
        return int(self._raw.serialized_length)

    @classmethod
    def build(cls, vectors: np.ndarray, settings: AnnSettings | None = None, *, threads: int = 0,
              progress: bool = False) -> AnnIndex:
        """Return the graph of ``vectors`` (row ``i`` gets key ``i``); ``threads=0`` uses every core."""
        usearch = _usearch()
        settings = settings or AnnSettings()
        raw = usearch.Index(ndim=int(vectors.shape[1]), metric="ip", dtype=settings.dtype,
                            connectivity=settings.connectivity, expansion_add=settings.expansion_add,
                            expansion_search=settings.expansion_search)
        from tqdm import tqdm

        block = 16_384  # keeps the float32 copy of a memory-mapped matrix small, and the bar moving
        with tqdm(total=len(vectors), desc="building the ANN index", unit="vector", file=sys.stderr,
                  disable=not progress, dynamic_ncols=True) as bar:
            for start in range(0, len(vectors), block):
                rows = np.ascontiguousarray(vectors[start:start + block], dtype=np.float32)
                raw.add(np.arange(start, start + len(rows), dtype=np.uint64), rows, threads=threads)
                bar.update(len(rows))
        return cls(raw, settings)

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        """Return the rows of (about) the ``oversample * k`` nearest vectors to ``query`` (one thread), nearest first.

        Callers re-score them exactly and keep the best ``k``. usearch walks the graph with a beam of
        ``max(expansion_search, count)`` and returns the first ``count`` of it, sorted: for any count up to
        ``expansion_search`` the walk is the same, so a smaller count's rows are the first rows of a larger one's.
        A query is therefore searched once for ``RECALLED_ROWS`` rows (when the beam allows) and a repeated
        query is answered from them, the same rows in the same order.
        """
        if k < 1 or not len(self):
            return np.zeros(0, dtype=np.int64)
        want = min(k * self.settings.oversample, len(self))
        query = np.asarray(query, dtype=np.float32)
        beam = int(self._raw.expansion_search)
        fetch = min(max(want, RECALLED_ROWS), beam, len(self))
        if want > fetch:  # beyond the beam the walk itself widens: searched as asked, not kept
            return self._rows(query, want)
        key = (query.tobytes(), beam)
        with self._lock:
            asked, rows = self._recent.get(key, (0, None))
        if rows is None or asked < want:  # new, or kept for a smaller count: search again
            rows = self._rows(query, fetch)
            with self._lock:
                self._recent[key] = (fetch, rows)
                while len(self._recent) > RECENT_QUERIES:
                    self._recent.popitem(last=False)
        return rows[:want].copy()

    def _rows(self, query: np.ndarray, count: int) -> np.ndarray:
        matches = self._raw.search(query, count, threads=1)
        return np.asarray(matches.keys, dtype=np.int64)

    def search_many(self, queries: np.ndarray, k: int, *, threads: int = 0) -> np.ndarray:
        """Return an ``(n, k)`` array of the rows nearest each query (-1 where fewer were found), all threads."""
        k = min(k, len(self))
        matches = self._raw.search(np.ascontiguousarray(queries, dtype=np.float32), k, threads=threads)
        keys = np.asarray(matches.keys).reshape(len(queries), -1)[:, :k].astype(np.int64)
        counts = np.asarray(matches.counts).reshape(-1)
        keys[np.arange(k)[None, :] >= counts[:, None]] = -1
        return keys

    def save(self, path: str | Path) -> Path:
        """Write the graph to ``path`` atomically (temporary name, then rename)."""
        path = Path(path)
        atomic_write(path, lambda f: f.write(self._raw.save()))
        return path

    @classmethod
    def open(cls, path: str | Path, settings: AnnSettings | None = None) -> AnnIndex:
        """Return the graph saved at ``path`` as a read-only memory-mapped view (shared by every process)."""
        usearch = _usearch()
        raw = usearch.Index.restore(str(path), view=True)
        if raw is None:
            raise ValueError(f"{path} is not a usearch index")
        settings = settings or AnnSettings()
        raw.expansion_search = settings.expansion_search
        return cls(raw, settings)


def _usearch():
    if importlib.util.find_spec("onnxruntime") is not None:
        # onnxruntime first loaded after usearch made an index crashes the process (tests/reliability/test_ann_then_encoder.py)
        import onnxruntime  # noqa: F401
    try:
        import usearch.index as usearch
    except ImportError:
        raise ModelNotAvailableError(f"approximate search needs usearch: {ANN_HINT}") from None
    return usearch
