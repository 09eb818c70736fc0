"""Turning corpus dialogues into test dialogues (Q, A1, C1, A2, C2, A3) and a candidate pool."""

import pytest

from data.model import Dialogue, Turn
from eval.datasets import DatasetUnavailable, EvalSet, build_eval_set, load_eval_set, split_dialogue
from parsers.errors import InputError


def make(did: str, *roles_texts: tuple[str, str]) -> Dialogue:
    return Dialogue(id=did, turns=tuple(Turn(role=r, text=t) for r, t in roles_texts))


def test_split_keeps_three_answers_and_the_followups_between_them():
    d = make("d", ("Q", "q"), ("A", "a1"), ("C", "c1"), ("A", "a2"), ("C", "c2"), ("A", "a3"), ("C", "c3"),
             ("A", "a4"))
    ed, pool = split_dialogue(d)
    assert ed.question == "q"
    assert ed.answer_ids == ("d#1", "d#3", "d#5")
    assert ed.followups == ("c1", "c2", "c3")
    assert [a.id for a in pool] == ["d#1", "d#3", "d#5", "d#7"]  # the fourth answer is still a candidate
    assert pool[3].text == "a4" and pool[3].dialogue_id == "d" and pool[3].position == 7


def test_split_merges_consecutive_turns_of_one_side():
    d = make("d", ("Q", "q1"), ("C", "q2"), ("A", "a1"), ("A", "a1b"), ("C", "c1"))
    ed, pool = split_dialogue(d)
    assert ed.question == "q1\nq2"
    assert ed.answer_ids == ("d#2",) and pool[0].text == "a1\na1b"
    assert ed.followups == ("c1",)


def test_split_without_question_or_answer_gives_no_test_dialogue():
    assert split_dialogue(make("d", ("Q", "q")))[0] is None
    ed, pool = split_dialogue(make("d", ("A", "hello"), ("C", "q"), ("A", "a")))
    assert ed is None and len(pool) == 2


def test_build_eval_set_adds_extra_candidates_and_limits():
    test = [make("t1", ("Q", "q"), ("A", "a")), make("t2", ("Q", "q2"), ("A", "b"))]
    extra = [make("x", ("Q", "q3"), ("A", "c"))]
    es = build_eval_set("toy", test, extra_candidates=extra)
    assert isinstance(es, EvalSet)
    assert [d.id for d in es.dialogues] == ["t1", "t2"]
    assert {a.id for a in es.pool} == {"t1#1", "t2#1", "x#1"}
    small = es.limited(1)
    assert len(small.dialogues) == 1 and len(small.pool) == 3
    with pytest.raises(InputError):
        es.limited(0)
    with pytest.raises(InputError):
        build_eval_set("empty", [make("q", ("Q", "only a question"))])


def test_missing_data_dir_is_reported_not_crashed(tmp_path):
    with pytest.raises(DatasetUnavailable, match="not found"):
        load_eval_set("mechanics", data_dir=tmp_path)
    with pytest.raises(InputError, match="unknown dataset"):
        load_eval_set("nope", data_dir=tmp_path)


def test_builtin_set_is_multi_step_own_data():
    es = load_eval_set("builtin")
    assert es.own_data
    assert any(d.n_answers >= 2 for d in es.dialogues)
    pool_ids = {a.id for a in es.pool}
    assert all(set(d.answer_ids) <= pool_ids for d in es.dialogues)


@pytest.mark.shared_data
def test_shared_datasets_have_the_documented_shape():
    try:
        mech = load_eval_set("mechanics")
        irc = load_eval_set("irc")
    except DatasetUnavailable as exc:
        pytest.skip(f"shared data absent: {exc}")
    assert len(mech.dialogues) == 497 and len(mech.pool) == 497
    assert all(d.n_answers == 1 for d in mech.dialogues)
    assert len(irc.pool) > 10 * len(irc.dialogues)  # train answers are extra candidates
