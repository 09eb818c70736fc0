"""Fitting and measuring the engine's confidence calibrator: Platt fits, cross-fitting over folds, reliability
tables and ECE (``eval.calibrate`` writes the shipped calibrators with them).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dtdialog.selection.confidence import LEARNED_FEATURES, RULES_FEATURES, Calibrator
from eval.report import save_figure
from parsers.errors import InputError

#: Folds of the cross-fit (the learned ranker's own folds when a question has one).
N_FOLDS = 5


def fold_of(question: str, folds=None) -> int:
    """Return the cross-validation fold of ``question``: the ranker's fold when it has one, else a stable hash."""
    from eval.out_of_fold import question_key

    key = question_key(question)
    if folds is not None and key in folds.held_out:
        return int(folds.held_out[key])
    return int(key, 16) % N_FOLDS


def _matrix(rows: Sequence, names: Sequence[str]) -> np.ndarray:
    return np.array([[float(r.values.get(n, 0.0)) for n in names] for r in rows], dtype=float).reshape(len(rows),
                                                                                                       len(names))


def fit_calibrator(rows: Sequence, *, ranker: str, model_name: str = "", manifest: dict | None = None,
                   C: float = 1.0) -> Calibrator:
    """Return a ``Calibrator`` fitted (Platt: logistic regression on standardised numbers) to ``rows``.

    ``rows`` carry ``values`` (``dtdialog.selection.confidence.step_features``) and ``correct``; a row without values
    (the system had no candidate) is left out: it never answers.
    """
    from sklearn.linear_model import LogisticRegression

    names = LEARNED_FEATURES if ranker == "learned" else RULES_FEATURES
    rows = [r for r in rows if r.values]
    y = np.array([bool(r.correct) for r in rows])
    if len(rows) < 4 or y.all() or not y.any():
        raise InputError("calibration needs both right and wrong answers (at least 4 rows)")
    X = _matrix(rows, names)
    means, scales = X.mean(axis=0), X.std(axis=0)
    scales[scales == 0] = 1.0
    model = LogisticRegression(C=C, max_iter=1000).fit((X - means) / scales, y)
    return Calibrator(ranker=ranker, feature_names=tuple(names), coef=tuple(float(c) for c in model.coef_[0]),
                      intercept=float(model.intercept_[0]), means=tuple(float(m) for m in means),
                      scales=tuple(float(s) for s in scales), model_name=model_name, manifest=dict(manifest or {}),
                      lows=tuple(float(v) for v in X.min(axis=0)), highs=tuple(float(v) for v in X.max(axis=0)))


def cross_fit(rows: Sequence, folds: Sequence[int], *, ranker: str) -> list[float]:
    """Return each row's confidence from a calibrator fitted on the rows of the other folds (0 without values)."""
    out = [0.0] * len(rows)
    for fold in sorted(set(folds)):
        train = [r for r, f in zip(rows, folds) if f != fold]
        calibrator = fit_calibrator(train, ranker=ranker)
        for i, (r, f) in enumerate(zip(rows, folds)):
            if f == fold and r.values:
                out[i] = calibrator.probability(r.values)
    return out


def reliability(probs: Sequence[float], correct: Sequence[bool], *, bins: int = 10) -> list[dict]:
    """Return the reliability table: per equal-width bin, its count, mean confidence and accuracy."""
    p = np.asarray(probs, dtype=float)
    y = np.asarray(correct, dtype=float)
    edges = np.linspace(0.0, 1.0, bins + 1)
    idx = np.clip(np.digitize(p, edges[1:-1], right=False), 0, bins - 1)
    table = []
    for b in range(bins):
        mask = idx == b
        if mask.any():
            table.append({"lo": float(edges[b]), "hi": float(edges[b + 1]), "n": int(mask.sum()),
                          "confidence": float(p[mask].mean()), "accuracy": float(y[mask].mean())})
    return table


def ece(probs: Sequence[float], correct: Sequence[bool], *, bins: int = 10) -> float:
    """Return the expected calibration error: sum over bins of (bin share) x |accuracy - mean confidence|."""
    n = len(probs)
    if n == 0:
        return float("nan")
    return float(sum(b["n"] / n * abs(b["accuracy"] - b["confidence"]) for b in reliability(probs, correct, bins=bins)))


def plot_reliability(path: Path, probs: Sequence[float], correct: Sequence[bool], *, title: str) -> Path | None:
    """Draw the reliability diagram (accuracy per confidence bin against the diagonal); return the path."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    table = reliability(probs, correct)
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], "--", color="grey", label="perfect calibration")
    ax.bar([(b["lo"] + b["hi"]) / 2 for b in table], [b["accuracy"] for b in table], width=0.09, alpha=0.6,
           label="accuracy in bin")
    ax.plot([b["confidence"] for b in table], [b["accuracy"] for b in table], "o-", color="C3",
            label="mean confidence vs accuracy")
    for b in table:
        ax.annotate(str(b["n"]), ((b["lo"] + b["hi"]) / 2, b["accuracy"]), ha="center", va="bottom", fontsize=7)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("predicted P(answer is right)")
    ax.set_ylabel("observed share right")
    ax.set_title(f"{title}\nECE {ece(probs, correct):.3f}")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path
