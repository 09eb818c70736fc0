"""The neural parser's heads in numpy: EDU segmenter, top-down split scorer, relation+nuclearity labeller.

Inference is plain numpy over the frozen MiniLM word vectors (``parsers.neural.encoder``), so the heads
need no torch and run unchanged beside the ONNX encoder. ``parsers.neural.training`` trains torch modules with
the same parameter names and shapes and exports them here; a test checks both compute the same numbers.

Architecture (all sizes in ``NeuralModel.config``):

* **Segmenter**: each word vector with its surface and syntax flags (``word_flags``) is projected
  (``seg_proj``, tanh) and run through a bidirectional GRU over the text (``seg_rnn``); a word's input
  is the GRU states of the words two to the left and right of it plus its flags; one ReLU layer
  (``seg_hidden``) gives the logit that the word begins an EDU.
* **EDU vectors**: mean, first and last word vectors of an EDU, projected with tanh (``edu_proj``), with
  the states of a bidirectional GRU over the text's EDUs appended (``edu_rnn``: document context).
* **Split scorer** (top-down, sentence first): a span ``[i, j]`` of EDUs is split at ``k`` scored by
  an MLP (``split_hidden``/``split_out``) over ``pair_inputs``: the means of the EDU vectors left and
  right of the split, their product, the EDU vectors at both ends and either side of it, shape features. A span
  covering several sentences may only split at a sentence boundary.
* **Labeller**: an MLP (``label_hidden``/``label_out``) over the same inputs of the chosen split, over
  joint ``Relation|NS`` classes.
* **Cues** (format 2): the heads named in ``cue_heads`` also read one-hot explicit connectives at the EDUs
  bounding the two spans (``parsers.neural.cues``; the cue words are stored with the weights).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from parsers.errors import ModelNotAvailableError
from parsers.files import atomic_write
from parsers.neural.cues import pair_cues
from parsers.nlp_base import Token
from parsers.tree import Node
from parsers.tree_builder import Merge, assemble

WEIGHTS_FILE = "heads.npz"
MANIFEST_FILE = "manifest.json"
#: Bumped when the weights layout or the inputs change; ``from_disk`` refuses versions outside ``READABLE_FORMATS``.
FORMAT_VERSION = 2
#: Format 1 models have no cue inputs; they load as models with empty ``cue_words``.
READABLE_FORMATS = (1, 2)
#: Tree heads that may read cue inputs.
CUE_HEADS = ("split", "label")
UPOS = ("ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN", "PUNCT",
        "SCONJ", "SYM", "VERB", "X")
#: en_core_web_sm's dependency labels (a label outside the list sets no bit).
DEPS = ("ROOT", "acl", "acomp", "advcl", "advmod", "agent", "amod", "appos", "attr", "aux", "auxpass", "case", "cc",
        "ccomp", "compound", "conj", "csubj", "csubjpass", "dative", "dep", "det", "dobj", "expl", "intj", "mark",
        "meta", "neg", "nmod", "npadvmod", "nsubj", "nsubjpass", "nummod", "oprd", "parataxis", "pcomp", "pobj",
        "poss", "preconj", "predet", "prep", "prt", "punct", "quantmod", "relcl", "xcomp")
_UPOS = {p: k for k, p in enumerate(UPOS)}
_DEPS = {d: k for k, d in enumerate(DEPS)}
N_SURFACE = 6
N_WORD_FLAGS = N_SURFACE + len(UPOS) + len(DEPS)
N_SHAPE = 10
SEG_CONTEXT = 2
#: The segmenter's GRU runs over chunks of whole sentences of at most this many words (a longer sentence is
#: a chunk of its own): training batches the chunks, and MiniLM's windows already carry the wider context.
SEG_CHUNK = 128

Split = tuple[int, int, int]  # (first EDU, last EDU of the left part, last EDU)


def word_flags(tokens: Sequence[Token]) -> np.ndarray:
    """Return the surface and syntax flags of each word: starts a spaCy sentence, is punctuation, follows
    punctuation, is blank (a line break), follows a line break, its head lies to its right; then one-hot
    universal POS and dependency label (spaCy's parse carries the clause structure EDUs follow)."""
    n = len(tokens)
    out = np.zeros((n, N_WORD_FLAGS), dtype=np.float32)
    for i, t in enumerate(tokens):
        prev = tokens[i - 1] if i else None
        out[i, 0] = float(i == 0 or (prev is not None and prev.sent != t.sent))
        out[i, 1] = float(t.is_punct)
        out[i, 2] = float(prev is not None and prev.is_punct)
        out[i, 3] = float(t.text.isspace())
        out[i, 4] = float(prev is not None and ("\n" in prev.text or "\n" in prev.whitespace))
        out[i, 5] = float(t.head > t.i)
        if t.pos in _UPOS:
            out[i, N_SURFACE + _UPOS[t.pos]] = 1.0
        if t.dep in _DEPS:
            out[i, N_SURFACE + len(UPOS) + _DEPS[t.dep]] = 1.0
    return out


def sentence_chunks(tokens: Sequence[Token], limit: int = SEG_CHUNK) -> list[tuple[int, int]]:
    """Return ``[start, end)`` word ranges of consecutive whole sentences, at most ``limit`` words each
    unless one sentence alone is longer."""
    sentences: list[list[int]] = []
    for i, t in enumerate(tokens):
        if not sentences or tokens[i - 1].sent != t.sent:
            sentences.append([i, i + 1])
        else:
            sentences[-1][1] = i + 1
    chunks: list[list[int]] = []
    for a, b in sentences:
        if chunks and b - chunks[-1][0] <= limit:
            chunks[-1][1] = b
        else:
            chunks.append([a, b])
    return [(a, b) for a, b in chunks]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def gru(x: np.ndarray, P: dict[str, np.ndarray], name: str) -> np.ndarray:
    """Return the outputs of a one-layer bidirectional ``torch.nn.GRU`` named ``name`` over rows ``x``
    (forward and backward states concatenated), computed as torch does (gates r, z, n)."""
    outs = []
    for suffix, reverse in (("", False), ("_reverse", True)):
        Wih, Whh = P[f"{name}.weight_ih_l0{suffix}"], P[f"{name}.weight_hh_l0{suffix}"]
        bih, bhh = P[f"{name}.bias_ih_l0{suffix}"], P[f"{name}.bias_hh_l0{suffix}"]
        H = Whh.shape[1]
        gi = x @ Wih.T + bih
        h = np.zeros(H, dtype=np.float32)
        out = np.empty((len(x), H), dtype=np.float32)
        for t in (range(len(x) - 1, -1, -1) if reverse else range(len(x))):
            gh = Whh @ h + bhh
            r = _sigmoid(gi[t, :H] + gh[:H])
            z = _sigmoid(gi[t, H: 2 * H] + gh[H: 2 * H])
            cand = np.tanh(gi[t, 2 * H:] + r * gh[2 * H:])
            h = (1.0 - z) * cand + z * h
            out[t] = h
        outs.append(out)
    return np.concatenate(outs, axis=1)


def shift_stack(p: np.ndarray, context: int = SEG_CONTEXT) -> np.ndarray:
    """Return ``[p[i-c], ..., p[i+c]]`` concatenated per row (zeros beyond the ends)."""
    n, d = p.shape
    padded = np.zeros((n + 2 * context, d), dtype=p.dtype)
    padded[context: context + n] = p
    return np.concatenate([padded[o: o + n] for o in range(2 * context + 1)], axis=1)


def edu_raw(words: np.ndarray, bounds: Sequence[tuple[int, int]]) -> np.ndarray:
    """Return ``[mean, first, last]`` word vectors of each EDU ``[start, end)``."""
    out = np.empty((len(bounds), 3 * words.shape[1]), dtype=np.float32)
    d = words.shape[1]
    for r, (a, b) in enumerate(bounds):
        out[r, :d] = words[a:b].mean(axis=0)
        out[r, d: 2 * d] = words[a]
        out[r, 2 * d:] = words[b - 1]
    return out


def shape_features(i: np.ndarray, k: np.ndarray, j: np.ndarray, sent: np.ndarray, n: int) -> np.ndarray:
    """Return the shape features of splits ``(i, k, j)`` (arrays) given each EDU's sentence group ``sent``."""
    left = (k - i + 1).astype(np.float32)
    right = (j - k).astype(np.float32)
    return np.stack([
        (sent[k] != sent[np.minimum(k + 1, n - 1)]).astype(np.float32),
        (sent[i] != sent[j]).astype(np.float32),
        np.log(left), np.log(right), left / (left + right), np.log(left + right),
        (i == 0).astype(np.float32), (j == n - 1).astype(np.float32),
        np.log1p(sent[k] - sent[i]).astype(np.float32), np.log1p(sent[j] - sent[np.minimum(k + 1, n - 1)]).astype(np.float32),
    ], axis=1)


def pair_inputs(H: np.ndarray, csum: np.ndarray, i: np.ndarray, k: np.ndarray, j: np.ndarray,
                shape: np.ndarray) -> np.ndarray:
    """Return the split/label inputs ``[L, R, L*R, H[i], H[k], H[k+1], H[j], shape]`` (``L``/``R``: mean EDU
    vectors left/right of the split; ``csum``: prefix sums of ``H``)."""
    L = (csum[k + 1] - csum[i]) / (k - i + 1)[:, None]
    R = (csum[j + 1] - csum[k + 1]) / (j - k)[:, None]
    return np.concatenate([L, R, L * R, H[i], H[k], H[k + 1], H[j], shape], axis=1).astype(np.float32)


def split_candidates(i: int, j: int, sent: np.ndarray) -> np.ndarray:
    """Return the allowed split points ``k`` of span ``[i, j]``: sentence boundaries when it crosses one."""
    ks = np.arange(i, j)
    if sent[i] != sent[j]:
        ks = ks[sent[ks] != sent[ks + 1]]
    return ks


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


@dataclass
class NeuralModel:
    """The trained heads (numpy arrays by name), their label set and settings, and the manifest."""

    params: dict[str, np.ndarray]
    labels: list[str]
    seg_threshold: float = 0.5
    manifest: dict[str, Any] = field(default_factory=dict)
    #: The connectives the cue inputs are one-hot over (empty: the heads read no cues).
    cue_words: list[str] = field(default_factory=list)
    #: The heads (of ``CUE_HEADS``) that read the cue inputs.
    cue_heads: tuple[str, ...] = ()

    # --- segmentation -------------------------------------------------------
    def seg_probs(self, words: np.ndarray, flags: np.ndarray,
                  chunks: Sequence[tuple[int, int]] | None = None) -> np.ndarray:
        """Return the probability that each word begins an EDU (``chunks``: ``sentence_chunks``; default one)."""
        P = self.params
        proj = np.tanh(np.concatenate([words, flags], axis=1) @ P["seg_proj.weight"].T + P["seg_proj.bias"])
        states = np.concatenate([gru(proj[a:b], P, "seg_rnn") for a, b in (chunks or [(0, len(words))])])
        x = np.concatenate([shift_stack(states), flags], axis=1)
        h = _relu(x @ P["seg_hidden.weight"].T + P["seg_hidden.bias"])
        logit = h @ P["seg_out.weight"].T + P["seg_out.bias"]
        return 1.0 / (1.0 + np.exp(-logit[:, 0]))

    # --- trees --------------------------------------------------------------
    def edu_vectors(self, raw: np.ndarray) -> np.ndarray:
        """Return the EDU vectors of ``edu_raw`` rows."""
        P = self.params
        local = np.tanh(raw @ P["edu_proj.weight"].T + P["edu_proj.bias"]).astype(np.float32)
        return np.concatenate([local, gru(local, P, "edu_rnn")], axis=1)

    def _mlp(self, name: str, x: np.ndarray) -> np.ndarray:
        P = self.params
        h = _relu(x @ P[f"{name}_hidden.weight"].T + P[f"{name}_hidden.bias"])
        return h @ P[f"{name}_out.weight"].T + P[f"{name}_out.bias"]

    def _inputs(self, head: str, H: np.ndarray, csum: np.ndarray, i: np.ndarray, k: np.ndarray, j: np.ndarray,
                sent: np.ndarray, cues: np.ndarray | None) -> np.ndarray:
        x = pair_inputs(H, csum, i, k, j, shape_features(i, k, j, sent, len(H)))
        if head not in self.cue_heads:
            return x
        if cues is None:
            raise ValueError(f"the {head} head reads cue inputs: pass the EDUs' cues (parsers.neural.cues.edu_cues)")
        return np.concatenate([x, pair_cues(cues, i, k, j)], axis=1)

    def splits(self, H: np.ndarray, sent: np.ndarray, cues: np.ndarray | None = None) -> list[Split]:
        """Return the top-down greedy splits of EDUs ``0..n-1`` (parents before children); ``cues``: the EDUs'
        ``edu_cues`` rows, needed when a head reads cues."""
        n = len(H)
        csum = np.vstack([np.zeros((1, H.shape[1]), dtype=H.dtype), np.cumsum(H, axis=0)])
        out: list[Split] = []
        stack = [(0, n - 1)]
        while stack:
            i, j = stack.pop()
            if j <= i:
                continue
            ks = split_candidates(i, j, sent)
            if len(ks) > 1:
                Is = np.full(len(ks), i)
                Js = np.full(len(ks), j)
                x = self._inputs("split", H, csum, Is, ks, Js, sent, cues)
                k = int(ks[int(self._mlp("split", x)[:, 0].argmax())])
            else:
                k = int(ks[0])
            out.append((i, k, j))
            stack.extend([(k + 1, j), (i, k)])
        return out

    def label(self, H: np.ndarray, sent: np.ndarray, splits: Sequence[Split],
              cues: np.ndarray | None = None) -> list[tuple[str, str]]:
        """Return (relation, nuclearity) of each split."""
        if not splits:
            return []
        csum = np.vstack([np.zeros((1, H.shape[1]), dtype=H.dtype), np.cumsum(H, axis=0)])
        Is, Ks, Js = (np.array(c) for c in zip(*splits))
        x = self._inputs("label", H, csum, Is, Ks, Js, sent, cues)
        best = self._mlp("label", x).argmax(axis=1)
        return [tuple(self.labels[int(c)].split("|")) for c in best]  # type: ignore[misc]

    def build(self, raw: np.ndarray, sent: np.ndarray, cues: np.ndarray | None = None) -> Node:
        """Return the root of the tree over EDUs with ``edu_raw`` rows ``raw``, sentence groups ``sent`` and
        ``edu_cues`` rows ``cues``."""
        H = self.edu_vectors(raw)
        splits = self.splits(H, sent, cues)
        labels = self.label(H, sent, splits, cues)
        merges = [Merge(left=(i, k), right=(k + 1, j), level="") for i, k, j in reversed(splits)]
        return assemble(len(H), merges, list(reversed(labels)))

    # --- persistence --------------------------------------------------------
    def to_disk(self, path: Path | str, *, manifest: dict[str, Any] | None = None) -> None:
        """Write ``heads.npz`` (float32 weights, labels, threshold) and ``manifest.json`` into ``path``.

        Each file is written atomically, weights first, so a reader never sees a manifest without its weights.
        """
        out = Path(path)
        if manifest is not None:
            self.manifest = manifest
        arrays = {k: np.asarray(v, dtype=np.float32) for k, v in self.params.items()}
        meta = json.dumps({"format": FORMAT_VERSION, "labels": self.labels, "seg_threshold": self.seg_threshold,
                           "cue_words": self.cue_words, "cue_heads": list(self.cue_heads)})
        atomic_write(out / WEIGHTS_FILE, lambda fh: np.savez_compressed(fh, __meta__=np.array(meta), **arrays))
        atomic_write(out / MANIFEST_FILE,
                     lambda fh: fh.write((json.dumps(self.manifest, indent=2, sort_keys=True) + "\n").encode()))

    @classmethod
    def from_disk(cls, path: Path | str) -> NeuralModel:
        """Return the model in folder ``path``; raises ``ModelNotAvailableError`` when absent or unreadable."""
        folder = Path(path)
        weights = folder / WEIGHTS_FILE
        if not weights.is_file():
            raise ModelNotAvailableError(f"no neural parser model at {folder}; train one with "
                                         f"python -m parsers.train --parser neural --gum ../shared/data/gum_rst --out {folder}")
        try:
            with np.load(weights, allow_pickle=False) as data:
                meta = json.loads(str(data["__meta__"]))
                params = {k: data[k] for k in data.files if k != "__meta__"}
            if meta.get("format") not in READABLE_FORMATS:
                raise ValueError(f"weights format {meta.get('format')!r}, this code reads {READABLE_FORMATS}")
            cue_heads = tuple(meta.get("cue_heads", ()))
            if not set(cue_heads) <= set(CUE_HEADS) or bool(cue_heads) != bool(meta.get("cue_words")):
                raise ValueError(f"cue heads {cue_heads!r} need cue words and must be among {CUE_HEADS}")
            manifest = {}
            if (folder / MANIFEST_FILE).is_file():
                manifest = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
        except Exception as exc:  # numpy/zipfile/json raise many types on damaged files
            raise ModelNotAvailableError(f"cannot load neural parser model {weights}: {exc}") from None
        return cls(params=params, labels=list(meta["labels"]), seg_threshold=float(meta["seg_threshold"]),
                   manifest=manifest, cue_words=list(meta.get("cue_words", [])), cue_heads=cue_heads)
