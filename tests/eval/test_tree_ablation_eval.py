"""The paired "with the tree - without" figures of the evaluations, on small hand-made results and a tiny run."""

from __future__ import annotations

import csv

import pytest

from eval.metrics import DialogueResult, StepResult, paired_metrics


def _dialogue(did: str, *correct: bool) -> DialogueResult:
    steps = tuple(StepResult(step=i + 1, gold_id="g", ranked_ids=("g", "x") if ok else ("x", "g"))
                  for i, ok in enumerate(correct))
    return DialogueResult(dialogue_id=did, steps=steps, has_followup=len(correct) > 1)


def test_a_known_gain_gives_a_positive_difference_whose_interval_excludes_zero():
    # with: 30 of 40 first answers right; without: the same 20 right and 10 more wrong; never the other way
    with_tree = [_dialogue(f"d{i}", i < 30) for i in range(40)]
    without = [_dialogue(f"d{i}", i < 20) for i in range(40)]
    diff = paired_metrics(with_tree, without, n_resamples=500, seed=1)
    qa = diff["Q-A"]
    assert qa.value == pytest.approx(0.25) and qa.low > 0 and qa.high <= 0.5 and qa.n == 40
    assert diff["P@1"].value == pytest.approx(0.25)
    assert paired_metrics(without, with_tree, n_resamples=500, seed=1)["Q-A"].high < 0


def test_identical_runs_differ_by_exactly_zero_and_only_shared_dialogues_are_paired():
    runs = [_dialogue("a", True, False), _dialogue("b", False), _dialogue("c", True, True)]
    diff = paired_metrics(runs, [*runs, _dialogue("extra", True)], n_resamples=200)
    assert all(m.value == m.low == m.high == 0 for m in diff.values() if m.value == m.value)
    assert diff["Q-A"].n == 3 and diff["Q-A1-C1-A2"].n == 2


def test_tree_ablation_adds_the_twins():
    from eval.reconstruct import with_tree_twins

    assert with_tree_twins(["keyword", "dtq"]) == ["keyword", "dtq", "dtq-no-dt"]
    assert with_tree_twins(["keyword"]) == ["keyword", "dtq", "dtq-no-dt"]
    assert with_tree_twins(["dtq-rules", "dtq"]) == ["dtq-rules", "dtq-rules-no-dt", "dtq", "dtq-no-dt"]


@pytest.mark.slow
def test_reconstruct_with_tree_ablation_reports_the_paired_columns_and_the_set_up(tmp_path, monkeypatch):
    from eval.reconstruct import main

    monkeypatch.setenv("DTDIALOG_RANKER", "rules")
    out = tmp_path / "out"
    assert main(["--dataset", "builtin", "--methods", "dtq", "--tree-ablation", "--limit", "4", "--bootstrap", "50",
                 "--out", str(out), "--no-progress"]) == 0
    text = (out / "results.md").read_text()
    assert "With the tree minus without it" in text and "| dtq - dtq-no-dt |" in text
    assert "engine without the tree, rules ranker" in text
    assert "Parser rules" in text and "commit " in text
    rows = list(csv.DictReader((out / "results.csv").open()))
    paired = [r for r in rows if r["method"] == "dtq - dtq-no-dt"]
    assert {"Q-A difference", "P@1 difference", "MRR difference"} <= {r["metric"] for r in paired}
    assert {r["method"] for r in rows} >= {"dtq", "dtq-no-dt"}


def test_selective_paired_accuracy_counts_only_answerable_questions_both_systems_saw():
    from eval.open_pool import OpenPoolRow
    from eval.selective import paired_accuracy_ci

    def row(i: int, correct: bool, answerable: bool = True) -> OpenPoolRow:
        return OpenPoolRow(dialogue_id=f"q{i}", question="", answerable=answerable, correct=correct, top_id="a",
                           score=0.0)

    with_tree = [row(i, i < 15) for i in range(20)] + [row(99, False, answerable=False)]
    without = [row(i, i < 5) for i in range(20)] + [row(99, False, answerable=False)]
    diff, lo, hi = paired_accuracy_ci(with_tree, without, n_resamples=300, seed=2)
    assert diff == pytest.approx(0.5) and 0 < lo <= diff <= hi


@pytest.mark.slow
def test_selective_with_tree_ablation_pairs_dtq_with_the_engine_without_the_tree(tmp_path, monkeypatch):
    import json

    from eval.selective import main

    monkeypatch.setenv("DTDIALOG_RANKER", "rules")
    out = tmp_path / "sel"
    assert main(["--dataset", "builtin", "--systems", "bm25", "--tree-ablation", "--limit", "6", "--bootstrap", "50",
                 "--out", str(out), "--no-progress"]) == 0
    result = json.loads((out / "results.json").read_text())[0]
    assert set(result["systems"]) == {"bm25", "dtq", "dtq-no-dt"}
    paired = result["systems"]["dtq"]["vs_dtq-no-dt"]
    assert paired["lo"] <= paired["diff"] <= paired["hi"] and "accuracy_diff" in paired
    assert "ranker_without_tree" in result["provenance"]
    assert "AURC dtq - dtq-no-dt" in (out / "results.md").read_text()
