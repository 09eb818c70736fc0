"""Train the scikit-learn discourse parser on the permissively licensed GUM genres.

    python -m parsers.train --gum ../shared/data/gum_rst --out parsers/models/gum-sklearn-v1 [--seed 13]
    python -m parsers.train --parser neural --gum ../shared/data/gum_rst --out parsers/models/gum-neural-v2 [--resume]

Trains on ``train``, picks hyper-parameters on ``dev`` and reports RST-Parseval
scores on ``test`` (written into the manifest and the model card). The
BY-NC-SA genres and reddit (``parsers.gum.NON_COMMERCIAL_GENRES``) are never read.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from parsers.errors import DTDialogError, ModelNotAvailableError
from parsers.features import DocContext, all_boundary_features, pair_features
from parsers.files import atomic_write_text
from parsers.gum import NON_COMMERCIAL_GENRES
from parsers.gum_prepare import PreparedDoc, prepare
from parsers.parseval import PUBLISHED_GUM, aggregate, binarize_node, parseval
from parsers.trained_parser import LinearComponent, ParserModel, edus_to_tree_edus
from parsers.tree import DiscourseTree
from parsers.tree_builder import INTER, INTRA, gold_oracle_pairs, sentence_groups

log = logging.getLogger("parsers.train")


# --- examples -----------------------------------------------------------------------------------
def segmenter_examples(docs: Sequence[PreparedDoc]) -> tuple[list[dict[str, float]], list[int]]:
    """Return boundary features and labels for every token but the first of each document."""
    feats: list[dict[str, float]] = []
    labels: list[int] = []
    for d in docs:
        fs = all_boundary_features(d.analyzed)
        feats.extend(fs[1:])
        labels.extend(d.seg_labels[1:])
    return feats, labels


def _gold_binary_nodes(tree: DiscourseTree):
    root = binarize_node(tree.root)
    return [n for n in root.walk() if not n.is_leaf]


def structure_examples(docs: Sequence[PreparedDoc]) -> dict[str, tuple[list[dict[str, float]], list[int]]]:
    """Return merge/no-merge examples per level from gold-guided greedy runs over the gold EDUs."""
    out: dict[str, tuple[list, list]] = {INTRA: ([], []), INTER: ([], [])}
    for d in docs:
        ctx = DocContext(analyzed=d.analyzed, edus=d.gold_views)
        gold_spans = {n.span for n in _gold_binary_nodes(d.gold)}
        leftovers = []
        for first, last in sentence_groups([v.sentence for v in d.gold_views]):
            items = [(i, i) for i in range(first, last + 1)]
            pairs, frontier = gold_oracle_pairs(items, gold_spans)
            for (a, b), lab in pairs:
                out[INTRA][0].append(pair_features(ctx, a, b, level=INTRA))
                out[INTRA][1].append(lab)
            leftovers.extend(frontier)
        pairs, _ = gold_oracle_pairs(leftovers, gold_spans)
        for (a, b), lab in pairs:
            out[INTER][0].append(pair_features(ctx, a, b, level=INTER))
            out[INTER][1].append(lab)
    return out


def label_examples(docs: Sequence[PreparedDoc]) -> dict[str, tuple[list[dict[str, float]], list[str]]]:
    """Return relation|nuclearity examples per level, one per gold binary constituent."""
    out: dict[str, tuple[list, list]] = {INTRA: ([], []), INTER: ([], [])}
    for d in docs:
        ctx = DocContext(analyzed=d.analyzed, edus=d.gold_views)
        for n in _gold_binary_nodes(d.gold):
            left, right = n.children
            level = INTRA if d.gold_views[n.first].sentence == d.gold_views[n.last].sentence else INTER
            out[level][0].append(pair_features(ctx, left.span, right.span, level=level))
            out[level][1].append(f"{n.relation}|{''.join(n.nuclearity)}")
    return out


# --- fitting ------------------------------------------------------------------------------------
def fit_component(feats: list[dict[str, float]], labels: Sequence, *, C: float, seed: int,
                  min_count: int = 2, multiclass: bool = False) -> LinearComponent:
    """Return a fitted ``LinearComponent``: features seen fewer than ``min_count`` times are dropped."""
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    vec = DictVectorizer(dtype=np.float32)
    X = vec.fit_transform(feats)
    counts = np.asarray((X != 0).sum(axis=0)).ravel()
    vec.restrict(counts >= min_count)
    comp = LinearComponent(vectorizer=vec, classifier=None)
    X = comp.transform(feats)
    if multiclass:
        from sklearn.multiclass import OneVsRestClassifier

        # One-vs-rest liblinear: several times faster than multinomial lbfgs on the shared CPUs.
        clf = OneVsRestClassifier(LogisticRegression(C=C, solver="liblinear", random_state=seed))
    else:
        clf = LogisticRegression(C=C, solver="liblinear", random_state=seed)
    clf.fit(X, list(labels))
    # float32 weights halve the shipped size; the probabilities change only in the 7th digit.
    for est in getattr(clf, "estimators_", [clf]):
        est.coef_ = est.coef_.astype(np.float32)
        est.intercept_ = est.intercept_.astype(np.float32)
    comp.classifier = clf
    return comp


def seg_prf(probs: np.ndarray, labels: Sequence[int], threshold: float) -> tuple[float, float, float]:
    """Return token-boundary P/R/F1 at ``threshold``."""
    y = np.asarray(labels)
    pred = probs >= threshold
    tp = int((pred & (y == 1)).sum())
    p = tp / max(int(pred.sum()), 1)
    r = tp / max(int((y == 1).sum()), 1)
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def parse_prepared(model: ParserModel, d: PreparedDoc, *, gold_segmentation: bool = False) -> DiscourseTree:
    """Return the model's tree for a prepared document (predicted or gold EDUs)."""
    views = d.gold_views if gold_segmentation else model.segment(d.analyzed)
    edus = edus_to_tree_edus(d.analyzed, views)
    if len(edus) == 1:
        return DiscourseTree.single(d.analyzed.text, edus[0], parser="trained")
    root = model.build(DocContext(analyzed=d.analyzed, edus=views))
    return DiscourseTree(text=d.analyzed.text, edus=tuple(edus), root=root, parser="trained")


def evaluate(model: ParserModel, docs: Sequence[PreparedDoc], *, gold_segmentation: bool = False) -> dict[str, float]:
    """Return micro-averaged RST-Parseval scores of ``model`` on ``docs``."""
    return aggregate([parseval(d.gold, parse_prepared(model, d, gold_segmentation=gold_segmentation))
                      for d in docs])


def _fmt(scores: dict[str, float]) -> str:
    keys = ("seg_f1", "span_f1", "nuc_f1", "rel_f1", "full_f1", "nondefault_p", "nondefault_r")
    return " ".join(f"{k}={scores[k]:.3f}" for k in keys if k in scores)


# --- model selection ----------------------------------------------------------------------------
SEG_THRESHOLDS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)


@dataclass
class SegmenterChoice:
    """The segmenter that won on dev, with its C, decision threshold and dev boundary F1."""

    component: LinearComponent
    C: float
    threshold: float
    dev_f1: float


@dataclass
class LabellerChoice:
    """The relation|nuclearity classifier per level that won on dev, with its C and dev accuracy."""

    components: dict[str, LinearComponent]
    settings: dict[str, dict[str, float]]


def select_segmenter(train_docs: Sequence[PreparedDoc], dev_docs: Sequence[PreparedDoc], *, cs: Sequence[float],
                     seed: int) -> SegmenterChoice:
    """Return the segmenter whose C and decision threshold give the best dev boundary F1."""
    Xs, ys = segmenter_examples(train_docs)
    Xd, yd = segmenter_examples(dev_docs)
    log.info("segmenter: %d train / %d dev boundaries (%d / %d EDU starts)", len(ys), len(yd), sum(ys), sum(yd))
    best: SegmenterChoice | None = None
    for C in cs:
        comp = fit_component(Xs, ys, C=C, seed=seed)
        probs = comp.predict_proba(Xd)[:, comp.classes.index(1)]
        for thr in SEG_THRESHOLDS:
            f1 = seg_prf(probs, yd, thr)[2]
            if best is None or f1 > best.dev_f1:
                best = SegmenterChoice(component=comp, C=C, threshold=thr, dev_f1=f1)
        log.info("segmenter C=%g: best dev boundary F1 so far %.4f (C=%g thr=%.2f)", C, best.dev_f1,
                 best.C, best.threshold)
    assert best is not None
    return best


def _select_level_labeller(level: str, train: tuple[list[dict[str, float]], list[str]],
                           dev: tuple[list[dict[str, float]], list[str]], *, cs: Sequence[float],
                           seed: int) -> tuple[float, float, LinearComponent]:
    """Return (dev accuracy, C, component) of the best labeller of one level."""
    Xl, yl = train
    Xld, yld = dev
    log.info("labeller %s: %d train / %d dev constituents, %d classes", level, len(yl), len(yld), len(set(yl)))
    best: tuple[float, float, LinearComponent] | None = None
    for C in cs:
        comp = fit_component(Xl, yl, C=C, seed=seed, multiclass=True)
        pred = comp.classifier.predict(comp.transform(Xld))
        acc = float(np.mean([p == g for p, g in zip(pred, yld)])) if yld else 0.0
        log.info("labeller %s C=%g: dev accuracy %.4f", level, C, acc)
        if best is None or acc > best[0]:
            best = (acc, C, comp)
    assert best is not None
    return best


def select_labeller(lab_train: dict[str, tuple[list[dict[str, float]], list[str]]],
                    lab_dev: dict[str, tuple[list[dict[str, float]], list[str]]], *, cs: Sequence[float],
                    seed: int) -> LabellerChoice:
    """Return the labeller per level whose C gives the best dev accuracy on gold constituents."""
    choice = LabellerChoice(components={}, settings={})
    for level in (INTRA, INTER):
        acc, C, comp = _select_level_labeller(level, lab_train[level], lab_dev[level], cs=cs, seed=seed)
        choice.components[level] = comp
        choice.settings[level] = {"C": C, "dev_accuracy": acc}
    return choice


def select_structure(train_docs: Sequence[PreparedDoc], dev_docs: Sequence[PreparedDoc], segmenter: SegmenterChoice,
                     labeller: LabellerChoice, *, cs: Sequence[float], seed: int) -> tuple[float, ParserModel]:
    """Return the C of the structure scorers with the best dev span F1 over gold EDUs, and the model built on them."""
    st_train = structure_examples(train_docs)
    for level in (INTRA, INTER):
        log.info("structure %s: %d train pairs (%d merges)", level, len(st_train[level][1]), sum(st_train[level][1]))

    def model_with(structure: dict[str, LinearComponent]) -> ParserModel:
        return ParserModel(segmenter=segmenter.component, seg_threshold=segmenter.threshold, structure=structure,
                           labeller=labeller.components)

    best: tuple[float, float, dict[str, LinearComponent]] | None = None
    for C in cs:
        structure = {level: fit_component(st_train[level][0], st_train[level][1], C=C, seed=seed)
                     for level in (INTRA, INTER)}
        scores = evaluate(model_with(structure), dev_docs, gold_segmentation=True)
        log.info("structure C=%g: dev (gold EDUs) %s", C, _fmt(scores))
        if best is None or scores["span_f1"] > best[0]:
            best = (scores["span_f1"], C, structure)
    assert best is not None
    return best[1], model_with(best[2])


def select_default_bias(model: ParserModel, dev_docs: Sequence[PreparedDoc], biases: Sequence[float]) -> float:
    """Return the labeller's default-relation bias with the best dev relation F1 (then non-default F1), gold EDUs."""
    best: tuple[tuple[float, float], float] | None = None
    for bias in biases:
        model.default_bias = bias
        scores = evaluate(model, dev_docs, gold_segmentation=True)
        log.info("default bias %.2f: dev (gold EDUs) %s", bias, _fmt(scores))
        key = (round(scores["rel_f1"], 4), scores["nondefault_f1"])
        if best is None or key > best[0]:
            best = (key, bias)
    assert best is not None
    return best[1]


def select_size_penalty(model: ParserModel, dev_docs: Sequence[PreparedDoc], penalties: Sequence[float]) -> float:
    """Return the size prior of cross-sentence merges with the best dev span F1, end to end (predicted EDUs)."""
    best: tuple[float, float] | None = None
    for pen in penalties:
        model.size_penalty = pen
        scores = evaluate(model, dev_docs)
        log.info("size penalty %.2f: dev (end to end) %s", pen, _fmt(scores))
        if best is None or scores["span_f1"] > best[0]:
            best = (scores["span_f1"], pen)
    assert best is not None
    return best[1]


def score_on_dev(model: ParserModel, dev_docs: Sequence[PreparedDoc]) -> dict[str, Any]:
    """Return the final dev scores of ``model``, over gold EDUs and end to end."""
    dev_gold = evaluate(model, dev_docs, gold_segmentation=True)
    dev_e2e = evaluate(model, dev_docs)
    log.info("dev, gold EDUs: %s", _fmt(dev_gold))
    log.info("dev, end to end: %s", _fmt(dev_e2e))
    return {"dev_gold_edus": dev_gold, "dev": dev_e2e}


def score_on_test(model: ParserModel, test_docs: Sequence[PreparedDoc]) -> dict[str, Any]:
    """Return the test scores of ``model`` (reported only, never used for selection), gold EDUs and end to end."""
    scores = {"test_gold_edus": evaluate(model, test_docs, gold_segmentation=True), "test": evaluate(model, test_docs)}
    log.info("test, gold EDUs: %s", _fmt(scores["test_gold_edus"]))
    log.info("test, end to end: %s", _fmt(scores["test"]))
    return scores


# --- training -----------------------------------------------------------------------------------
@dataclass
class TrainingRun:
    """Everything a training run chose and measured, from which the manifest is written."""

    name: str
    seed: int
    train_docs: Sequence[PreparedDoc]
    dev_docs: Sequence[PreparedDoc]
    test_names: list[str]
    segmenter: SegmenterChoice
    labeller: LabellerChoice
    structure_c: float
    model: ParserModel
    label_counts: dict[str, dict[str, int]]
    scores: dict[str, Any]


def training_manifest(run: TrainingRun, *, train_seconds: float) -> dict[str, Any]:
    """Return the manifest of ``run``: versions, data, hyper-parameters, label sets and scores."""
    import sklearn

    model = run.model
    return {
        "name": run.name,
        "parser": "trained",
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "sklearn_version": sklearn.__version__,
        "python_version": sys.version.split()[0],
        "seed": run.seed,
        "data": {
            "corpus": "GUM (Zeldes 2017), RST/eRST binarised trees (lisp_binary)",
            "license": "GUM annotations CC-BY 4.0; texts of the genres used are CC-BY (see gum_rst/LICENSE.txt)",
            "genres_used": sorted({d.doc.genre for d in run.train_docs}),
            "genres_excluded": sorted(NON_COMMERCIAL_GENRES),
            "train_docs": [d.doc.name for d in run.train_docs],
            "dev_docs": [d.doc.name for d in run.dev_docs],
            "test_docs": run.test_names,
        },
        "features": {"segmenter": "parsers.features.boundary_features",
                     "pairs": "parsers.features.pair_features", "min_count": 2},
        "components": {
            "segmenter": {"C": run.segmenter.C, "threshold": run.segmenter.threshold,
                          "dev_boundary_f1": run.segmenter.dev_f1,
                          "n_features": len(run.segmenter.component.vectorizer.feature_names_)},
            "structure": {"C": run.structure_c, **{lvl: {"n_features": len(c.vectorizer.feature_names_)}
                                                   for lvl, c in model.structure.items()}},
            "default_bias": model.default_bias,
            "size_penalty": model.size_penalty,
            "labeller": {lvl: {**run.labeller.settings[lvl], "n_features": len(c.vectorizer.feature_names_),
                               "labels": [str(x) for x in c.classes]} for lvl, c in run.labeller.components.items()},
        },
        "label_counts": run.label_counts,
        "scores": run.scores,
        "published_isanlp_rst_gumrrg": PUBLISHED_GUM["isanlp_rst_v3_gumrrg"],
        "train_seconds": train_seconds,
    }


def train(gum_dir: Path, out_dir: Path, *, seed: int = 13, limit: int | None = None, cache_dir: Path | None = None,
          seg_cs: Sequence[float] = (1.0,), struct_cs: Sequence[float] = (1.0,),
          label_cs: Sequence[float] = (0.15, 0.3), default_biases: Sequence[float] = (1.0,),
          size_penalties: Sequence[float] = (0.0, 0.04, 0.08, 0.15), report_test: bool = True) -> dict[str, Any]:
    """Train, select on dev, score on test, save into ``out_dir``; return the manifest written."""
    random.seed(seed)
    np.random.seed(seed)
    t0 = time.perf_counter()
    train_docs = prepare(gum_dir, "train", limit=limit, cache_dir=cache_dir)
    dev_docs = prepare(gum_dir, "dev", limit=limit, cache_dir=cache_dir)
    # Components are chosen in dependency order: the structure scorers are judged with the chosen labeller,
    # the default bias with the chosen structure, the size prior end to end with everything else fixed.
    segmenter = select_segmenter(train_docs, dev_docs, cs=seg_cs, seed=seed)
    lab_train = label_examples(train_docs)
    labeller = select_labeller(lab_train, label_examples(dev_docs), cs=label_cs, seed=seed)
    structure_c, model = select_structure(train_docs, dev_docs, segmenter, labeller, cs=struct_cs, seed=seed)
    model.default_bias = select_default_bias(model, dev_docs, default_biases)
    model.size_penalty = select_size_penalty(model, dev_docs, size_penalties)
    scores = score_on_dev(model, dev_docs)
    test_docs = prepare(gum_dir, "test", limit=limit, cache_dir=cache_dir) if report_test else []
    if report_test:
        scores.update(score_on_test(model, test_docs))
    run = TrainingRun(
        name=out_dir.name, seed=seed, train_docs=train_docs, dev_docs=dev_docs,
        test_names=[d.doc.name for d in test_docs], segmenter=segmenter, labeller=labeller,
        structure_c=structure_c, model=model, scores=scores,
        label_counts={lvl: dict(Counter(lab_train[lvl][1]).most_common()) for lvl in (INTRA, INTER)})
    manifest = training_manifest(run, train_seconds=round(time.perf_counter() - t0, 1))
    model.to_disk(out_dir, manifest=manifest)
    atomic_write_text(out_dir / "MODEL_CARD.md", model_card(manifest))
    size = sum(p.stat().st_size for p in out_dir.iterdir() if p.is_file())
    log.info("saved model to %s (%.2f MB) in %.0f s", out_dir, size / 1e6, time.perf_counter() - t0)
    return manifest


def _score_row(name: str, scores: dict[str, float]) -> str:
    keys = ("seg_f1", "span_f1", "nuc_f1", "rel_f1", "full_f1")
    cells = " | ".join(f"{100 * scores[k]:.1f}" if k in scores else "-" for k in keys)
    nd = (f"{100 * scores['nondefault_p']:.1f} / {100 * scores['nondefault_r']:.1f}"
          if "nondefault_p" in scores else "-")
    return f"| {name} | {cells} | {nd} |"


def model_card(manifest: dict[str, Any]) -> str:
    """Return the Markdown model card for a training ``manifest``."""
    data = manifest["data"]
    comps = manifest["components"]
    sc = manifest["scores"]
    rows = [_score_row(label, sc[key]) for key, label in (
        ("test", "trained, GUM test (end to end)"), ("test_gold_edus", "trained, GUM test (gold EDUs)"),
        ("dev", "trained, GUM dev (end to end)"), ("dev_gold_edus", "trained, GUM dev (gold EDUs)"),
    ) if key in sc]
    rows.append(_score_row("isanlp-rst gumrrg (published, GUM test)", manifest["published_isanlp_rst_gumrrg"]))
    return f"""# Model card: {manifest['name']}

The `trained` discourse parser of dtdialog (`get_parser("trained", model="{manifest['name']}")`):
scikit-learn logistic-regression components over hand-built features (`parsers/features.py`).

- **EDU segmenter**: token-boundary classifier (C={comps['segmenter']['C']}, threshold
  {comps['segmenter']['threshold']}, {comps['segmenter']['n_features']:,} features).
- **Structure scorer**: merge/no-merge classifier for adjacent spans, one inside sentences and one
  across sentences (C={comps['structure']['C']}); greedy bottom-up tree building (`parsers/tree_builder.py`).
- **Relation + nuclearity labeller**: one `Relation|NS/SN/NN` classifier per level
  (intra: {len(comps['labeller']['intra']['labels'])} labels, inter: {len(comps['labeller']['inter']['labels'])} labels);
  default-relation bias {comps['default_bias']} (factor on default relations' probabilities before the
  argmax; 1.0 is a plain argmax — `train(default_biases=...)` searches it on dev).
- **Cross-sentence size prior**: {comps.get('size_penalty', 0.0)} subtracted per EDU from a cross-sentence
  merge probability, so small neighbours merge first (chosen on dev by end-to-end span F1).

Trained with `python -m parsers.train --gum ../shared/data/gum_rst --out parsers/models/{manifest['name']} --seed {manifest['seed']}`
(scikit-learn {manifest['sklearn_version']}, Python {manifest['python_version']}, {manifest['created']}).

Files: `model.joblib` (inference weights: feature index, float32 weights, classes; loads with numpy
only), `estimators.joblib` (the fitted scikit-learn `DictVectorizer`/`LogisticRegression` objects, for
inspection or re-use), `manifest.json` (versions, seed, hyper-parameters, label sets, document lists, scores).

## Data and licenses

- Corpus: {data['corpus']}. GUM annotations are licensed **CC-BY 4.0** (Zeldes, A. 2017. The GUM Corpus:
  Creating Multilayer Resources in the Classroom. *Language Resources and Evaluation* 51(3)).
- Genres used (train/dev/test): {', '.join(data['genres_used'])}.
- Genres excluded: {', '.join(data['genres_excluded'])} (fiction, essay, letter, podcast and whow texts are
  BY-NC-SA; reddit texts are withheld upstream). Nothing from these genres was read in training or selection.
- Documents: {len(data['train_docs'])} train, {len(data['dev_docs'])} dev (model selection), {len(data['test_docs'])} test (report only).
- GUM relation labels are mapped to the dtdialog inventory with `parsers.relations.from_gum`.

## Scores (RST-Parseval, micro F1 x 100; `parsers/parseval.py`)

| setting | Seg | Span | Nuc | Rel | Full | non-default P / R |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}

"End to end" parses raw document text (spaCy `en_core_web_sm` analysis, predicted EDUs);
"gold EDUs" builds trees over the gold segmentation. The isanlp-rst figures are as published
for its GUM model and are not re-measured here.

## Limits

Linear models over spaCy-small features: segmentation errors propagate into every tree score;
cross-sentence structure is greedy and sees no paragraph breaks; rare relations (Topic-Change,
Comparison, Summary) are seldom predicted.
"""


def _train_neural(args: argparse.Namespace) -> dict[str, Any]:
    import importlib.util

    from parsers.gum import read_splits
    from parsers.neural.training import DEFAULT_CACHE, NeuralSettings, train_neural

    read_splits(args.gum)  # a wrong --gum is the likelier mistake: say so before anything else
    if importlib.util.find_spec("torch") is None:
        raise ModelNotAvailableError("training the neural parser needs torch: pip install 'dtdialog[train]'")

    epochs = {"seg_epochs": 1, "tree_epochs": 1} if args.quick else {}
    settings = NeuralSettings(seed=args.seed, threads=args.threads, **epochs)
    return train_neural(args.gum, args.out, settings=settings, limit=args.limit,
                        cache_dir=args.cache or DEFAULT_CACHE, resume=args.resume, report_test=not args.no_test)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m parsers.train", description=__doc__.split("\n\n")[0])
    ap.add_argument("--parser", choices=("trained", "neural"), default="trained",
                    help="trained: the scikit-learn parser (default); neural: MiniLM features + small heads")
    ap.add_argument("--gum", type=Path, default=Path("../shared/data/gum_rst"), help="GUM RST folder (splits.tsv, lisp_binary/)")
    ap.add_argument("--out", type=Path, required=True, help="model directory to write (model files, manifest.json)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--limit", type=int, default=None, help="use only the first N documents of each split (quick runs)")
    ap.add_argument("--cache", type=Path, default=None, help="directory to cache spaCy analyses (and, for neural, "
                    "MiniLM word vectors) between runs; neural default $DTDIALOG_HOME/neural-parser")
    ap.add_argument("--no-test", action="store_true", help="skip the test-set report")
    ap.add_argument("--quick", action="store_true", help="one hyper-parameter setting per component / one epoch per "
                    "head (fast smoke runs)")
    ap.add_argument("--resume", action="store_true", help="neural: continue from the checkpoints in OUT/checkpoints")
    ap.add_argument("--threads", type=int, default=2, help="neural: torch CPU threads for training")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    if args.limit is not None and args.limit <= 0:
        print("error: --limit must be positive", file=sys.stderr)
        return 2
    if args.parser != "neural" and args.resume:
        print("error: --resume applies to --parser neural only", file=sys.stderr)
        return 2
    grid: dict[str, Any] = ({"seg_cs": (1.0,), "struct_cs": (1.0,), "label_cs": (1.0,), "default_biases": (1.0,),
                              "size_penalties": (0.0,)}
                             if args.quick else {})
    try:
        if args.parser == "neural":
            manifest = _train_neural(args)
        else:
            manifest = train(args.gum, args.out, seed=args.seed, limit=args.limit, cache_dir=args.cache,
                             report_test=not args.no_test, **grid)
    except DTDialogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({k: manifest["scores"][k] for k in manifest["scores"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
