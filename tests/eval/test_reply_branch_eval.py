"""``python -m eval.reply_branch``: the reply reader against the judged replies, and its one-line errors."""

from __future__ import annotations

import json

from eval.reply_branch.cli import JUDGED_PATH, load_judged, main, measure


def test_the_shipped_judgements_are_whole_and_the_report_adds_up(tmp_path, capsys):
    rows = load_judged(JUDGED_PATH)
    assert len({(r["dialogue_id"], r["answer_position"]) for r in rows}) == len(rows) >= 100
    assert main(["--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "reply_branch.json").read_text())
    assert sum(result["confusion"].values()) == result["replies"] == len(rows)
    # every error listed is a judged yes read as no or the other way, and precision counts them
    assert all({e["judged"], e["read"]} == {"yes", "no"} for e in result["errors"])
    clear = sum(n for k, n in result["confusion"].items() if not k.startswith("unclear") and "nothing" not in k)
    right = result["confusion"].get("yes read as yes", 0) + result["confusion"].get("no read as no", 0)
    assert result["precision_on_clear"] == round(right / clear, 3)
    assert "reader commits on" in (tmp_path / "reply_branch.md").read_text()


def test_a_reader_that_is_wrong_is_counted_wrong(tmp_path):
    rows = [{"question": "Are both tabs attached?", "reply": "One tab has come off the glass.", "judged": "no"},
            {"question": "Does it leak?", "reply": "No, it's dry.", "judged": "no"}]
    result = measure(rows)
    assert result["confusion"] == {"no read as no": 1, "no read as yes": 1} and len(result["errors"]) == 1


def test_bad_judged_files_get_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "Is it wet?", "reply": "dry", "judged": "maybe"}\n')
    assert main(["--judged", str(bad)]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    assert main(["--judged", str(tmp_path / "missing.jsonl")]) == 2
