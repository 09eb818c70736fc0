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
