"""``eval.already_tried``: the judged questions' loader, the first-answer shares, judge agreement and the command."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from eval.already_tried.agreement import agreement
from eval.already_tried.cli import main
from eval.already_tried.gold import load_gold_file
from eval.already_tried.measure import MethodResult, first_answers, paired, score
from parsers.errors import InputError

FIXTURE = Path(__file__).with_name("tried_questions.jsonl")


class FixedOrder:
    """A ranking method that ranks the pool in a given order (the candidates it leaves out are unranked)."""

    def __init__(self, order):
        self.order = order

    def rank(self, *, question, followups, step, exclude_ids, k):
        return [(cid, 1.0 / (i + 1)) for i, cid in enumerate(self.order)][:k]


def test_questions_that_state_nothing_tried_are_judged_but_not_measured():
    gold = load_gold_file(FIXTURE)
    assert [q.id for q in gold.questions] == ["q1", "q2"] and gold.judged == 3
    assert {a.id for a in gold.pool} == {"a-battery", "a-starter", "a-tires", "a-pads", "a-rotors"}
    assert [c.gold for c in gold.questions[0].candidates] == [False, True, False]


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "not JSON"),
    ('{"id": "x", "question": "q", "tried": ["a"], "candidates": [{"id": "c", "text": "t", "relevant": "yes", '
     '"repeats_tried": false}]}', "'relevant' must be true or false"),
    ('{"id": "x", "question": "q", "tried": "replaced it", "candidates": []}', "'tried' must be a list"),
    ('{"id": "x", "question": "q", "tried": ["a"], "candidates": [' + ", ".join(
        f'{{"id": "c{i}", "text": "t", "relevant": true, "repeats_tried": false}}' for i in range(11)) + "]}",
     "at most 10"),
])
def test_a_malformed_file_is_one_line_naming_the_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(FIXTURE.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=message) as err:
        load_gold_file(path)
    assert "bad.jsonl:4" in str(err.value) and "\n" not in str(err.value)


def test_the_first_answer_is_the_best_ranked_candidate_and_an_unranked_question_counts_as_no_answer():
    gold = load_gold_file(FIXTURE)
    # q1: the repeating battery answer first; q2: none of q2's candidates is ranked at all
    first = first_answers(gold, FixedOrder(["a-tires-not-a-candidate", "a-battery", "a-starter"]))
    assert first == ["a-battery", None]
    result = score(MethodResult(method="m", label="m", first=first), gold.questions)
    assert (result.repeats.value, result.relevant_new.value, result.relevant.value, result.unranked) == (0.5, 0.0, 0.5, 1)
    better = score(MethodResult(method="n", label="n", first=["a-starter", "a-rotors"]), gold.questions)
    assert (better.repeats.value, better.relevant_new.value) == (0.0, 1.0)


def test_paired_difference_and_ratio_keep_their_sign():
    a, b = np.array([1.0, 0, 0, 0, 1, 0, 0, 0]), np.array([1.0, 1, 1, 0, 1, 1, 0, 1])
    out = paired(a, b)
    assert out["diff"] == -0.5 and out["ratio"] == pytest.approx(2 / 6, abs=1e-3)
    assert out["diff_low"] <= -0.5 <= out["diff_high"] < 0 and out["ratio_low"] <= out["ratio"] <= out["ratio_high"]


def test_judges_agreement_counts_each_label_and_lists_the_disagreements():
    one = {"q": {"states_tried": True, "candidates": [{"id": "a", "relevant": True, "repeats_tried": True},
                                                     {"id": "b", "relevant": False, "repeats_tried": False},
                                                     {"id": "c", "relevant": True, "repeats_tried": False},
                                                     {"id": "d", "relevant": False, "repeats_tried": False}]},
           "r": {"states_tried": False, "candidates": []}}
    two = {"q": {"states_tried": True, "candidates": [{"id": "a", "relevant": True, "repeats_tried": True},
                                                     {"id": "b", "relevant": True, "repeats_tried": False},
                                                     {"id": "c", "relevant": True, "repeats_tried": False},
                                                     {"id": "d", "relevant": False, "repeats_tried": False}]},
           "r": {"states_tried": False, "candidates": []}}
    found = agreement(one, two)
    by = {a.label: a for a in found.labels}
    assert found.questions == 2 and by["states_tried"].agree == 1.0
    assert by["relevant"].items == 4 and by["relevant"].agree == 0.75 and by["relevant"].kappa == pytest.approx(0.5)
    assert by["repeats_tried"].kappa == 1.0 and found.disagreements == [("q", "b", "relevant")]


def test_the_command_reports_each_method_and_writes_its_files(tmp_path, capsys):
    pytest.importorskip("rank_bm25", reason="the BM25 baseline needs the [eval] extra")
    out = tmp_path / "out"
    assert main(["--data", str(FIXTURE), "--methods", "keyword", "--no-extraction", "--out", str(out)]) == 0
    report = json.loads((out / "already_tried.json").read_text(encoding="utf-8"))
    keyword = report["methods"]["keyword"]
    assert report["questions"] == ["q1", "q2"] and len(keyword["first"]) == 2
    assert keyword["repeats"]["n"] == 2 and 0.0 <= keyword["repeats"]["value"] <= 1.0
    assert "first answer repeats what was tried" in capsys.readouterr().out
    assert (out / "already_tried.md").is_file()


def test_a_missing_file_is_a_one_line_error(tmp_path, capsys):
    assert main(["--data", str(tmp_path / "none.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert "none.jsonl: no such file" in err and len(err.splitlines()) == 1


def test_the_repeat_reading_counts_caught_and_wrongly_flagged_candidates():
    from eval.already_tried.extraction import score_repeats
    from eval.already_tried.gold import Candidate, TriedQuestion
    from parsers.base import get_parser

    question = TriedQuestion(id="q", question="I replaced the battery, but the car still only clicks.",
                             tried=("replaced the battery",), candidates=(
        Candidate(id="again", text="Replace the battery.", relevant=True, repeats_tried=True),
        Candidate(id="relay", text="Check the starter relay.", relevant=True, repeats_tried=False),
        Candidate(id="test", text="Test the battery with a meter.", relevant=True, repeats_tried=False),  # a judge's slip
        Candidate(id="missed", text="Your description sounds like the battery is dead.", relevant=True,
                  repeats_tried=True)))
    score = score_repeats([question], get_parser("rules"))
    assert (score.candidates, score.repeats, score.caught, score.flagged_wrong) == (4, 2, 1, 1)
    assert score.to_dict()["recall"] == 0.5 and score.to_dict()["precision"] == 0.5
