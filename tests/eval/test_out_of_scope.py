"""``eval.out_of_scope``: its generated texts, the threshold fit on halves, the report, and a real run."""

from __future__ import annotations

import json
import random

import pytest

from eval import out_of_scope as oos
from eval.out_of_scope import Rule, Scored, fit, gibberish, rates


def test_generated_gibberish_is_seeded_and_varied():
    a, b = gibberish(random.Random(5), 30), gibberish(random.Random(5), 30)
    assert a == b and len(set(a)) > 20
    assert gibberish(random.Random(6), 30) != a


def test_rates_count_a_message_as_answered_only_in_scope_and_above_threshold():
    items = [Scored("twitter", "a", None, 0.9, 1.0), Scored("twitter", "b", None, 0.2, 50.0),
             Scored("greeting", "c", "greeting", 0.99, 0.0)]
    assert rates(Rule(0.5), items, items, items)["oos_answered"] == round(1 / 3, 4)
    assert rates(Rule(0.5, 40.0), items, items, items)["oos_answered"] == round(2 / 3, 4)  # b is rescued by its mass
    assert rates(Rule(0.5), items, items, items)["reddit_refused"] == round(2 / 3, 4)


def test_the_dense_rule_rescues_a_close_message_and_refuses_a_far_one():
    close = Scored("reddit", "a weird noise when I turn", None, 0.4, 2.0, dense=0.45)  # vocabulary says no
    far = Scored("twitter", "the printer jams", None, 0.9, 2.0, dense=0.2)  # vocabulary says yes
    middling = Scored("twitter", "x", None, 0.9, 2.0, dense=0.33)
    rule = Rule(0.5, None, dense_floor=0.3, dense_sure=0.4)
    assert close.answered(rule) and not far.answered(rule) and middling.answered(rule)
    assert not middling.answered(Rule(0.95, None, 0.3, 0.4))  # between the cosines the vocabulary decides
    assert not close.answered(Rule(0.5)) and far.answered(Rule(0.5))  # without a dense rule: the vocabulary alone
    assert not Scored("gum", "hi", "greeting", 0.9, 0.0, dense=0.9).answered(rule)  # refused before the domain check


class _Profile:
    def threshold(self, q: float) -> float:
        return q * 4  # quantile 0.2 -> threshold 0.8


def test_fit_keeps_both_targets_and_then_refuses_the_fewest_real_posts():
    oos_items = [Scored("gum", str(i), None, 0.07 * i) for i in range(10)]  # up to 0.63
    builtin = [Scored("builtin", str(i), None, 0.95, own_score=0.9, own_mass=0.0) for i in range(20)]
    reddit = [Scored("reddit", str(i), None, 0.5 + 0.05 * i, 5.0) for i in range(10)]  # 0.5 .. 0.95
    quantile, rule, fitted = fit(_Profile(), oos_items, builtin, reddit)
    assert fitted["builtin_answered_leave_one_out"] >= oos.TARGET_BUILTIN
    assert fitted["oos_answered"] <= oos.FIT_OOS
    assert rule.threshold == 0.8 and fitted["reddit_refused"] == 0.6  # 0.4 would let 4 gum texts through
    for q in oos.QUANTILES:
        for m in oos.MASSES:
            r = rates(Rule(_Profile().threshold(q), m), oos_items, builtin, reddit)
            if r["builtin_answered_leave_one_out"] >= oos.TARGET_BUILTIN and r["oos_answered"] <= oos.FIT_OOS:
                assert fitted["reddit_refused"] <= r["reddit_refused"]


def test_missing_data_dir_is_a_one_line_error(tmp_path, capsys):
    assert oos.main(["--data-dir", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "not found" in capsys.readouterr().err


@pytest.mark.slow
def test_a_real_run_writes_the_report(shared_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DTDIALOG_RANKER", "rules")
    assert oos.main(["--data-dir", str(shared_data), "--out", str(tmp_path), "--no-progress"]) == 0
    report = json.loads((tmp_path / "out_of_scope.json").read_text(encoding="utf-8"))
    assert report["sizes"]["oos"] > 1000 and report["sizes"]["reddit"] > 1000
    test = report["test"]
    assert test["oos_answered_by_source"]["gibberish"] == 0.0
    assert test["oos_answered_by_source"]["greeting"] == 0.0
    assert test["builtin_answered"] >= 0.95
    assert "real car posts refused" in (tmp_path / "out_of_scope.md").read_text(encoding="utf-8")
    capsys.readouterr()
