"""The latency A/B compares two checkouts on the turns both ran, so a different mix of replies cannot move a p95."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.latency_ab import main, matched, pair_summary, summarise


def test_only_the_turns_both_arms_ran_are_compared():
    before = {"a": [10.0, 20.0, "answer"], "b": [30.0, 40.0, "answer"], "c": [50.0, None, "abstain"]}
    after = {"a": [11.0, 22.0, "answer"], "b": [33.0, None, "abstain"], "c": [55.0, None, "abstain"],
             "d": [99.0, 99.0, "answer"]}  # a question only one arm has never counts
    turns = matched(before, after)
    assert turns["first_turn"] == ([10.0, 30.0, 50.0], [11.0, 33.0, 55.0])
    assert turns["follow_up_turn"] == ([20.0], [22.0])  # "b" reached its follow-up in one arm only
    summary = pair_summary(before, after)
    assert summary["first_turn"]["turns"] == 3 and summary["follow_up_turn"]["turns"] == 1
    assert summary["first_turn"]["mean_ratio"] == pytest.approx(1.1)
    assert summary["all_turns"]["turns"] == 4


def test_the_summary_is_the_median_over_pairs():
    pairs = [{"all_turns": {"turns": 5, "p95_ratio": r, "mean_ratio": r}} for r in (1.3, 1.0, 1.1)]
    s = summarise(pairs)["all_turns"]
    assert s["median_p95_ratio"] == 1.1 and s["p95_ratios"] == [1.3, 1.0, 1.1] and s["turns"] == 5


def test_a_folder_that_is_no_checkout_is_one_line(tmp_path, capsys):
    assert main(["--before", str(tmp_path), "--after", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --before") and "not a dtdialog checkout" in err and err.count("\n") == 1


@pytest.mark.slow
@pytest.mark.dense
def test_two_runs_of_one_checkout_give_the_same_replies(tmp_path, monkeypatch):
    """End to end on a small index: both arms time every built-in question, and the same code replies the same.
    ``--out`` is relative, as a user types it, though each arm runs in its own checkout."""
    checkout = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(tmp_path)
    assert main(["--before", str(checkout), "--after", str(checkout), "--pairs", "1", "--answers", "300",
                 "--cache", "cache", "--out", "out", "--no-progress"]) == 0
    import json

    report = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert report["first_reply_kinds"]["before"] == report["first_reply_kinds"]["after"]
    assert report["summary"]["first_turn"]["turns"] == sum(report["first_reply_kinds"]["before"].values())
    assert (tmp_path / "out" / "results.md").read_text(encoding="utf-8").startswith("# Turn latency")


def test_a_child_that_would_time_another_checkouts_code_says_so(tmp_path):
    """Before: with an editable install of another checkout, the "before" arm imported that checkout's modules."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("latency_turns", Path(__file__).parents[2] / "eval" / "latency_turns.py")
    child = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(child)
    assert child.foreign_packages(Path(__file__).parents[2]) == []  # this checkout's own modules
    assert "dtdialog" in child.foreign_packages(tmp_path)  # the same modules, read as another checkout's
