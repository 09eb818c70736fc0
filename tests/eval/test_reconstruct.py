"""The harness end to end: multi-step protocol, exclusion of earlier picks, CLI outputs and bad input."""

import csv

import pytest

from dtdialog.cli import main as dtdialog_main
from eval.methods import register_method
from eval.methods.base import RankingMethod
from eval.reconstruct import main, reconstruct


class Scripted(RankingMethod):
    """Returns the pool in a fixed order, minus exclusions, and records every call."""

    name = "scripted"
    label = "scripted"

    def __init__(self, order):
        self.order = list(order)
        self.calls = []

    def fit(self, *, pool):
        pass

    def rank(self, *, question, followups, step, exclude_ids, k):
        self.calls.append((question, tuple(followups), step, tuple(exclude_ids)))
        return [(i, -n) for n, i in enumerate(x for x in self.order if x not in exclude_ids)][:k]


def test_steps_get_actual_followups_and_exclude_earlier_picks(toy_set):
    # battery#1 first everywhere: right for the battery dialogue's A1, then excluded at its A2.
    method = Scripted(["battery#1", "battery#3", "brakes#1", "oil#1", "tires#1"])
    results = {r.dialogue_id: r for r in reconstruct(method, toy_set, k=10, progress=False)}
    battery = results["battery"]
    assert [s.correct for s in battery.steps] == [True, True]
    assert battery.has_followup and battery.steps[1].rank == 1
    calls = [c for c in method.calls if c[0].startswith("The car will not start")]
    assert calls[0][1:] == ((), 0, ())
    assert calls[1][1] == (toy_set.dialogues[1].followups[0],) and calls[1][2:] == (1, ("battery#1",))
    assert results["brakes"].steps[0].rank == 3
    assert not results["brakes"].has_followup


def test_cli_writes_markdown_csv_and_png(tmp_path):
    out = tmp_path / "out"
    assert main(["--dataset", "builtin", "--methods", "keyword", "--limit", "6", "--out", str(out),
                 "--bootstrap", "50", "--no-progress"]) == 0
    md = (out / "results.md").read_text()
    assert "| Dialog type | Q-A | Q-A1-C1 | Q-A1-C1-A2 | Q-A1-C1-A2-C2-A3 |" in md
    assert "Baseline 1" in md and "own data" in md and "72.3" in md
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert {r["metric"] for r in rows} >= {"Q-A", "P@1", "R@5", "MRR", "dialogue correct"}
    assert all(r["n"] == "6" for r in rows if r["metric"] == "Q-A")
    assert (out / "accuracy.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(out.glob(".*.tmp"))


def test_missing_dataset_is_an_error_not_a_skip(tmp_path, capsys):
    """A dataset named on purpose whose files are absent is the user's mistake: one line, exit 2, nothing written."""
    assert main(["--dataset", "mechanics", "--methods", "keyword", "--data-dir", str(tmp_path / "none"),
                 "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "mechanics_qa_dev.jsonl not found" in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv, message", [
    (["--methods", "nope"], "unknown method"),
    (["--methods", ","], "--methods is empty"),
    (["--dataset", "nope"], "unknown dataset"),
    (["--limit", "0"], "--limit"),
    (["--data", "/nonexistent-dtdialog/logs.jsonl", "--format", "jsonl"], "data file /nonexistent-dtdialog/logs.jsonl not found"),
    (["--data", "/nonexistent-dtdialog/logs.jsonl"], "--data needs --format"),
    (["--format", "csv"], "--format applies to --data FILE"),
    (["--data", "x.csv", "--format", "csv", "--systems", "bogus"], "unknown --systems bogus"),
])
def test_bad_options_give_one_line_errors(argv, message, capsys, tmp_path):
    assert main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err and "Traceback" not in err


def test_dtdialog_eval_forwards(tmp_path):
    out = tmp_path / "cli"
    assert dtdialog_main(["eval", "--dataset", "builtin", "--methods", "keyword", "--limit", "3", "--out", str(out),
                          "--bootstrap", "20", "--no-progress"]) == 0
    assert (out / "results.md").is_file()
    assert "dtdialog eval --dataset builtin" in (out / "results.md").read_text()  # the command line as typed
    assert dtdialog_main(["eval", "--methods", "bogus", "--out", str(out)]) == 2


def test_dtdialog_eval_help_is_the_evaluations_own(capsys):
    with pytest.raises(SystemExit) as exit_info:
        dtdialog_main(["eval", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: dtdialog eval") and "--methods" in out and "--bootstrap" in out


def test_other_commands_still_refuse_unknown_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        dtdialog_main(["parse", "some text", "--no-such-option"])
    assert exit_info.value.code == 2 and "unrecognized arguments: --no-such-option" in capsys.readouterr().err


def test_only_the_eval_command_links_the_product_to_eval():
    """``dtdialog`` imports ``eval`` in one place (the delegation) and ``eval`` never imports ``dtdialog.commands``."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    up = [p.relative_to(root).as_posix() for p in (root / "dtdialog").rglob("*.py")
          if re.search(r"^\s*(from|import) eval\b", p.read_text(encoding="utf-8"), re.M)]
    assert up == ["dtdialog/commands/eval.py"]
    assert not [p for p in (root / "eval").rglob("*.py") if "dtdialog.commands" in p.read_text(encoding="utf-8")]


def test_registered_method_runs_through_the_cli(tmp_path):
    register_method("scripted-test", lambda: Scripted([]))
    assert main(["--dataset", "builtin", "--methods", "scripted-test", "--limit", "2", "--out", str(tmp_path),
                 "--bootstrap", "10", "--no-progress"]) == 0
    assert "0.0 [0.0, 0.0]" in (tmp_path / "results.md").read_text()


@pytest.mark.parametrize("sub, bad_option, usage_option", [
    ("selective", ["--systems", "nope"], "--coverage"),
    ("out-of-scope", ["--data-dir", "/nonexistent-dtdialog-data"], "--seed"),
    ("position", ["--dataset", "nope"], "--modes"),
    ("calibrate", ["--rankers", "nope", "--data-dir", "/nonexistent-dtdialog-data"], "--from-rows"),
])
def test_dtdialog_eval_reaches_every_issue13_evaluation(sub, bad_option, usage_option, capsys):
    """Each sub-evaluation answers ``dtdialog eval NAME --help`` with its own options under the ``dtdialog eval``
    name, and a bad option or missing data gives exit 2 and one line, never a traceback."""
    with pytest.raises(SystemExit) as exit_info:
        dtdialog_main(["eval", sub, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: dtdialog eval {sub}") and usage_option in out
    assert dtdialog_main(["eval", sub, *bad_option]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err and "Traceback" not in err
