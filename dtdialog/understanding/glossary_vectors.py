"""The profile glossary's unit vectors, so the out-of-scope gate's cosine reads the domain's descriptions too.

A real question about something no stored answer covers (the difference between DOHC and SOHC) is far from
every answer in MiniLM space but close to the glossary entry that defines it. The vectors are encoded once per
glossary and encoder, and kept under ``data_home()`` (``glossary-<hash>.npy``), so a restart costs a file read.
"""

from __future__ import annotations

import hashlib
import io
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from parsers.errors import DTDialogError
from parsers.files import atomic_write


class GlossaryVectors:
    """``nearest(unit vector)``: the largest cosine to a glossary entry (0.0 for an empty glossary).

    ``encoder`` has ``encode(texts) -> unit float32 rows`` and a ``model_id`` (another encoder gets other vectors);
    ``cache_dir`` None keeps the vectors in memory only.
    """

    def __init__(self, entries: tuple[str, ...], *, encoder: Any, cache_dir: Path | None = None) -> None:
        self.entries = entries
        self.encoder = encoder
        self.cache_dir = cache_dir
        self._matrix: np.ndarray | None = None
        self._lock = threading.Lock()

    def cache_path(self) -> Path | None:
        if self.cache_dir is None:
            return None
        key = hashlib.sha256("\n".join([str(getattr(self.encoder, "model_id", "")), *self.entries]).encode("utf-8"))
        return self.cache_dir / f"glossary-{key.hexdigest()[:16]}.npy"

    def matrix(self) -> np.ndarray:
        """Return the entries' unit vectors, one row each: read from the cache, else encoded (and cached)."""
        with self._lock:
            if self._matrix is None:
                self._matrix = self._load()
            return self._matrix

    def nearest(self, vector: np.ndarray) -> float:
        if not self.entries:
            return 0.0
        return float(np.max(self.matrix() @ np.asarray(vector, dtype=np.float32)))

    def _load(self) -> np.ndarray:
        path = self.cache_path()
        if path is not None and path.is_file():
            try:
                cached = np.load(path, allow_pickle=False)
                if cached.ndim == 2 and cached.shape[0] == len(self.entries):
                    return cached.astype(np.float32, copy=False)
            except (OSError, ValueError):  # a damaged cache is re-encoded, never trusted
                pass
        matrix = np.asarray(self.encoder.encode(list(self.entries)), dtype=np.float32)
        if path is not None:
            buffer = io.BytesIO()
            np.save(buffer, matrix, allow_pickle=False)
            try:
                atomic_write(path, lambda fh: fh.write(buffer.getvalue()))
            except (OSError, DTDialogError):  # an unwritable home still answers, encoding again next start
                pass
        return matrix


def nearest_domain_cosine(dense: Any, glossary: tuple[str, ...], *,
                          cache_dir: Path | None) -> Callable[..., float]:
    """Return ``(text, exclude_ids=()) -> largest cosine to a stored answer (not in ``exclude_ids``) or to a glossary
    entry``, over ``dense`` (the learned ranker's ``DenseSignals``)."""
    described = GlossaryVectors(glossary, encoder=dense.encoder, cache_dir=cache_dir)

    def nearest(text: str, exclude_ids: tuple[str, ...] = ()) -> float:
        hits = dense.search(text, k=1, exclude_ids=exclude_ids)
        answer = float(hits[0][1]) if hits else 0.0
        return max(answer, described.nearest(dense.query_vector(text))) if glossary else answer

    return nearest
