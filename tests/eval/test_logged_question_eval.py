"""``eval.logged_question``: the rows of the titles-against-bodies protocol, the fit, the judged posts, the run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eval.coverage.split import held_out
from eval.logged_question import JUDGED, cross_fit, fit_model, main, match_rows, read_judged
from parsers.errors import InputError


def _unit(rows):
    m = np.asarray(rows, dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_rows_find_the_own_opening_unless_the_coin_removed_it():
    openings = _unit([[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    messages = _unit([[1, 0.2, 0], [0.1, 1, 0.3]])
    terms = [frozenset({"a", "b"}), frozenset({"c"})]
    opening_terms = [frozenset({"a"}), frozenset({"c"}), frozenset()]
    rows = match_rows(["m0", "m1"], messages, terms, openings, opening_terms, own=[0, 1])
    assert [r.own for r in rows] == [True, True] and rows[0].values[2] == 0.5 and rows[1].values[2] == 1.0
    assert rows[0].values[1] == pytest.approx(rows[0].values[0] - messages[0][1])
    removed = match_rows(["m0", "m1"], messages, terms, openings, opening_terms, own=[0, 1], removed=frozenset({"m1"}))
    assert [r.own for r in removed] == [True, False] and removed[1].values[0] < rows[1].values[0]


def test_the_fit_needs_both_outcomes_and_cross_fits_by_fold():
    rows = match_rows([f"m{i}" for i in range(3)], _unit(np.eye(3)), [frozenset()] * 3, _unit(np.eye(3)),
                      [frozenset()] * 3, own=[0, 1, 2])
    with pytest.raises(InputError, match="both with and without"):
        fit_model(rows, encoder="x")
    rng = np.random.default_rng(0)
    openings = _unit(rng.normal(size=(40, 8)))
    messages = _unit(openings + rng.normal(scale=0.25, size=(40, 8)))
    keys = [f"m{i}" for i in range(40)]
    rows = match_rows(keys, messages, [frozenset()] * 40, openings, [frozenset()] * 40, own=list(range(40)),
                      removed=frozenset(keys[::2]))
    held = cross_fit(rows, [i % 5 for i in range(40)], encoder="x")
    own = [p for p, r in zip(held, rows) if r.own]
    other = [p for p, r in zip(held, rows) if not r.own]
    assert own and other and np.mean(own) > np.mean(other)


def test_judged_posts_are_checked_line_by_line(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text('{"id": "a", "dialogue": "d", "asks_help": true, "verdict": "right"}\n'
                    '{"id": "b", "dialogue": "d", "asks_help": true, "verdict": "fine"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="j.jsonl:2: verdict must be"):
        read_judged(path)
    with pytest.raises(InputError, match="no judged posts"):
        read_judged(tmp_path / "none.jsonl")


def test_the_judged_posts_come_from_the_half_the_coverage_test_never_uses():
    first = read_judged(JUDGED)
    second = read_judged(JUDGED.with_name("judged_logged_openings_second.jsonl"))
    assert len(first) >= 40 and not any(held_out(j["id"]) for j in first)
    assert {j["id"] for j in second} <= {j["id"] for j in first}
    for row in map(json.loads, JUDGED.read_text(encoding="utf-8").splitlines()):
        assert row["why"].strip()


@pytest.mark.slow
@pytest.mark.dense
@pytest.mark.shared_data
def test_the_run_fits_a_model_that_counts_for_the_papers_question_and_no_judged_post(shared_data, tmp_path, capsys):
    from dtdialog.ranking.logged_questions import LoggedQuestionModel

    assert main(["--data-dir", str(shared_data), "--out", str(tmp_path / "out"), "--models-dir", str(tmp_path),
                 "--no-progress"]) == 0
    report = json.loads((tmp_path / "out" / "logged_question.json").read_text(encoding="utf-8"))
    assert report["mechanics"]["titles"] == 497 and report["mechanics"]["held_out_auc"] > 0.85
    assert report["judged_posts"]["counted"] == 0 and report["judged_posts"]["max_probability"] < report["bar"]
    assert all(p["dialogue"] == "no_start-paper-001" and p["probability"] >= report["bar"]
               for p in report["paper"].values())
    assert LoggedQuestionModel.load(tmp_path / "logged-question-v1.json").to_dict() == report["model"]
    assert "The logged-opening evidence" in capsys.readouterr().out


def test_a_missing_judged_file_is_a_one_line_error(shared_data, tmp_path, capsys):
    assert main(["--data-dir", str(shared_data), "--judged", str(tmp_path / "none.jsonl"),
                 "--out", str(tmp_path / "out"), "--models-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: no judged posts") and "\n" not in err
    assert not (tmp_path / "logged-question-v1.json").exists()
