"""``eval.presupposition``: logged answers read against their own dialogue (every flag is a false one)."""

from __future__ import annotations

import json

from eval.datasets import EvalDialogue, EvalSet, PoolAnswer
from eval.presupposition import main, measure


def test_an_answer_is_judged_against_what_its_own_dialogue_said_before_it():
    pool = (PoolAnswer(id="d#1", dialogue_id="d", position=1, text="Read the code with a scanner first."),
            PoolAnswer(id="d#3", dialogue_id="d", position=3, text="That P0420 code points at the catalyst."),
            PoolAnswer(id="e#1", dialogue_id="e", position=1, text="After a starter job, check the trigger wire."))
    dialogues = (EvalDialogue(id="d", question="My engine light is on.", answer_ids=("d#1", "d#3"),
                              followups=("It says P0420.",)),
                 EvalDialogue(id="e", question="My car won't start.", answer_ids=("e#1",)))
    rate = measure(EvalSet(name="toy", dialogues=dialogues, pool=pool))
    assert (rate.answers, rate.flagged) == (3, 1) and rate.kinds == {"a prior job": 1}
    assert rate.examples == ['e#1: it presupposes a prior job you never mentioned: "a starter job"']


def test_the_built_in_corpus_has_one_false_flag_a_paraphrased_restriction(tmp_path, capsys):
    assert main(["--dataset", "builtin", "--out", str(tmp_path)]) == 0
    [data] = json.loads((tmp_path / "presupposition.json").read_text(encoding="utf-8"))
    # "Stalling only in wet weather" to "only on rainy days": the restriction's words are not the customer's
    assert data["answers"] > 400 and data["flagged"] == 1 and data["kinds"] == {"a symptom": 1}
    assert "| 1 | 0.2% |" in capsys.readouterr().out


def test_all_names_every_dataset(tmp_path, monkeypatch):
    from eval.data_args import dataset_names
    from eval.datasets import DATASETS

    assert dataset_names("all") == list(DATASETS) and dataset_names("builtin, builtin") == ["builtin"]
    monkeypatch.setenv("DTDIALOG_SHARED_DATA", str(tmp_path / "absent"))
    # the shared sets are absent here: each is skipped with its reason, the built-in one is measured
    assert main(["--dataset", "all", "--out", str(tmp_path / "out")]) == 0
    rows = json.loads((tmp_path / "out" / "presupposition.json").read_text(encoding="utf-8"))
    assert {r["dataset"] for r in rows} == set(DATASETS)
