"""``eval.out_of_scope``: its generated texts, the threshold fit on halves, the report, and a real run."""

from __future__ import annotations

import json
import random

import pytest

from eval import out_of_scope as oos
from eval.out_of_scope import Rule, Scored, asks_for_help, fit, gibberish, markdown, question_texts, rates, split_real


def test_generated_gibberish_is_seeded_and_varied():
    a, b = gibberish(random.Random(5), 30), gibberish(random.Random(5), 30)
    assert a == b and len(set(a)) > 20
    assert gibberish(random.Random(6), 30) != a


def test_rates_count_a_message_as_answered_only_in_scope_and_above_threshold():
    items = [Scored("twitter", "a", None, 0.9, 1.0), Scored("twitter", "b", None, 0.2, 50.0),
             Scored("greeting", "c", "greeting", 0.99, 0.0)]
    assert rates(Rule(0.5), items, items, items)["oos_answered"] == round(1 / 3, 4)
    assert rates(Rule(0.5, 40.0), items, items, items)["oos_answered"] == round(2 / 3, 4)  # b is rescued by its mass
    real = [Scored("reddit", "a", None, 0.9, 1.0), Scored("reddit", "b", None, 0.2, 50.0),
            Scored("reddit", "c", "vague", 0.99, 0.0)]
    assert rates(Rule(0.5), items, items, real)["real_refused"]["reddit"] == round(1 / 3, 4)  # vague is not refused
    assert rates(Rule(0.5), items, items, real)["real_vague"]["reddit"] == round(1 / 3, 4)


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
    assert fitted["oos_bot_answered"] <= oos.FIT_OOS
    assert rule.threshold == 0.8 and fitted["real_refused"]["reddit"] == 0.6  # 0.4 would let 4 gum texts through
    for q in oos.QUANTILES:
        for m in oos.MASSES:
            r = rates(Rule(_Profile().threshold(q), m), oos_items, builtin, reddit)
            if r["builtin_answered_leave_one_out"] >= oos.TARGET_BUILTIN and r["oos_bot_answered"] <= oos.FIT_OOS:
                assert fitted["mean_refused"] <= r["mean_refused"]


def test_question_files_give_title_and_full_sets_and_posts_that_ask_are_told_apart(tmp_path):
    jsonl = tmp_path / "qs.jsonl"
    jsonl.write_text(json.dumps({"title": "Is idling bad for your engine?", "body": "I idle a lot &amp; wonder."}) + "\n"
                     + json.dumps({"question": "Why do my brakes squeal?"}) + "\n", encoding="utf-8")
    assert question_texts(jsonl, "qs") == [("qs_full", "Is idling bad for your engine? I idle a lot & wonder.", True),
                                           ("qs_title", "Is idling bad for your engine?", True),
                                           ("qs", "Why do my brakes squeal?", True)]
    lines = tmp_path / "more.txt"
    lines.write_text("my car pulls left\n\nbattery dies overnight\n", encoding="utf-8")
    assert [t for _, t, _ in question_texts(lines, "more")] == ["my car pulls left", "battery dies overnight"]
    assert asks_for_help("Car shakes at 60 mph. Any ideas?") and asks_for_help("What could cause a whine")
    assert not asks_for_help("Towed this gem today...thought I'd share with my fellow mechanics.")
    pairs = [Scored(s, str(i // 2), None, 0.5) for i, s in enumerate(["m_full", "m_title"] * 20)]
    fit_half, test_half = split_real(pairs, random.Random(3))
    assert fit_half and test_half and {x.text for x in fit_half}.isdisjoint({x.text for x in test_half})


def test_the_report_prints_every_target_figure_on_small_data():
    """Small data: the markdown names each real set with its refused and vague rates, and the targets."""
    oos_items = [Scored("gum", "a", None, 0.1), Scored("greeting", "hi", "greeting", 0.0)]
    builtin = [Scored("builtin", "q", None, 0.9, own_score=0.9, own_mass=0.0)]
    real = [Scored("mechanics_full", "q1 body", None, 0.9), Scored("mechanics_title", "q1", "vague", 0.9),
            Scored("reddit", "post", None, 0.1, asks=True), Scored("reddit", "photo", None, 0.1, asks=False)]
    rule = Rule(0.5)
    r = rates(rule, oos_items, builtin, real)
    assert r["real_refused"] == {"mechanics_full": 0.0, "mechanics_title": 0.0, "reddit": 1.0, "reddit_asks": 1.0}
    assert r["real_vague"]["mechanics_title"] == 1.0 and r["real_sizes"]["reddit_asks"] == 1
    report = {"seed": 1, "data_dir": "d", "files": [], "index_dialogues": 1, "ranker": "rules", "language_id": "x",
              "sizes": {}, "reddit_not_asking": 1, "fitted_quantile": 0.1, "fitted": {"mass": None, "dense_floor": None,
              "dense_sure": None}, "fit": r, "test": r, "default_quantile": 0.2, "default_test": r, "default_all": r,
              "oos_replies": {"answer": 0.001, "out_of_scope": 0.99}, "oos_replies_fitted": {"answer": 0.002},
              "oos_answered_examples": [], "refused_examples": {"reddit": ["[domain 0.10/0.0/0.00] post"]}}
    page = markdown(report)
    assert "| mechanics_title refused / vague |" in page and "0.0% / 100.0%" in page
    assert "out-of-scope answered <= 1%" in page and "ask nothing" in page and "post" in page
    assert "answer 0.10%" in page


def test_end_to_end_replies_are_asked_with_the_gate_lifted_and_counted_under_each_rule():
    from types import SimpleNamespace

    class Manager:
        scope = "the gate"

        def start_session(self):
            return "s"

        def handle(self, *, session_id, text):
            assert self.scope is None  # the gate is lifted: the rule decides afterwards
            return SimpleNamespace(kind="answer" if "brake" in text else "abstain")

    items = [Scored("gum", "brake pads", None, 0.9), Scored("gum", "my mortgage", None, 0.9),
             Scored("gum", "a loan", None, 0.1), Scored("greeting", "hi", "greeting", 0.0)]
    manager = Manager()
    oos.end_to_end(manager, items)
    assert manager.scope == "the gate" and [x.reply for x in items] == ["answer", "abstain", "abstain", None]
    assert oos.reply_shares(Rule(0.5), items) == {"abstain": 0.25, "answer": 0.25, "out_of_scope": 0.5}
    assert rates(Rule(0.5), items, items, [])["oos_answered"] == 0.5
    assert rates(Rule(0.5), items, items, [])["oos_bot_answered"] == 0.25  # the abstention is no answer


def test_missing_data_dir_is_a_one_line_error(tmp_path, capsys):
    assert oos.main(["--data-dir", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "not found" in capsys.readouterr().err


@pytest.mark.slow
def test_a_real_run_writes_the_report(shared_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DTDIALOG_RANKER", "rules")
    assert oos.main(["--data-dir", str(shared_data), "--out", str(tmp_path), "--no-progress"]) == 0
    report = json.loads((tmp_path / "out_of_scope.json").read_text(encoding="utf-8"))
    assert report["sizes"]["oos"] > 1000 and report["sizes"]["reddit"] > 1000
    assert report["sizes"]["mechanics_full"] == report["sizes"]["mechanics_title"] > 400
    test = report["test"]
    assert test["oos_answered_by_source"]["gibberish"] == 0.0
    assert test["oos_answered_by_source"]["greeting"] == 0.0
    assert test["builtin_answered"] >= 0.95
    page = (tmp_path / "out_of_scope.md").read_text(encoding="utf-8")
    assert "mechanics_title refused / vague" in page and "reddit_asks refused / vague" in page
    capsys.readouterr()
