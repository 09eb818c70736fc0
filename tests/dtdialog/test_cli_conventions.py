"""CLI conventions: ``--version``, a missing ``chat --index``, ``$DTDIALOG_HOME`` for every default path, and build
counts that add up when malformed records were skipped."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.metadata import version as installed_version
from pathlib import Path

import pytest

from dtdialog.cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def homes(tmp_path, monkeypatch):
    """Return ``(dtdialog home, user home)``: both empty, the user's ``~`` included, so a stray write shows."""
    home, user = tmp_path / "dtdialog-home", tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("DTDIALOG_HOME", str(home))
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.delenv("DTDIALOG_INDEX", raising=False)
    monkeypatch.setenv("DTDIALOG_RANKER", "rules")
    return home, user


def test_version_flag_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"dtdialog {installed_version('dtdialog')}"


def test_source_tree_version_matches_pyproject():
    import dtdialog

    # tomllib is 3.11+, and the project supports 3.10: the [project] table's version line is enough
    declared = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(encoding="utf-8"), re.M)[1]
    assert dtdialog.__version__ == declared


def test_chat_refuses_a_missing_index_unless_asked_to_build(homes, tmp_path, capsys):
    home, _ = homes
    script = tmp_path / "turns.txt"
    script.write_text("hello\n", encoding="utf-8")
    typo = tmp_path / "nonexist.sqlite"
    assert main(["chat", "--index", str(typo), "--script", str(script), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: index {typo} not found") and "--build" in err and err.count("\n") == 1
    assert not typo.exists() and not home.exists()  # nothing built, no session store made
    assert main(["chat", "--index", str(typo), "--build", "--script", str(script), "--quiet"]) == 0
    assert typo.is_file()
    assert main(["chat", "--index", str(typo), "--script", str(script), "--quiet"]) == 0  # there now: used as is


def test_serve_refuses_a_missing_index_before_listening(homes, tmp_path, capsys):
    home, _ = homes
    typo = tmp_path / "nonexist.sqlite"
    assert main(["serve", "--index", str(typo), "--port", "8765"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: index {typo} not found") and "--build" in err and err.count("\n") == 1
    assert not typo.exists() and not home.exists()


def test_default_paths_follow_dtdialog_home(homes):
    home, user = homes
    from dtdialog.runtime.paths import sessions_path
    from index.registry import default_index_path

    assert default_index_path() == home / "answers.sqlite"
    assert sessions_path() == home / "sessions.sqlite"
    # the training and benchmark caches are module constants, set at import: read them in a fresh process
    code = ("import importlib, sys\n"
            "for name in sys.argv[1:]:\n"
            "    print(importlib.import_module(name).DEFAULT_CACHE)\n")
    modules = ["parsers.neural.training", "eval.train_ranker", "eval.hybrid_bench"]
    proc = subprocess.run([sys.executable, "-c", code, *modules], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert [Path(line).parent for line in proc.stdout.splitlines()] == [home] * len(modules)
    assert not (user / ".cache").exists()


def _csv(tmp_path) -> Path:
    path = tmp_path / "faq.csv"
    path.write_text("QUESTION,ANSWER\n"
                    "How do I reset my password?,Open Settings and choose Reset password; a link is sent by e-mail.\n"
                    "Why was my card declined?,\n"
                    "Can I close my account?,Yes. Because closing is final we ask you to confirm it by e-mail.\n"
                    ",The question of this row is missing.\n",
                    encoding="utf-8")
    return path


def test_index_build_writes_into_dtdialog_home_and_counts_malformed_records(homes, tmp_path, capsys):
    home, user = homes
    assert main(["index", "build", "--corpus", str(_csv(tmp_path)), "--format", "csv", "--parser", "rules",
                 "--quiet"]) == 0
    captured = capsys.readouterr()
    assert (home / "answers.sqlite").is_file() and not (user / ".cache").exists()
    assert captured.err.startswith("skipped 2 malformed record(s); first: ")
    summary = captured.out.splitlines()[0]
    # 2 answers indexed out of 4 records: the 2 malformed ones are in the total and in the skipped count
    assert summary.startswith("indexed 2 of 4 (answers + malformed records) from 2 dialogues into sqlite "
                              f"{home / 'answers.sqlite'}")
    assert summary.endswith("skipped 2 (2 malformed record(s), 0 answer(s))")


def test_index_build_json_report_carries_the_malformed_count(homes, tmp_path, capsys):
    import json

    out = tmp_path / "faq.sqlite"
    assert main(["index", "build", "--corpus", str(_csv(tmp_path)), "--format", "csv", "--parser", "rules",
                 "--out", str(out), "--quiet", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["indexed"], report["answers"], report["malformed"], report["skipped"]) == (2, 2, 2, [])
