"""How much would another sentence encoder give on mechanics? ``python -m eval.encoder_probe --model DIR``.

The learned ranker's ceiling with MiniLM signals is ~0.78 P@1 (``docs/ranking.md``). This probe
answers "what does a stronger encoder buy" without touching the engine:

1. the mechanics questions (``dense_query_text``) and the pool answers are encoded with the
   sentence-transformers model in ``--model`` (a local directory; nothing is downloaded), once,
   cached in ``--cache`` as ``<pool>-<model dir name>.probe.npz``;
2. full-pool P@1 of its plain cosine and of its CSLS-corrected cosine (in-pool hubness), each with
   a 95% bootstrap CI and a paired bootstrap against plain MiniLM;
3. 5-fold CV (the folds of ``eval.train_ranker``) of ``hybrid`` and ``hybrid+dt`` with and without
   the probe encoder's list-normalised cosine features (``alt``, ``alt_gap``, ``alt_z``, ``alt_rr``
   and the same four of ``alt_csls``), on the candidates ``eval.train_ranker`` recorded.

No model is written. The extra features are not in ``FEATURE_SETS``: this is a measurement, not
a shipped ranker.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from parsers.errors import DTDialogError, InputError

ALT = "alt"


def full_pool_ranks(queries: np.ndarray, answers: np.ndarray, gold_rows: np.ndarray, *,
                    hub: np.ndarray | None = None, csls_weight: float = 0.5) -> np.ndarray:
    """Return the 0-based gold rank per query over the whole pool (ties count against the gold answer).

    ``queries`` (q, d) and ``answers`` (n, d) are unit rows; with ``hub`` the score is
    ``cosine - csls_weight * hub`` (CSLS).
    """
    sims = queries @ answers.T
    if hub is not None:
        sims = sims - csls_weight * np.asarray(hub)[None, :]
    gold = sims[np.arange(len(gold_rows)), gold_rows]
    return (sims >= gold[:, None]).sum(axis=1) - 1


def cosine_features(prefix: str, values: Sequence[float]) -> dict[str, np.ndarray]:
    """Return ``prefix``, ``_gap`` (minus the list best), ``_z`` (list z-score) and ``_rr`` (1/(1+rank)) of one list."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return {prefix + s: v for s in ("", "_gap", "_z", "_rr")}
    rr = np.zeros(v.size)
    rr[np.argsort(-v, kind="stable")] = 1.0 / (1.0 + np.arange(v.size))
    return {prefix: v, prefix + "_gap": v - v.max(), prefix + "_z": (v - v.mean()) / (v.std() + 1e-6),
            prefix + "_rr": rr}


def feature_names(prefix: str = ALT) -> list[str]:
    """Return the probe feature names added to a feature set."""
    return [p + s for p in (prefix, prefix + "_csls") for s in ("", "_gap", "_z", "_rr")]


def encode_pool(*, model: Path, questions: Sequence[str], answers: Sequence[str], cache_file: Path,
                progress: bool) -> tuple[np.ndarray, np.ndarray]:
    """Return (question vectors, answer vectors) from ``model``, encoded once and cached in ``cache_file``."""
    if cache_file.is_file():
        data = np.load(cache_file)
        if len(data["q"]) == len(questions) and len(data["a"]) == len(answers):
            return data["q"], data["a"]
    from index.dense import TorchEncoder

    encoder = TorchEncoder(model_path=model, batch_size=16)  # another sentence-transformers folder ([train] extra)
    q = encoder.encode(list(questions), progress=progress)
    a = encoder.encode(list(answers), progress=progress)
    tmp = cache_file.with_name(cache_file.name + ".tmp.npz")
    np.savez(tmp, q=q, a=a)
    tmp.replace(cache_file)
    return q, a


def run(args: argparse.Namespace) -> dict:
    """Run the probe; return {row name: summary} and print the table."""
    from dtdialog.ranking.dense_signals import dense_query_text
    from dtdialog.ranking.features import FEATURE_SETS
    from eval.datasets import default_data_dir, load_mechanics
    from eval.methods.hybrid import pool_digest
    from eval.ranker_rows import build_pool_index
    from eval.train_ranker import collect, cross_validate, paired_difference, summarize
    from index.dense_store import DenseStore, hubness

    model = Path(args.model)
    if not (model / "modules.json").is_file() and not (model / "config.json").is_file():
        raise InputError(f"--model {model} is not a sentence-transformers model directory")
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    cache = Path(args.cache)
    eval_set = load_mechanics(data_dir)
    queries = collect(data_dir=data_dir, cache=cache, k=args.k, limit=None, progress=not args.no_progress)
    store = DenseStore.load(build_pool_index(eval_set, cache=cache, progress=False))
    pool = eval_set.pool_by_id()
    cache_file = cache / f"{eval_set.name}-{pool_digest(eval_set.pool)}-{model.name}.probe.npz"
    qv, av = encode_pool(model=model, questions=[dense_query_text(d.question) for d in eval_set.dialogues],
                         answers=[pool[i].text for i in store.ids], cache_file=cache_file,
                         progress=not args.no_progress)
    hub = hubness(av)
    gold_rows = store.rows([d.answer_ids[0] for d in eval_set.dialogues])
    from index.dense import DenseEncoder

    base_q = DenseEncoder().encode([dense_query_text(d.question) for d in eval_set.dialogues])
    minilm = full_pool_ranks(base_q, np.asarray(store.vectors), gold_rows)
    ranks = {"dense MiniLM (full pool)": minilm,
             f"{model.name} (full pool)": full_pool_ranks(qv, av, gold_rows),
             f"{model.name} csls (full pool)": full_pool_ranks(qv, av, gold_rows, hub=hub)}
    for i, q in enumerate(queries):
        if not q.rows:
            continue
        rows = store.rows(q.ids)
        cos = av[rows] @ qv[i]
        feats = {**cosine_features(ALT, cos), **cosine_features(ALT + "_csls", cos - 0.5 * hub[rows])}
        for j, row in enumerate(q.rows):
            row.update({name: float(v[j]) for name, v in feats.items()})
    for name, names in FEATURE_SETS.items():
        ranks[name] = cross_validate(queries, names, kind="lr", folds=args.folds, seed=args.seed)
        ranks[f"{name} + {model.name}"] = cross_validate(queries, [*names, *feature_names()], kind="lr",
                                                        folds=args.folds, seed=args.seed)
    out = {}
    for name, r in ranks.items():
        s, d = summarize(r), paired_difference(r, minilm)
        out[name] = {**s, "vs_dense": d}
        print(f"{name:<40} P@1 {s['p1']:.3f} [{s['p1_lo']:.3f}, {s['p1_hi']:.3f}]  "
              f"vs dense {d['diff']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}]")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from eval.train_ranker import DEFAULT_CACHE, DEFAULT_K

    parser = argparse.ArgumentParser(prog="python -m eval.encoder_probe", description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="a local sentence-transformers model directory")
    parser.add_argument("--data-dir", help="shared data directory (default: ../shared/data or $DTDIALOG_SHARED_DATA)")
    parser.add_argument("--cache", default=str(DEFAULT_CACHE), help="eval.train_ranker's cache (index, features)")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("-k", type=int, default=DEFAULT_K)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    try:
        run(args)
    except DTDialogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
