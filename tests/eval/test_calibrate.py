"""Fitting the confidence calibrator, the ECE and the reliability table, on synthetic rows."""

from __future__ import annotations

import random

import pytest

from dtdialog.selection.confidence import Calibrator
from eval.calibrator import cross_fit, ece, fit_calibrator, fold_of, plot_reliability, reliability
from eval.open_pool import OpenPoolRow


def _rows(n=400, seed=3):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        logit = rng.uniform(-3, 3)
        margin = rng.uniform(0, 2)
        correct = rng.random() < 1 / (1 + 2.718 ** -(1.5 * logit + margin - 1))
        rows.append(OpenPoolRow(dialogue_id=f"d{i}", question=f"question {i}", answerable=True, correct=correct,
                                top_id="a", score=logit, values={"logit": logit, "margin": margin, "dense": 0.5}))
    return rows


def test_fit_learns_that_a_higher_logit_is_more_often_right(tmp_path):
    cal = fit_calibrator(_rows(), ranker="learned", model_name="ranker-v1")
    low, high = cal.probability({"logit": -2, "margin": 1}), cal.probability({"logit": 2, "margin": 1})
    assert 0 <= low < high <= 1
    loaded = Calibrator.load(cal.save(tmp_path / "c.json"))
    assert loaded.probability({"logit": 1, "margin": 0.5}) == pytest.approx(cal.probability({"logit": 1, "margin": 0.5}))
    assert loaded.model_name == "ranker-v1"


def test_fit_refuses_rows_of_one_class():
    rows = [r for r in _rows() if r.correct]
    with pytest.raises(Exception, match="right and wrong"):
        fit_calibrator(rows, ranker="learned")


def test_cross_fit_is_held_out_and_calibrated_on_synthetic_data():
    rows = _rows(1000)
    folds = [fold_of(r.question) for r in rows]
    assert set(folds) == {0, 1, 2, 3, 4}
    probs = cross_fit(rows, folds, ranker="learned")
    assert all(0 <= p <= 1 for p in probs)
    assert ece(probs, [r.correct for r in rows]) < 0.08


def test_ece_and_reliability_by_hand(tmp_path):
    # bin [0.2, 0.3): confidence 0.25, 1 of 2 right (gap 0.25); bin [0.9, 1]: confidence 0.95, 2 of 2 right (gap 0.05)
    probs, correct = [0.25, 0.25, 0.95, 0.95], [True, False, True, True]
    table = reliability(probs, correct)
    assert [(b["n"], b["accuracy"]) for b in table] == [(2, 0.5), (2, 1.0)]
    assert ece(probs, correct) == pytest.approx(0.5 * 0.25 + 0.5 * 0.05)
    assert ece([1.0, 0.0], [True, False]) == 0.0
    assert plot_reliability(tmp_path / "r.png", probs, correct, title="t").stat().st_size > 1000
