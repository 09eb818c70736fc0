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


def _session(did: str, turns, *, wrong: int = 0, bot: str = "dtq"):
    from eval.dialogue.customer import Session

    return Session(dialogue_id=did, bot=bot, n_steps=len(turns), gold_present=True, step_turns=list(turns),
                   wrong_answers=wrong)


def test_multi_part_sessions_are_summarised_apart_with_and_without_the_tree():
    from eval.dialogue.run import multi_part

    parts = {"one": 1, "two": 2, "three": 3}
    by_bot = {"dtq": [_session("one", [None], wrong=4), _session("two", [1, 2]), _session("three", [2, None], wrong=1)],
              "dtq-no-dt": [_session("one", [1]), _session("two", [None, None], wrong=4),
                            _session("three", [None, None], wrong=4)]}
    out = multi_part(by_bot, parts, n_resamples=200, seed=1)
    assert out["n"] == 2  # the one-part question is left out, whatever happened to it
    assert out["dtq"]["step1_success@3"]["value"] == 1.0 and out["dtq-no-dt"]["step1_success@3"]["value"] == 0.0
    assert out["dtq_minus_no_dt"]["step1_success@3"]["value"] == pytest.approx(1.0)
    assert out["dtq_minus_no_dt"]["wrong_per_session"]["value"] == pytest.approx((0 - 4 + 1 - 4) / 2)
    # part i is answered at step i: the steps after the first are scored too, pooled and one by one
    assert out["dtq"]["step2_success@3"]["value"] == 0.5 and out["dtq-no-dt"]["step2_success@3"]["value"] == 0.0
    assert out["dtq"]["later_steps_success@3"]["value"] == 0.5 and out["dtq"]["later_steps_success@3"]["n"] == 2
    assert out["dtq_minus_no_dt"]["later_steps_success@3"]["value"] == pytest.approx(0.5)
    assert out["dtq_minus_no_dt"]["step2_success@3"]["value"] == pytest.approx(0.5)


@pytest.mark.slow
def test_dialogue_with_tree_ablation_pairs_the_engines_and_reports_multi_part_sessions(tmp_path, monkeypatch):
    import json

    from eval.dialogue.cli import main

    monkeypatch.setenv("DTDIALOG_RANKER", "rules")
    out = tmp_path / "run"
    assert main(["--dataset", "builtin", "--limit", "3", "--bots", "bm25", "--tree-ablation", "--out", str(out),
                 "--no-progress", "--sample-transcripts", "0", "--bootstrap", "50"]) == 0
    data = json.loads((out / "results.json").read_text())
    res = data["results"][0]
    assert set(res["pools"]["closed"]) == {"bm25", "dtq", "dtq-no-dt"}
    paired = res["pools"]["closed"]["dtq"]["vs_dtq-no-dt"]
    assert {"step1_success@3", "wrong_per_session"} <= set(paired)
    assert set(res["multi_part"]) == {"closed", "open"}
    assert data["setup"]["ranker_without_tree"]["name"] == "rules"
    text = (out / "results.md").read_text()
    assert "dtq - dtq-no-dt (paired bootstrap over sessions)" in text and "multi-part questions" in text
