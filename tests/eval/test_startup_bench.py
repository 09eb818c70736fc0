"""``eval.startup_bench``: one real first and later start on a pseudo-terminal, timed to the prompt and the reply."""

from __future__ import annotations

import pytest

from eval.startup_bench import REPO, main, summary, time_chat


def test_summary_counts_the_starts_that_never_got_there():
    out = summary([2.0, None, 4.0])
    assert out["p50"] == 3.0 and out["failed"] == 1 and out["max"] == 4.0
    assert summary([None])["p50"] is None


def test_breakdown_is_refused_for_another_checkout(tmp_path, capsys):
    assert main(["--runs", "1", "--breakdown", "--pythonpath", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: --breakdown")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_chat_started_on_a_terminal_is_timed_to_its_prompt_and_first_reply(tmp_path, monkeypatch):
    monkeypatch.setenv("DTDIALOG_RANKER", "rules")  # the timing harness is under test, not the ranker
    home = tmp_path / "home"
    first = time_chat(home, pythonpath=str(REPO), question="my car overheats in traffic", timeout=240)
    later = time_chat(home, pythonpath=str(REPO), question="my car overheats in traffic", timeout=240)
    for start in (first, later):
        assert start["exit_code"] == 0, start
        assert 0 < start["prompt"] <= start["reply"]
    assert any(home.glob("index-*.sqlite"))
