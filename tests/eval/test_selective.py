"""The open-pool protocol's coin and the selective measures (AURC, AUROC, operating point) on hand-computed cases."""

from __future__ import annotations

import pytest

from eval.open_pool import OpenPoolRow, open_pool_coin
from eval.selective import Operating, aurc, auroc, coverage_threshold, paired_aurc_ci, risk_coverage


def test_coin_is_seeded_and_removes_about_half():
    ids = [f"d{i}" for i in range(2000)]
    removed = open_pool_coin(ids, seed=13)
    assert removed == open_pool_coin(ids, seed=13)
    assert removed != open_pool_coin(ids, seed=14)
    assert 0.45 < len(removed) / len(ids) < 0.55
    # a dialogue's coin does not depend on which other dialogues are in the run
    assert open_pool_coin(ids[:100], seed=13) == removed & set(ids[:100])


def test_risk_coverage_and_aurc_by_hand():
    # most confident first: right, wrong, right, wrong -> risks 0, 1/2, 1/3, 2/4
    cov, risk = risk_coverage([0.9, 0.8, 0.7, 0.1], [True, False, True, False])
    assert list(cov) == [0.25, 0.5, 0.75, 1.0]
    assert list(risk) == pytest.approx([0.0, 0.5, 1 / 3, 0.5])
    assert aurc([0.9, 0.8, 0.7, 0.1], [True, False, True, False]) == pytest.approx((0 + 0.5 + 1 / 3 + 0.5) / 4)
    # a perfect ranking of 2 right then 2 wrong: 0, 0, 1/3, 1/2
    assert aurc([4, 3, 2, 1], [True, True, False, False]) == pytest.approx((1 / 3 + 1 / 2) / 4)


def test_ties_earn_no_credit():
    # a constant confidence is ranked pessimistically: wrong answers first
    assert aurc([0.5] * 4, [True, True, False, False]) == pytest.approx((1 + 1 + 2 / 3 + 1 / 2) / 4)


def test_auroc_by_hand():
    assert auroc([3, 2, 1], [True, False, False]) == 1.0
    assert auroc([1, 2, 3], [True, False, False]) == 0.0
    assert auroc([1, 1], [True, False]) == 0.5


def _row(i, answerable, correct, confidence):
    return OpenPoolRow(dialogue_id=f"d{i}", question="q", answerable=answerable, correct=correct,
                       top_id="a" if confidence is not None else None, score=confidence, confidence=confidence)


def test_operating_point_at_80_percent_of_answerable():
    rows = [_row(0, True, True, 0.9), _row(1, True, False, 0.8), _row(2, True, True, 0.7), _row(3, True, True, 0.6),
            _row(4, True, True, 0.2), _row(5, False, False, 0.75), _row(6, False, False, 0.1)]
    t = coverage_threshold(rows, 0.8)
    assert t == 0.6  # 4 of the 5 answerable questions reach 0.6
    op = Operating.at(rows, t)
    assert (op.answered_right, op.answered_wrong, op.abstained) == (3, 2, 2)
    assert op.answerable_coverage == pytest.approx(0.8)
    assert op.false_answer_rate == pytest.approx(0.5)  # one of the two questions with no right answer


def test_paired_ci_of_identical_systems_is_zero_and_of_a_better_one_excludes_zero():
    good = [_row(i, True, i % 2 == 0, 1.0 if i % 2 == 0 else 0.0) for i in range(200)]
    bad = [_row(i, True, i % 2 == 0, 0.0 if i % 2 == 0 else 1.0) for i in range(200)]
    assert paired_aurc_ci(good, good, n_resamples=50, seed=1) == (0.0, 0.0, 0.0)
    diff, lo, hi = paired_aurc_ci(good, bad, n_resamples=200, seed=1)
    assert diff < 0 and hi < 0


@pytest.mark.slow
def test_a_team_runs_it_on_its_own_dialogue_file(tmp_path, capsys):
    """``--data FILE --format jsonl``: the file is both the questions and the pool; the report, its JSON and the
    risk-coverage picture are written, and the coin removed about half of the gold answers."""
    import json

    from data.builtin import load_builtin_corpus
    from eval.selective import main

    own = tmp_path / "our_logs.jsonl"
    own.write_text("".join(json.dumps(d.to_dict()) + "\n" for d in load_builtin_corpus()[:40]), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["--data", str(own), "--format", "jsonl", "--systems", "dtq,bm25", "--ranker", "rules",
                 "--bootstrap", "50", "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    [result] = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert result["dataset"] == "our_logs" and result["n"] == 40 and 10 <= result["unanswerable"] <= 30
    dtq = result["systems"]["dtq"]
    assert 0.0 <= dtq["aurc"] <= 1.0 and "vs_bm25" in dtq
    op = dtq["operating"]
    assert op["answered_right"] + op["answered_wrong"] + op["abstained"] == 40
    assert op["answerable_coverage"] >= 0.8
    assert (out / "risk_coverage_our_logs.png").stat().st_size > 1000
    assert "our_logs" in (out / "results.md").read_text(encoding="utf-8")


def test_data_without_format_is_a_one_line_error(tmp_path, capsys):
    from eval.selective import main

    (tmp_path / "x.jsonl").write_text("", encoding="utf-8")
    assert main(["--data", str(tmp_path / "x.jsonl"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "--format" in err
