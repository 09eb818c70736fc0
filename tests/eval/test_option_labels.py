"""``eval.option_labels``: the judged label changes load strictly, and a comparison lists what changed."""

from __future__ import annotations

import json

import pytest

from eval.option_labels.cli import JUDGED_PATH, changes, load_judged, markdown
from parsers.errors import InputError


def test_the_shipped_verdicts_load_and_every_one_is_a_change():
    judged = load_judged(JUDGED_PATH)
    assert len(judged) >= 100 and set(judged.values()) <= {"better", "worse", "same"}
    assert all(before != after for before, after in judged)


def test_a_comparison_lists_each_changed_label_once_with_its_verdict():
    before = {"a b c": ["Closed or the ECM runs", "Fix it", "Keep"], "b c d": ["Fix it", "Keep", "Other"]}
    after = {"a b c": ["The ECM runs", "Fix it", "Keep"], "b c d": ["Fix it", "Keep", "Another"], "new": ["x"]}
    pairs = changes(before, after)
    assert pairs == [("Closed or the ECM runs", "The ECM runs"), ("Other", "Another")]
    text = markdown(after, pairs, {pairs[0]: "better"}, command="python -m eval.option_labels")
    assert "| better | 1 |" in text and "| not judged | 1 |" in text and '"Other" -> "Another"' in text


@pytest.mark.parametrize("line", ["not json", json.dumps({"before": "a", "after": "b", "verdict": "fine"}),
                                  json.dumps({"before": "a", "verdict": "same"})])
def test_a_bad_judged_line_is_a_one_line_error_naming_it(tmp_path, line):
    path = tmp_path / "judged.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"judged.jsonl:1"):
        load_judged(path)
