"""``eval.coverage``: question files, the held-out split, outcomes of real first messages, judged verdicts."""

from __future__ import annotations

import json

import pytest

from eval.coverage import cli
from eval.coverage.questions import file_questions, read_marks
from eval.coverage.split import held_out
from parsers.errors import InputError


def test_the_split_is_fixed_and_about_half():
    ids = [f"reddit:Cartalk:{i:x}" for i in range(2000)]
    held = [held_out(i) for i in ids]
    assert 900 < sum(held) < 1100 and held == [held_out(i) for i in ids]


def test_question_files_of_each_kind(tmp_path):
    (tmp_path / "q.jsonl").write_text('{"id": "a", "title": "Brakes squeal", "body": "Only when cold."}\n'
                                      '{"question": "AC blows warm"}\n', encoding="utf-8")
    (tmp_path / "q.csv").write_text("title,selftext\nNo start,It clicks\n", encoding="utf-8")
    (tmp_path / "q.txt").write_text("my car pulls left\n\n", encoding="utf-8")
    assert [(q.id, q.text) for q in file_questions(tmp_path / "q.jsonl")] == [("a", "Brakes squeal\nOnly when cold."),
                                                                             ("2", "AC blows warm")]
    assert [q.text for q in file_questions(tmp_path / "q.csv")] == ["No start\nIt clicks"]
    assert [q.text for q in file_questions(tmp_path / "q.txt")] == ["my car pulls left"]
    (tmp_path / "bad.jsonl").write_text("{oops\n", encoding="utf-8")
    with pytest.raises(InputError, match="bad.jsonl:1: not JSON"):
        file_questions(tmp_path / "bad.jsonl")


def test_marks_need_a_boolean_for_each_post(tmp_path):
    path = tmp_path / "marks.jsonl"
    path.write_text('{"id": "x", "asks_help": true}\n{"id": "y", "asks_help": "yes"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="marks.jsonl:2"):
        read_marks(path)


def test_a_verdict_counts_only_while_the_bot_still_gives_that_answer(tmp_path, monkeypatch):
    verdicts = tmp_path / "judged.jsonl"
    verdicts.write_text('{"id": "p1", "answer_id": "brakes-001#1", "verdict": "right"}\n'
                        '{"id": "p2", "answer_id": "brakes-002#1", "verdict": "wrong"}\n'
                        '{"id": "p3", "answer_id": "hvac-001#1", "verdict": "right"}\n', encoding="utf-8")
    monkeypatch.setattr(cli, "JUDGED_ANSWERS", verdicts)
    monkeypatch.setattr(cli, "JUDGED_ABSTENTIONS", tmp_path / "none.jsonl")
    rows = [{"id": "p1", "answer_id": "brakes-001#1"}, {"id": "p2", "answer_id": "brakes-002#1"},
            {"id": "p3", "answer_id": "hvac-009#1"}]  # p3's answer changed since it was judged
    figures = cli.judged_figures(rows)["figures"]["answers"]
    assert (figures["judged"], figures["current"], figures["right"]["value"]) == (3, 2, 0.5)



def test_a_question_verdict_counts_only_while_the_bot_still_asks_that_question(tmp_path, monkeypatch):
    verdicts = tmp_path / "questions.jsonl"
    verdicts.write_text('{"id": "p1", "detail": "tried", "verdict": "fits"}\n'
                        '{"id": "p2", "detail": "more", "verdict": "already_said"}\n'
                        '{"id": "p3", "detail": "when", "verdict": "does_not_fit"}\n', encoding="utf-8")
    for name in ("JUDGED_ANSWERS", "JUDGED_ABSTENTIONS"):
        monkeypatch.setattr(cli, name, tmp_path / "none.jsonl")
    monkeypatch.setattr(cli, "JUDGED_QUESTIONS", verdicts)
    rows = [{"id": "p1", "detail": "tried"}, {"id": "p2", "detail": "told"}, {"id": "p3", "detail": "when"}]
    judged = cli.judged_figures(rows)
    figures = judged["figures"]["questions"]
    assert (figures["judged"], figures["current"], figures["told"], figures["fits"]["value"]) == (3, 2, 1, 0.5)
    assert "2 of 3 still asked" in judged["lines"][0] and "1 now ask nothing" in judged["lines"][0]
    table = cli._asked_lines([{"outcome": "abstained", "detail": d} for d in ("told", "told", "tried")] +
                             [{"outcome": "answered", "detail": ""}])
    assert "| told | 2 | 66.7% |" in table and "| tried | 1 | 33.3% |" in table

@pytest.mark.slow
def test_the_command_runs_the_chat_engine_on_each_first_message(tmp_path, capsys):
    questions = tmp_path / "q.txt"
    questions.write_text("What is the capital of France and who painted the Mona Lisa?\n"
                         "My car overheats in traffic but is fine on the highway. I topped up the coolant last week.\n",
                         encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main(["--data", str(questions), "--no-progress", "--out", str(out)]) == 0
    report = json.loads((out / "coverage.json").read_text(encoding="utf-8"))
    outcomes = [r["outcome"] for r in report["outcomes"]]
    assert outcomes[0] == "refused" and outcomes[1] in ("answered", "clarified")
    assert report["questions"] == 2 and "| refused | 1 |" in capsys.readouterr().out
    # the report says what answered: the engine's own answers as the pool, and the ranker it resolved
    prov = report["provenance"]
    assert prov["data"][0]["pool"]["kind"] == "engine" and prov["data"][0]["pool"]["size"] > 100
    assert prov["ranker"]["name"] in ("learned", "rules") and prov["commit"] and prov["parser"] == "rules"


def test_a_missing_question_file_is_one_line(tmp_path, capsys):
    assert cli.main(["--data", str(tmp_path / "none.txt")]) == 2
    err = capsys.readouterr().err.strip()
    assert "none.txt: no such file" in err and len(err.splitlines()) == 1


def test_the_shipped_verdicts_judge_held_out_car_posts_and_built_in_answers():
    from data.builtin import load_builtin_corpus
    from eval.coverage.questions import MARKS_PATH
    from eval.jsonl import read_objects

    marks = read_marks(MARKS_PATH)
    dialogues = {d.id for d in load_builtin_corpus()}
    first = {r["id"]: r for _, r in read_objects(cli.JUDGED_ANSWERS)}
    second = [r for _, r in read_objects(cli.JUDGED_ANSWERS.with_name("judged_answers_second.jsonl"))]
    for verdict in [*first.values(), *second]:
        assert verdict["verdict"] in ("right", "partial", "wrong") and verdict["why"], verdict
        assert marks.get(verdict["id"]) is True and held_out(verdict["id"]), verdict["id"]
        assert verdict["answer_id"].split("#")[0] in dialogues, verdict["answer_id"]
    # the blind second judge read the same answers as the first
    assert second and all(first[v["id"]]["answer_id"] == v["answer_id"] for v in second)
    questions = {r["id"]: r for _, r in read_objects(cli.JUDGED_QUESTIONS)}
    second_questions = [r for _, r in read_objects(cli.JUDGED_QUESTIONS.with_name("judged_questions_second.jsonl"))]
    for question in [*questions.values(), *second_questions]:
        assert question["verdict"] in ("fits", "already_said", "does_not_fit") and question["why"], question
        assert marks.get(question["id"]) is True and held_out(question["id"]) and question["detail"], question["id"]
    assert second_questions and all(questions[v["id"]]["detail"] == v["detail"] for v in second_questions)
    # the grown corpus (not shipped) with its own calibrator: a seeded 100 of its answers, judged the same way
    grown = [r for _, r in read_objects(cli.JUDGED_ANSWERS.with_name("judged_answers_grown_own_calibrator.jsonl"))]
    assert len(grown) == len({v["id"] for v in grown}) == 100
    for verdict in grown:
        assert verdict["verdict"] in ("right", "partial", "wrong") and verdict["why"], verdict
        assert marks.get(verdict["id"]) is True and held_out(verdict["id"]), verdict["id"]
    for _, abstention in read_objects(cli.JUDGED_ABSTENTIONS):
        assert isinstance(abstention["nothing_fitting"], bool) and abstention["why"]
        assert abstention["nothing_fitting"] or abstention["fitting"] in dialogues, abstention
