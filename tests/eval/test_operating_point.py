"""The held-out operating point: folds grouped by dialogue, and a threshold that carries over to unseen rows."""

from __future__ import annotations

import math
import random

import pytest

from eval.open_pool import OpenPoolRow
from eval.operating_point import (
    coverage_quantile,
    crossfit,
    fit_operating,
    grouped_folds,
    transfer,
)


def _rows(n_dialogues: int, *, seed: int, shift: float = 0.0, steps: int = 2) -> list[OpenPoolRow]:
    """Rows whose rule score makes a right answer likelier; unanswerable rows score lower on average."""
    rng = random.Random(seed)
    rows = []
    for d in range(n_dialogues):
        for step in range(steps):
            answerable = rng.random() < 0.5
            score = rng.gauss(0.6 if answerable else 0.3, 0.2) + shift
            correct = answerable and rng.random() < 1 / (1 + math.exp(-6 * (score - 0.5 - shift)))
            rows.append(OpenPoolRow(dialogue_id=f"s{seed}-d{d}", question="q", answerable=answerable,
                                    correct=correct, top_id="a", score=score,
                                    values={"score": score, "margin": rng.random()}, step=step))
    return rows


def test_folds_are_grouped_by_dialogue_disjoint_balanced_and_seeded():
    groups = [f"d{i // 3}" for i in range(300)]  # 100 dialogues of 3 rows each
    folds = grouped_folds(groups, k=5, seed=7)
    by_group: dict[str, set[int]] = {}
    for g, f in zip(groups, folds):
        by_group.setdefault(g, set()).add(f)
    assert all(len(fs) == 1 for fs in by_group.values())  # a dialogue never straddles two folds
    sizes = [sum(1 for fs in by_group.values() if f in fs) for f in range(5)]
    assert sizes == [20] * 5
    assert grouped_folds(groups, k=5, seed=7) == folds
    assert grouped_folds(groups, k=5, seed=8) != folds
    # the fold of a dialogue does not depend on the order the rows come in
    assert grouped_folds(groups[::-1], k=5, seed=7) == folds[::-1]
    with pytest.raises(Exception, match="at least 2"):
        grouped_folds(groups, k=1, seed=7)


def test_coverage_quantile_answers_the_target_share_of_answerable_rows():
    conf = [0.9, 0.8, 0.7, 0.6, 0.2, 0.75, 0.1]
    answerable = [True, True, True, True, True, False, False]
    assert coverage_quantile(conf, answerable, 0.8) == 0.6  # 4 of the 5 answerable reach it
    assert coverage_quantile(conf, [False] * 7, 0.8) == float("-inf")


def test_held_out_coverage_lands_near_the_target():
    rows = _rows(1500, seed=1)
    folds = grouped_folds([r.dialogue_id for r in rows], k=5, seed=13)
    held = crossfit(rows, folds, ranker="rules", coverage=0.8, name="synthetic", n_resamples=200)
    assert len(held.folds) == 5 and all(abs(f["coverage"] - 0.8) < 0.06 for f in held.folds)
    assert abs(held.coverage[0] - 0.8) < 0.03 and held.coverage[1] <= 0.8 <= held.coverage[2]
    assert held.gap < 0.03 and held.to_dict()["within_band"]
    # unanswerable rows score lower: fewer of them get an answer than of the answerable ones
    assert held.false_answer_rate[0] < 0.5
    again = crossfit(rows, folds, ranker="rules", coverage=0.8, name="synthetic", n_resamples=200)
    assert again.to_dict() == held.to_dict()  # deterministic


def test_a_threshold_read_off_in_sample_rows_misses_and_one_from_another_distribution_misses_more():
    rows = _rows(1500, seed=2)
    folds = grouped_folds([r.dialogue_id for r in rows], k=5, seed=13)
    fit = fit_operating(rows, folds, ranker="rules", coverage=0.8)
    assert fit.threshold == pytest.approx(fit.threshold) and 0 < fit.threshold < 1
    # a set whose scores sit higher (another domain): the same threshold answers far more than 80% of it
    shifted = _rows(800, seed=3, shift=0.3)
    moved = transfer(rows, folds, shifted, ranker="rules", coverage=0.8, name="a -> b", n_resamples=100)
    assert moved.coverage[0] > 0.9 and not moved.to_dict()["within_band"]


def test_measure_and_fit_on_pick_rows_without_mixing_a_dialogue_across_folds():
    rows = _rows(600, seed=4, steps=3)
    folds = grouped_folds([r.dialogue_id for r in rows], k=4, seed=1)
    later = [r.step > 0 for r in rows]
    held = crossfit(rows, folds, ranker="rules", coverage=0.8, name="later", measure=later,
                    fit_on=[not x for x in later], n_resamples=50)
    assert held.n == sum(later)
    assert sum(f["n"] for f in held.folds) == sum(later)


def test_balanced_threshold_splits_the_gap_between_sets_whose_confidences_differ():
    low = [OpenPoolRow(dialogue_id=f"a{i}", question="q", answerable=True, correct=True, top_id="x", score=0.0)
           for i in range(100)]
    high = [OpenPoolRow(dialogue_id=f"b{i}", question="q", answerable=True, correct=True, top_id="x", score=0.0)
            for i in range(100)]
    conf = [i / 100 for i in range(100)] + [0.2 + i / 100 for i in range(100)]
    labels = ["a"] * 100 + ["b"] * 100
    from eval.operating_point import balanced_threshold

    t = balanced_threshold(conf, low + high, labels, 0.8)
    cov_a = sum(c >= t for c in conf[:100]) / 100
    cov_b = sum(c >= t for c in conf[100:]) / 100
    # the pooled quantile would favour neither; the balanced one leaves both sets equally far from 80%
    assert abs(cov_a - 0.8) == pytest.approx(abs(cov_b - 0.8), abs=0.011) and cov_a < 0.8 < cov_b


@pytest.mark.slow
def test_the_command_writes_its_report_on_small_data(tmp_path, capsys):
    """``--crossfit`` on the first built-in dialogues: the Markdown table, the JSON and the picture, with held-out
    figures per fold for first and later answers."""
    import json

    from eval.selective import main

    out = tmp_path / "out"
    assert main(["--dataset", "builtin", "--limit", "60", "--crossfit", "--folds", "3", "--ranker", "rules",
                 "--bootstrap", "50", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "crossfit.md" in printed
    result = json.loads((out / "crossfit.json").read_text(encoding="utf-8"))
    [alone] = [h for h in result["first"] if h["name"] == "alone | builtin"]
    assert len(alone["folds"]) == 3 and sum(f["n"] for f in alone["folds"]) == 60
    assert 0.0 <= alone["coverage"][1] <= alone["coverage"][0] <= alone["coverage"][2] <= 1.0
    assert result["sets"][0]["later"] > 0 and result["later"]  # the built-in dialogues go on after a follow-up
    assert "alone | builtin" in (out / "crossfit.md").read_text(encoding="utf-8")
    assert (out / "crossfit.png").stat().st_size > 1000


@pytest.mark.parametrize("argv, words", [
    (["--dataset", "builtin", "--crossfit", "--folds", "1"], "--folds"),
    (["--dataset", "builtin,nowhere", "--crossfit"], "unknown dataset"),
])
def test_bad_input_is_a_one_line_error(tmp_path, capsys, argv, words):
    from eval.selective import main

    assert main([*argv, "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and words in err and "\n" not in err
