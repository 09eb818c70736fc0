"""Frozen all-MiniLM-L6-v2 token features for the neural parser, from the int8 ONNX MiniLM (``parsers.encoder``).

Words (spaCy tokens) are cut into WordPiece subwords for the whole text at once; the subword sequence is
encoded in overlapping windows of at most ``WINDOW`` subwords (plus [CLS]/[SEP]), each subword taking its
vector from the window whose centre is nearest (so every word sees neighbouring sentences as context),
and a word's vector is the mean of its subwords'. The vector is hidden layers ``LAYERS`` concatenated:
a middle layer keeps more syntax (segmentation), the last more meaning (relations). The encoder is the
shipped ONNX file dense retrieval uses, run with int8 arithmetic (derived once from it, see
``parsers.encoder.int8_arithmetic_model``), so the parser needs no torch and ships no second model.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

import numpy as np

from parsers.encoder import (
    DIMENSION,
    INSTALL_HINT,
    MAX_SUBWORDS,
    model_label,
    onnx_available,
    shared_encoder,
    vectors_label,
)
from parsers.errors import ModelNotAvailableError

#: Subwords per window, without [CLS]/[SEP].
WINDOW = MAX_SUBWORDS
#: Hidden layers concatenated into a word vector (what ``OnnxMiniLM.subword_states`` returns).
LAYERS = (4, 6)
HIDDEN = DIMENSION
FEATURE_DIM = HIDDEN * len(LAYERS)
__all__ = ["FEATURE_DIM", "INSTALL_HINT", "LAYERS", "WINDOW", "MiniLMWordEncoder", "encoder_available", "encoder_id",
           "runtime_id"]


#: The parser runs MiniLM with int8 arithmetic (``parsers.encoder.int8_arithmetic_model``): about twice as fast
#: as the float arithmetic dense retrieval needs, and the heads are trained on these states.
ARITHMETIC = "int8"
#: int8 arithmetic runs on ONNX Runtime only, so ``$DTDIALOG_ENCODER_RUNTIME`` (dense retrieval's choice) is not read.
RUNTIME = "onnxruntime"


def encoder_available() -> bool:
    """Return True when onnxruntime, tokenizers, onnx (to derive the int8 graph) and the shipped MiniLM are present."""
    return onnx_available() and importlib.util.find_spec("onnx") is not None


def encoder_id() -> str:
    """Return the label of the encoder whose vectors the heads read (the ONNX model's pin and arithmetic)."""
    return model_label(arithmetic=ARITHMETIC)


def runtime_id() -> str:
    """Return what the parser's MiniLM runs: the file's pin, int8 arithmetic, on ONNX Runtime
    (``parsers.encoder.vectors_label``); a saved engine spec records it as ``parser_encoder``."""
    return vectors_label(arithmetic=ARITHMETIC, runtime=RUNTIME)


def window_bounds(n: int, window: int = WINDOW) -> list[tuple[int, int]]:
    """Return ``[start, end)`` windows of at most ``window`` covering ``range(n)``, overlapping by half."""
    if n <= window:
        return [(0, n)]
    stride = window // 2
    starts = list(range(0, n - window, stride)) + [n - window]
    return [(s, s + window) for s in starts]


def nearest_window(n: int, bounds: Sequence[tuple[int, int]]) -> np.ndarray:
    """Return, for each position ``< n``, the index of the window whose centre is nearest."""
    centres = np.array([(a + b - 1) / 2 for a, b in bounds])
    pos = np.arange(n)[:, None]
    inside = (pos >= np.array([a for a, _ in bounds])) & (pos < np.array([b for _, b in bounds]))
    dist = np.where(inside, np.abs(pos - centres), np.inf)
    return dist.argmin(axis=1)


class MiniLMWordEncoder:
    """Word vectors (``FEATURE_DIM`` floats each) from the frozen int8 MiniLM."""

    def __init__(self, encoder=None) -> None:
        if encoder is None:
            if not encoder_available():
                raise ModelNotAvailableError(f"the neural parser needs onnxruntime, tokenizers and the shipped MiniLM: {INSTALL_HINT}")
            encoder = shared_encoder(ARITHMETIC, runtime=RUNTIME)
        self.encoder = encoder

    def encode(self, docs: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Return one ``(len(words), FEATURE_DIM)`` float32 array per document of words (blank words: zeros)."""
        subs = []
        for words in docs:
            clean = [w if w.strip() else "" for w in words]
            subs.append(self.encoder.subwords(clean) if any(clean) else ([], []))
        windows: list[list[int]] = []
        plan = []
        for ids, _ in subs:
            bounds = window_bounds(len(ids)) if ids else []
            plan.append((len(windows), bounds))
            windows.extend(ids[a:b] for a, b in bounds)
        outs = self.encoder.subword_states(windows) if windows else []
        result = []
        for words, (ids, word_of), (first, bounds) in zip(docs, subs, plan):
            vecs = np.zeros((len(words), FEATURE_DIM), dtype=np.float32)
            if ids:
                owner = nearest_window(len(ids), bounds)
                sub = np.stack([outs[first + w][p - bounds[w][0]] for p, w in enumerate(owner)])
                word_of_arr = np.asarray(word_of)
                keep = word_of_arr >= 0
                counts = np.bincount(word_of_arr[keep], minlength=len(words)).astype(np.float32)
                np.add.at(vecs, word_of_arr[keep], sub[keep])
                vecs /= np.maximum(counts, 1.0)[:, None]
            result.append(vecs)
        return result
