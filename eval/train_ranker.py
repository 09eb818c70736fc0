"""Train and cross-validate the learned ranker on mechanics_qa_dev: ``python -m eval.train_ranker``.

1. The 497 accepted answers are indexed like the engine indexes a corpus (rules parser, SQLite
   index, MiniLM vectors beside it) in a cache directory, reused on the next run.
2. Every question is planned and ranked by the engine's ``AnswerSelector`` with the
   ``HybridGenerator`` (lexical top-k + dense top-k) and a recording scorer that keeps the
   features ``LearnedScorer`` computes at run time, so training and serving features are identical.
3. 5-fold cross-validation, folds by question (each question's candidates are all in one fold):
   P@1, R@5 and MRR with 95% bootstrap CIs for each feature set, next to the plain dense and the
   engine's lexical ranking of the same candidates. A question whose answer was not generated
   counts as a miss. The same figures, and the paired ``hybrid+dt`` - ``hybrid`` difference, on two
   subsets: questions whose DT-Q has a non-default relation (where agreement has something to agree
   with) and questions of ``LONG_WORDS`` words or more (where a backstory can swamp the problem).
4. The model of each feature set is fitted on all folds and written to
   ``dtdialog/ranking/models/ranker-v1.joblib`` (``hybrid+dt``) and ``ranker-v1-hybrid.joblib``
   (``hybrid``), each with a JSON manifest holding the CV figures, unless the model it would replace
   has a higher CV P@1 on as many questions (``--force`` writes it anyway).

No figure is trained and tested on the same question; BM25 statistics and the answer hubness are
computed over the candidate pool, which is what the engine sees at test time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dtdialog.ranking.features import FEATURE_SETS, feature_matrix
from dtdialog.setup.assembly import engine_parser_name
from eval.out_of_fold import FoldModels, folds_path, question_key
from eval.ranker_rows import QueryRows, build_pool_index, collect_dialogue_rows
from eval.report import save_figure
from parsers.errors import DTDialogError, InputError
from parsers.files import atomic_write_text
from parsers.home import data_home

DEFAULT_CACHE = data_home() / "train_ranker"
MODEL_FILES = {"hybrid+dt": "ranker-v1.joblib", "hybrid": "ranker-v1-hybrid.joblib"}
DEFAULT_K = 40
#: A question this many words long or longer is reported apart (issue 32: a long story around the problem).
LONG_WORDS = 80


# --- data -----------------------------------------------------------------------------------------------
def collect(*, data_dir: Path, cache: Path, k: int, limit: int | None, progress: bool) -> list[QueryRows]:
    """Return the recorded candidates of every mechanics question, in file order (cached as JSON in ``cache``).

    Mechanics is single-step: the rows are ``eval.ranker_rows.collect_dialogue_rows`` with one step each.
    """
    from eval.datasets import load_mechanics

    return collect_dialogue_rows(load_mechanics(data_dir).limited(limit), cache=cache, k=k, progress=progress,
                                 max_steps=1)


# --- cross-validation -----------------------------------------------------------------------------------
def make_estimator(kind: str, *, c: float = 0.1):
    """Return an unfitted pipeline: ``lr`` (standardised logistic regression) or ``hgb`` (gradient boosting)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if kind == "lr":
        return make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=5000, class_weight="balanced"))
    if kind == "hgb":
        return HistGradientBoostingClassifier(max_iter=150, learning_rate=0.05, max_leaf_nodes=15,
                                              min_samples_leaf=40, random_state=0)
    raise InputError(f"unknown model kind {kind!r}; expected lr or hgb")


def folds_of(n: int, *, folds: int, seed: int) -> list[np.ndarray]:
    """Return ``folds`` disjoint arrays of question indices (a seeded permutation, split evenly)."""
    if not 2 <= folds <= n:
        raise InputError(f"--folds must be between 2 and the number of questions ({n}), got {folds}")
    return np.array_split(np.random.RandomState(seed).permutation(n), folds)


def gold_ranks(queries: Sequence[QueryRows], scores: Sequence[np.ndarray]) -> np.ndarray:
    """Return the 0-based rank of the gold answer per question (a large number when it was not generated).

    Ties count against the gold answer (a candidate scored equal is ranked ahead), so ties never flatter.
    """
    out = np.full(len(queries), 10**6)
    for i, (q, s) in enumerate(zip(queries, scores)):
        if any(q.gold):
            g = s[q.gold.index(True)]
            out[i] = int(np.sum(s > g) + np.sum(s == g) - 1)
    return out


def summarize(ranks: np.ndarray, *, seed: int = 0, samples: int = 1000) -> dict[str, float]:
    """Return P@1, R@5, MRR and 95% bootstrap CIs (resampling questions) of the gold ranks."""
    p1 = (ranks == 0).astype(float)
    r5 = (ranks < 5).astype(float)
    rr = np.where(ranks < 10**6, 1.0 / (ranks + 1.0), 0.0)
    idx = np.random.RandomState(seed).randint(0, len(ranks), (samples, len(ranks)))
    out: dict[str, float] = {"n": int(len(ranks))}
    for name, v in (("p1", p1), ("r5", r5), ("mrr", rr)):
        lo, hi = np.percentile(v[idx].mean(axis=1), [2.5, 97.5])
        out.update({name: round(float(v.mean()), 4), f"{name}_lo": round(float(lo), 4), f"{name}_hi": round(float(hi), 4)})
    return out


def paired_difference(a: np.ndarray, b: np.ndarray, *, seed: int = 0, samples: int = 1000) -> dict[str, float]:
    """Return the P@1 difference ``a - b`` of two rank arrays over the same questions, with a paired 95% bootstrap CI."""
    d = (a == 0).astype(float) - (b == 0).astype(float)
    idx = np.random.RandomState(seed).randint(0, len(d), (samples, len(d)))
    lo, hi = np.percentile(d[idx].mean(axis=1), [2.5, 97.5])
    return {"diff": round(float(d.mean()), 4), "lo": round(float(lo), 4), "hi": round(float(hi), 4)}


def cross_validate(queries: Sequence[QueryRows], names: Sequence[str], *, kind: str, folds: int,
                   seed: int, c: float = 0.1, models_out: list | None = None,
                   extra: Sequence[QueryRows] = (), extra_weight: float = 1.0) -> np.ndarray:
    """Return the gold rank of every question, each scored by a model fitted on the other folds.

    ``models_out``, when given, receives the fold models in fold order (shipped with the model so an
    evaluation on this pool can score each question with the model that never saw it). ``extra``
    rows (another dataset's training split) join every training fold and are never tested here.
    """
    scores: list[np.ndarray] = [np.zeros(len(q.ids)) for q in queries]
    for test in folds_of(len(queries), folds=folds, seed=seed):
        test_set = set(test.tolist())
        train = [q for i, q in enumerate(queries) if i not in test_set and q.rows]
        model = fit(train, names, kind=kind, c=c, extra=extra, extra_weight=extra_weight)
        if models_out is not None:
            models_out.append(model)
        for i in test:
            if queries[i].rows:
                scores[i] = model.decision_function(feature_matrix(queries[i].rows, names)) \
                    if hasattr(model, "decision_function") else model.predict_proba(
                        feature_matrix(queries[i].rows, names))[:, 1]
    return gold_ranks(queries, scores)


def fit(queries: Sequence[QueryRows], names: Sequence[str], *, kind: str, c: float = 0.1,
        extra: Sequence[QueryRows] = (), extra_weight: float = 1.0):
    """Return the estimator fitted on every candidate of ``queries`` and ``extra`` (gold = 1, others = 0).

    ``extra_weight`` scales the extra rows so that, in total, they weigh ``extra_weight`` times the
    main rows (1.0: both datasets count alike however many steps each has).
    """
    extra = [q for q in extra if q.rows] if extra_weight > 0 else []
    X = np.vstack([feature_matrix(q.rows, names) for q in [*queries, *extra]])
    y = np.concatenate([np.asarray(q.gold, dtype=int) for q in [*queries, *extra]])
    if y.sum() == 0:
        raise InputError("no question has its gold answer among the candidates; nothing to learn")
    n_main = sum(len(q.rows) for q in queries)
    weights = np.ones(len(y))
    if extra:
        weights[n_main:] = extra_weight * n_main / (len(y) - n_main)
    estimator = make_estimator(kind, c=c)
    if not hasattr(estimator, "steps"):
        return estimator.fit(X, y, sample_weight=weights)
    # every step that takes weights gets them, so the scaler standardises with the same weighting
    return estimator.fit(X, y, **{f"{name}__sample_weight": weights for name, _ in estimator.steps})


def single_feature_ranks(queries: Sequence[QueryRows], name: str) -> np.ndarray:
    """Return gold ranks when candidates are ordered by one feature alone (baselines)."""
    return gold_ranks(queries, [feature_matrix(q.rows, [name])[:, 0] if q.rows else np.zeros(0) for q in queries])


def full_pool_dense_ranks(*, data_dir: Path, cache: Path, limit: int | None) -> np.ndarray:
    """Return the gold rank under plain MiniLM cosine over the whole pool (the ``dense`` baseline)."""
    from dtdialog.ranking.dense_signals import dense_query_text
    from eval.datasets import load_mechanics
    from index.dense import DenseEncoder
    from index.dense_store import DenseStore

    eval_set = load_mechanics(data_dir).limited(limit)
    store = DenseStore.load(build_pool_index(eval_set, cache=cache, progress=False))
    q = DenseEncoder().encode([dense_query_text(d.question) for d in eval_set.dialogues])
    sims = q @ np.asarray(store.vectors).T
    rows = store.rows([d.answer_ids[0] for d in eval_set.dialogues])
    gold = sims[np.arange(len(rows)), rows]
    return (sims > gold[:, None]).sum(axis=1)


def subsets_of(queries: Sequence[QueryRows], questions: Sequence[str]) -> dict[str, np.ndarray]:
    """Return {subset name: boolean mask over the questions}: DT-Q with a non-default relation, and long questions."""
    return {"has_relation": np.array([bool(q.rows) and q.rows[0].get("has_relation", 0.0) > 0 for q in queries]),
            f"words>={LONG_WORDS}": np.array([len(text.split()) >= LONG_WORDS for text in questions])}


def subset_report(masks: dict[str, np.ndarray], ranks: dict[str, np.ndarray]) -> dict[str, dict]:
    """Return, per subset, the figures of every method in ``ranks`` and the paired ``hybrid+dt`` - ``hybrid``."""
    out: dict[str, dict] = {}
    for subset, mask in masks.items():
        if not mask.any():
            continue
        entry = out[subset] = {"n": int(mask.sum()), "results": {name: summarize(r[mask]) for name, r in ranks.items()}}
        if {"hybrid", "hybrid+dt"} <= set(ranks):
            entry["dt_minus_hybrid"] = paired_difference(ranks["hybrid+dt"][mask], ranks["hybrid"][mask])
    return out


def worse_than_shipped(cv: dict[str, float], path: Path) -> float | None:
    """Return the CV P@1 in the manifest of the model at ``path`` when it is above ``cv``'s (else None: write it).

    A retrained model replaces a shipped one only if it holds its figure on the same questions.
    """
    try:
        shipped = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))["cv"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(shipped, dict) or shipped.get("n") != cv["n"] or not isinstance(shipped.get("p1"), float):
        return None
    return shipped["p1"] if shipped["p1"] > cv["p1"] else None


# --- CLI --------------------------------------------------------------------------------------------------
def _line(name: str, s: dict[str, float]) -> str:
    return (f"{name:<22} P@1 {s['p1']:.3f} [{s['p1_lo']:.3f}, {s['p1_hi']:.3f}]  "
            f"R@5 {s['r5']:.3f} [{s['r5_lo']:.3f}, {s['r5_hi']:.3f}]  MRR {s['mrr']:.3f}")


def run(args: argparse.Namespace) -> dict:
    """Run the whole procedure; return the report dict (also written to ``--json``)."""
    from eval.datasets import default_data_dir, load_mechanics
    from eval.provenance import provenance, provenance_lines
    from index.dense import INSTALL_HINT, DenseEncoder, dense_available, select_encoder

    if not dense_available():
        raise InputError(f"training the ranker needs the [dense] extra ({INSTALL_HINT})")
    select_encoder(args.encoder)
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    # the candidates and features depend on the encoder: the fp32 reference keeps the cache it always had
    cache = Path(args.cache) / DenseEncoder().model_id if args.encoder == "onnx" else Path(args.cache)
    t0 = time.perf_counter()
    queries = collect(data_dir=data_dir, cache=cache, k=args.k, limit=args.limit, progress=not args.no_progress)
    seconds_collect = time.perf_counter() - t0
    recall = float(np.mean([any(q.gold) for q in queries]))
    report: dict = {"dataset": "mechanics_qa_dev", "questions": len(queries), "k": args.k, "folds": args.folds,
                    "seed": args.seed, "model": args.model, "encoder": args.encoder, "C": args.c, "candidate_recall": round(recall, 4),
                    "mean_candidates": round(float(np.mean([len(q.ids) for q in queries])), 1),
                    "collect_seconds": round(seconds_collect, 1), "results": {}}
    print(f"{len(queries)} questions, k={args.k}: gold answer among the candidates for {recall:.3f} "
          f"(mean {report['mean_candidates']} candidates)")
    extra = _extra_rows(args, report, data_dir=data_dir, cache=cache)
    sets = list(FEATURE_SETS) if args.feature_set == "all" else [args.feature_set]
    fold_models, set_ranks, dense_ranks = _cross_validate_sets(args, report, queries, sets, extra, data_dir=data_dir,
                                                               cache=cache, collect_seconds=seconds_collect)
    mechanics = load_mechanics(data_dir).limited(args.limit)
    questions = [d.question for d in mechanics.dialogues]
    report["subsets"] = subset_report(subsets_of(queries, questions), {"dense (full pool)": dense_ranks, **set_ranks})
    _print_subsets(report["subsets"])
    if not args.no_save:
        _save_models(args, report, queries, questions, sets, fold_models, extra, data_dir=data_dir)
    # the model of the tree's feature set this run wrote (or, without --save, the one it would replace)
    report["provenance"] = provenance([mechanics], ranker="learned",
                                      model_path=str(_model_target(args, "hybrid+dt")))
    print("\n".join(provenance_lines(report["provenance"])))
    if args.json:
        atomic_write_text(Path(args.json), json.dumps(report, indent=2) + "\n")
    if args.plot:
        plot(report, Path(args.plot))
    return report


def _extra_rows(args: argparse.Namespace, report: dict, *, data_dir: Path, cache: Path) -> list[QueryRows]:
    """Return the IRC train split's dialogue steps added to every training fold (``--extra irc``), else none."""
    if args.extra != "irc":
        return []
    from eval.datasets import load_irc_train

    extra = collect_dialogue_rows(load_irc_train(data_dir), cache=cache, k=args.k, progress=not args.no_progress)
    report["extra"] = {"dataset": "irc train split", "steps": len(extra), "weight": args.extra_weight,
                       "candidate_recall": round(float(np.mean([any(q.gold) for q in extra])), 4) if extra else 0}
    print(f"+ {len(extra)} IRC train dialogue steps in every training fold (weight {args.extra_weight})")
    return extra


def _cross_validate_sets(args: argparse.Namespace, report: dict, queries: list[QueryRows], sets: list[str],
                         extra: list[QueryRows], *, data_dir: Path, cache: Path,
                         collect_seconds: float) -> tuple[dict, dict, np.ndarray]:
    """Cross-validate each feature set beside the single-feature rankings; fill ``report`` and print it; return
    the fold models, the ranks of each set and the full-pool dense ranks."""
    results = report["results"]
    dense_ranks = full_pool_dense_ranks(data_dir=data_dir, cache=cache, limit=args.limit)
    results["dense (full pool)"] = summarize(dense_ranks)
    results["lexical (engine)"] = summarize(single_feature_ranks(queries, "lexical"))
    results["bm25 (whole question)"] = summarize(single_feature_ranks(queries, "bm25"))
    results["dense csls"] = summarize(single_feature_ranks(queries, "dense_csls"))
    report["vs_dense"] = {}
    t1 = time.perf_counter()
    fold_models: dict[str, list] = {}
    set_ranks: dict[str, np.ndarray] = {}
    for name in sets:
        ranks = set_ranks[name] = cross_validate(queries, FEATURE_SETS[name], kind=args.model, folds=args.folds, seed=args.seed,
                               c=args.c, models_out=fold_models.setdefault(name, []), extra=extra,
                               extra_weight=args.extra_weight)
        results[name] = summarize(ranks)
        report["vs_dense"][name] = paired_difference(ranks, dense_ranks)
    report["cv_seconds"] = round(time.perf_counter() - t1, 1)
    for name, s in results.items():
        print(_line(name, s))
    print(f"features collected in {collect_seconds:.0f} s, cross-validated in {report['cv_seconds']:.0f} s")
    for name, d in report["vs_dense"].items():
        print(f"{name} - dense: P@1 {d['diff']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}] (paired bootstrap)")
    if {"hybrid", "hybrid+dt"} <= set(set_ranks):
        # what the discourse-tree features add, question by question on the same folds
        d = report["dt_minus_hybrid"] = paired_difference(set_ranks["hybrid+dt"], set_ranks["hybrid"])
        print(f"hybrid+dt - hybrid: P@1 {d['diff']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}] (paired bootstrap)")
    return fold_models, set_ranks, dense_ranks


def _print_subsets(subsets: dict) -> None:
    for subset, entry in subsets.items():
        print(f"-- {subset} ({entry['n']} questions)")
        for name, s in entry["results"].items():
            print("   " + _line(name, s))
        if "dt_minus_hybrid" in entry:
            d = entry["dt_minus_hybrid"]
            print(f"   hybrid+dt - hybrid: P@1 {d['diff']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}] (paired bootstrap)")


def _model_target(args: argparse.Namespace, feature_set: str) -> Path:
    from dtdialog.ranking.learned_scorer import MODELS_DIR

    return Path(args.out_dir or MODELS_DIR) / MODEL_FILES[feature_set]


def _save_models(args: argparse.Namespace, report: dict, queries: list[QueryRows], questions: list[str],
                 sets: list[str], fold_models: dict, extra: list[QueryRows], *, data_dir: Path) -> None:
    """Fit each feature set's model on all folds and write it with its manifest and its fold models, unless the
    model it would replace has a higher CV P@1 on as many questions (``--force`` writes it anyway)."""
    from dtdialog.ranking.learned_scorer import RankerModel
    from eval.datasets import load_mechanics
    from eval.methods.pool_index import pool_digest

    results = report["results"]
    usable = [q for q in queries if q.rows]
    # which fold held out each question, by question text: evaluations on this pool stay out-of-fold
    held_out = {question_key(questions[i]): f
                for f, test in enumerate(folds_of(len(queries), folds=args.folds, seed=args.seed)) for i in test}
    for name in sets:
        target = _model_target(args, name)
        kept = None if args.force else worse_than_shipped(results[name], target)
        if kept is not None:
            print(f"kept {target}: its CV P@1 {kept:.3f} is above this run's {results[name]['p1']:.3f} "
                  "(--force writes it anyway)")
            continue
        names = FEATURE_SETS[name]
        estimator = fit(usable, names, kind=args.model, c=args.c, extra=extra, extra_weight=args.extra_weight)
        X = np.vstack([feature_matrix(q.rows, names) for q in usable])
        manifest = {"name": Path(MODEL_FILES[name]).stem, "feature_set": name, "model": args.model, "C": args.c,
                    "trained_on": f"mechanics_qa_dev ({len(usable)} questions, all folds)"
                                  + (f" + IRC train split ({len(extra)} dialogue steps, weight {args.extra_weight})"
                                     if extra else ""), "k": args.k,
                    "pool_digest": pool_digest(load_mechanics(data_dir).pool),
                    "parser": engine_parser_name(),  # the trees its DT features were fitted on
                    "command": "python -m eval.train_ranker"
                               + (f" --extra {args.extra} --extra-weight {args.extra_weight}" if extra else "")
                               + (f" --folds {args.folds}" if args.folds != 5 else "")
                               + (f" --seed {args.seed}" if args.seed != 13 else ""),
                    "cv": results[name], "cv_dense": results["dense (full pool)"],
                    "cv_minus_dense": report["vs_dense"][name],
                    "feature_means": [round(float(v), 6) for v in X.mean(axis=0)]}
        path = RankerModel(estimator=estimator, feature_names=tuple(names), manifest=manifest).save(target)
        print(f"wrote {path}")
        # the CV models serve only the evaluation's out-of-fold scoring: they stay out of the shipped file
        folds = FoldModels(model_name=manifest["name"], feature_names=tuple(names),
                           fold_estimators=tuple(fold_models[name]), held_out=held_out).save(folds_path(path))
        print(f"wrote {folds}")


def plot(report: dict, path: Path) -> None:
    """Write a bar chart of P@1 with 95% CIs per method/feature set (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(report["results"])
    p1 = [report["results"][n]["p1"] for n in names]
    err = [[v - report["results"][n]["p1_lo"] for n, v in zip(names, p1)],
           [report["results"][n]["p1_hi"] - v for n, v in zip(names, p1)]]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.barh(names[::-1], p1[::-1], xerr=[err[0][::-1], err[1][::-1]], color="#4C72B0", capsize=3)
    ax.axvline(0.80, color="#C44E52", linestyle="--", label="target 0.80")
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"P@1 on mechanics_qa_dev ({report['folds']}-fold CV by question, 95% bootstrap CI)")
    ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.train_ranker", description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", help="shared data directory (default: ../shared/data or $DTDIALOG_SHARED_DATA)")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--feature-set", choices=[*FEATURE_SETS, "all"], default="all")
    parser.add_argument("--model", choices=["lr", "hgb"], default="lr")
    parser.add_argument("--c", type=float, default=0.1, help="inverse regularisation of the logistic regression")
    parser.add_argument("-k", type=int, default=DEFAULT_K, help="lexical and dense candidates per question")
    parser.add_argument("--limit", type=int, help="only the first N questions (quick runs)")
    parser.add_argument("--extra", choices=["none", "irc"], default="none",
                        help="add another dataset's training split to every training fold (irc: the IRC train split)")
    parser.add_argument("--extra-weight", type=float, default=1.0,
                        help="total weight of the extra rows relative to the mechanics rows (default 1)")
    parser.add_argument("--cache", default=str(DEFAULT_CACHE), help="where the pool index and features are kept")
    parser.add_argument("--out-dir", help="write the models here instead of dtdialog/ranking/models")
    parser.add_argument("--no-save", action="store_true", help="cross-validate only")
    parser.add_argument("--force", action="store_true",
                        help="write each model even when its CV P@1 is below the one it replaces")
    parser.add_argument("--json", help="write the report as JSON")
    parser.add_argument("--plot", help="write a P@1 bar chart (PNG) here")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--encoder", choices=["onnx", "torch"], default="onnx",
                        help="query and answer encoder: the engine's int8 ONNX MiniLM (default) or the fp32 torch "
                             "reference ([train] extra); each keeps its own cache under --cache")
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error("-k must be at least 1")
    if args.extra_weight < 0:
        parser.error("--extra-weight must be 0 or more")
    try:
        run(args)
    except DTDialogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
