"""``eval.position``: the source roles, and a real run on the built-in corpus (the engine's rule ranking)."""

from __future__ import annotations

import json

import pytest

from eval.datasets import PoolAnswer
from eval.position import main, true_roles


def test_an_answer_opens_its_dialogue_when_no_answer_of_it_sits_earlier():
    pool = [PoolAnswer(id="a#2", dialogue_id="a", position=2, text="Then check it."),
            PoolAnswer(id="a#4", dialogue_id="a", position=4, text="Good, both work."),
            PoolAnswer(id="b#3", dialogue_id="b", position=3, text="Check the fuse.")]
    assert true_roles(pool) == {"a#2": "opening", "a#4": "followup", "b#3": "opening"}


def test_bad_options_are_one_line_errors(capsys):
    assert main(["--dataset", "builtin", "--margins", "wide"]) == 2
    assert main(["--modes", "sideways"]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 2 and "Traceback" not in err


@pytest.mark.slow
def test_step_one_never_delivers_a_follow_up_beside_a_confident_opening(tmp_path, capsys, monkeypatch):
    """The built-in corpus has follow-ups that point back ("Then ..."): with the position stage on, no step-1
    answer is a follow-up while an opening scored within the margin, and a wide margin leaves none at all."""
    monkeypatch.setenv("DTDIALOG_PARSER", "rules")
    assert main(["--dataset", "builtin", "--ranker", "rules", "--modes", "off,opening", "--margins", "0.2,2",
                 "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    data = json.loads((tmp_path / "position.json").read_text(encoding="utf-8"))[0]
    steps = {(s["mode"], s["margin"]): s for s in data["steps"]}
    assert data["detector"]["tp"] > 0  # the stored detector finds real follow-ups in the built-in corpus
    for key in (("opening", 0.2), ("opening", 2.0)):
        assert steps[key]["delivered"] > 100 and steps[key]["followups_with_opener"] == 0
        assert steps[key]["followups_with_confident_opener"] == 0
    assert steps[("opening", 2.0)]["followups"] == 0
    assert steps[("opening", 0.2)]["followups"] <= steps[("off", 0.2)]["followups"]
    assert "although an opening was confident" in (tmp_path / "position.md").read_text(encoding="utf-8")


def test_the_detector_alone_on_a_teams_own_dialogue_file(tmp_path, capsys, monkeypatch):
    """``--detector-only --data FILE --format jsonl``: no ranking; precision, recall and false positives of the
    text-based detector against the roles the file's own dialogues give."""
    monkeypatch.setenv("DTDIALOG_PARSER", "rules")
    dialogues = [
        {"id": "battery", "turns": [
            {"role": "Q", "text": "My battery is dead every morning."},
            {"role": "A", "text": "A battery that goes flat overnight is usually drained by something left on."},
            {"role": "C", "text": "The draw test shows 300 milliamps."},
            {"role": "A", "text": "Then pull the fuses one at a time until the draw drops."},
            {"role": "C", "text": "It dropped when I pulled the radio fuse."},
            {"role": "A", "text": "That confirms the radio is the drain, so have its wiring checked."}]},
        {"id": "myth", "turns": [
            {"role": "Q", "text": "Does synthetic oil make an old engine leak?"},
            {"role": "A", "text": "This is a myth: synthetic oil does not make an engine leak."}]},
    ]
    path = tmp_path / "logs.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in dialogues), encoding="utf-8")
    assert main(["--detector-only", "--data", str(path), "--format", "jsonl", "--out", str(tmp_path)]) == 0
    assert "first answers read as follow-ups" in capsys.readouterr().out
    [data] = json.loads((tmp_path / "detector.json").read_text(encoding="utf-8"))
    assert data["followups"] == 2 and data["detector"] == {"tp": 2, "fp": 0, "fn": 0, "tn": 2}
    assert data["precision"] == 1.0 and data["recall"] == 1.0
