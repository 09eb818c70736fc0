"""``dtdialog test`` end to end: the built-in corpus's own conversation tests, a failing test, JUnit, bad input."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from data.builtin import builtin_tests_path
from dtdialog.cli import main
from dtdialog.dialogue.conversation_tests import load_tests

PAPER_Q = ("I have checked the spark plugs, replaced the battery, also replaced ignition coils and the solenoid, "
           "but I still could not start my car.")


@pytest.fixture(autouse=True)
def rule_ranking(monkeypatch, tmp_path):
    """Pin the rule scorer (always available), and keep every file the engine writes out of the user's home."""
    monkeypatch.setenv("DTDIALOG_RANKER", "rules")
    monkeypatch.setenv("DTDIALOG_HOME", str(tmp_path / "home"))


def test_builtin_conversation_tests_pass_on_the_builtin_index(builtin_rules_index, tmp_path, capsys):
    junit = tmp_path / "junit.xml"
    code = main(["test", str(builtin_tests_path()), "--index", str(builtin_rules_index), "--quiet",
                 "--junit", str(junit)])
    out = capsys.readouterr().out
    tests = load_tests(builtin_tests_path())
    n_turns = sum(len(t.turns) for t in tests)
    assert 6 <= len(tests) <= 40
    assert code == 0, out
    known = sum(len(t.turns) for t in tests if t.known_failure)
    assert "FAIL" not in out and out.count("PASS ") >= n_turns - known
    assert f"{len(tests)} test(s): " in out.splitlines()[-1] and " 0 failed; " in out.splitlines()[-1]
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == str(n_turns) and suite.get("failures") == "0"
    # test sessions go to a throw-away store, not the user's
    assert not (tmp_path / "home" / "sessions.sqlite").exists()


def test_failed_expectations_exit_1_and_say_what_the_bot_did(builtin_rules_index, tmp_path, capsys):
    tests = tmp_path / "conversations.yaml"
    tests.write_text(f"""\
tests:
  - name: paper question
    turns:
      - customer: "{PAPER_Q}"
        expect: {{kind: [answer, clarify, abstain]}}
      - customer: "I want to talk to a human."
        expect: {{kind: answer, contains: "fuel pressure"}}
""", encoding="utf-8")
    junit = tmp_path / "junit.xml"
    code = main(["test", str(tests), "--index", str(builtin_rules_index), "--quiet", "--junit", str(junit)])
    out = capsys.readouterr().out
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "PASS paper question / turn 1"
    assert lines[1] == "FAIL paper question / turn 2"
    assert "kind: expected answer, got handoff" in out
    assert "contains: expected the reply to contain 'fuel pressure'" in out
    assert "bot (handoff, HANDED_OFF" in out
    assert lines[-1] == "1 test(s): 0 passed, 1 failed; 2 turn(s): 1 passed, 1 failed"
    failures = ET.parse(junit).getroot().iter("failure")
    assert [f.get("message").split(";")[0] for f in failures] == ["kind: expected answer, got handoff"]


def test_bad_input_is_one_line_and_exit_2(builtin_rules_index, tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("tests:\n  - name: x\n    turns:\n      - customer: hi\n        expect: {kind: solved}\n",
                   encoding="utf-8")
    assert main(["test", str(bad), "--index", str(builtin_rules_index), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "turn 1: unknown reply kind(s) solved" in err and err.count("\n") == 1
    assert main(["test", str(tmp_path / "nope.yaml"), "--index", str(builtin_rules_index)]) == 2
    assert "test file" in capsys.readouterr().err
    missing = tmp_path / "nonexist.sqlite"
    assert main(["test", str(builtin_tests_path()), "--index", str(missing)]) == 2
    assert f"index {missing} not found" in capsys.readouterr().err and not missing.exists()
    assert main(["test", "--index", str(builtin_rules_index)]) == 2  # another index needs its own test file
    assert "give the conversation test FILE" in capsys.readouterr().err


@pytest.mark.dense
def test_builtin_conversation_tests_pass_with_the_learned_ranker(builtin_learned_index, monkeypatch, capsys):
    """What a bare ``dtdialog test`` runs with the [dense] extra: the learned ranker on the built-in index."""
    index, _ = builtin_learned_index
    monkeypatch.setenv("DTDIALOG_RANKER", "learned")
    code = main(["test", "--index", str(index), str(builtin_tests_path()), "--quiet", "--failures-only"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "FAIL" not in out  # --failures-only: known failures and the summary only
    assert " 0 failed; " in out.splitlines()[-1]


def test_a_known_failure_is_reported_but_does_not_fail_the_run(builtin_rules_index, tmp_path, capsys):
    tests = tmp_path / "conversations.yaml"
    tests.write_text(f"""\
tests:
  - name: known
    known_failure: "the bot cannot hand off on a question"
    turns:
      - customer: "{PAPER_Q}"
        expect: {{kind: handoff}}
  - name: passes though marked
    known_failure: "fixed since"
    turns:
      - customer: "I want to talk to a human."
        expect: {{kind: handoff}}
""", encoding="utf-8")
    junit = tmp_path / "junit.xml"
    code = main(["test", str(tests), "--index", str(builtin_rules_index), "--quiet", "--junit", str(junit)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "KNOWN known / turn 1" in out and "known failure: the bot cannot hand off on a question" in out
    assert "marked known_failure (fixed since), but it passes here" in out
    assert out.splitlines()[-1] == "2 test(s): 1 passed, 0 failed; 2 turn(s): 1 passed, 0 failed; 1 known failure(s)"
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("failures"), suite.get("skipped")) == ("0", "1")


def test_known_failure_must_say_why(tmp_path):
    from parsers.errors import InputError

    path = tmp_path / "t.yaml"
    path.write_text('tests:\n  - name: x\n    known_failure: ""\n    turns:\n      - customer: "hi"\n', encoding="utf-8")
    with pytest.raises(InputError, match="'known_failure' must say why"):
        load_tests(path)
