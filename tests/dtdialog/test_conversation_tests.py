"""Conversation tests: reading and validating YAML/JSONL files, matching expectations, the JUnit report."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from dtdialog.dialogue.conversation_tests import (
    Expectation,
    TurnGot,
    TurnOutcome,
    junit_xml,
    load_tests,
    parse_expectation,
    report_lines,
    summary,
    write_junit,
)
from parsers.errors import InputError

YAML_TESTS = """\
tests:
  - name: wifi drops at night
    turns:
      - customer: "My router drops the connection every night, although I restarted it."
        expect: {kind: answer, contains: "firmware", min_confidence: 0.2}
      - customer: "I already updated the firmware."
        expect: {kind: [answer, clarify], not_contains: "firmware", state: awaiting_feedback}
  - name: no expectations
    turns:
      - customer: "hello"
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_yaml_file_is_read_with_its_expectations(tmp_path):
    tests = load_tests(_write(tmp_path, "c.yaml", YAML_TESTS))
    assert [t.name for t in tests] == ["wifi drops at night", "no expectations"]
    first, second = tests[0].turns
    assert first.expect == Expectation(kind=("answer",), contains="firmware", min_confidence=0.2)
    # a state is given in any case and kept in the manager's spelling
    assert second.expect.kind == ("answer", "clarify") and second.expect.state == ("AWAITING_FEEDBACK",)
    assert tests[1].turns[0].expect == Expectation()


def test_jsonl_file_holds_one_test_per_line(tmp_path):
    lines = [{"name": "a", "turns": [{"customer": "the screen is black", "expect": {"kind": "clarify"}}]},
             {"name": "b", "turns": [{"customer": "talk to a person", "expect": {"state": "HANDED_OFF"}}]}]
    path = _write(tmp_path, "c.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n\n")
    tests = load_tests(path)
    assert [t.name for t in tests] == ["a", "b"]
    assert tests[1].turns[0].expect.state == ("HANDED_OFF",)


@pytest.mark.parametrize(("text", "message"), [
    ("tests: [", "not valid YAML at line"),
    ("- name: x\n", "expected a mapping with a 'tests' list"),
    ("tests: []\n", "no tests in the file"),
    ("tests:\n  - name: x\n    turns: []\n", "test 1 'x': 'turns' must be a non-empty list"),
    ("tests:\n  - name: x\n    turns:\n      - customer: ''\n", "test 1 'x', turn 1: 'customer'"),
    ("tests:\n  - name: x\n    turns:\n      - customer: hi\n        expect: {kind: answered}\n",
     "test 1 'x', turn 1: unknown reply kind(s) answered"),
    ("tests:\n  - name: x\n    turns:\n      - customer: hi\n        expect: {state: answering}\n",
     "unknown state(s) answering"),
    ("tests:\n  - name: x\n    turns:\n      - customer: hi\n        expect: {min_confidence: 1.5}\n",
     "min_confidence must be a number from 0 to 1"),
    ("tests:\n  - name: x\n    turns:\n      - customer: hi\n        expect: {min_confidence: 0.8, max_confidence: 0.2}\n",
     "min_confidence is above max_confidence"),
    ("tests:\n  - name: x\n    turns:\n      - customer: hi\n        expect: {contain: x}\n", "unknown key(s) contain"),
    ("tests:\n  - name: x\n    turns:\n      - customer: hi\n  - name: x\n    turns:\n      - customer: ho\n",
     "test 2 'x': the name is used twice"),
])
def test_bad_yaml_is_one_line_naming_file_test_and_turn(tmp_path, text, message):
    path = _write(tmp_path, "bad.yaml", text)
    with pytest.raises(InputError) as err:
        load_tests(path)
    assert message in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)


def test_bad_files_are_refused(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_tests(tmp_path / "missing.yaml")
    with pytest.raises(InputError, match="unknown test file type .txt"):
        load_tests(_write(tmp_path, "c.txt", YAML_TESTS))
    with pytest.raises(InputError, match=r"c.jsonl:2: not valid JSON"):
        load_tests(_write(tmp_path, "c.jsonl", '{"name": "a", "turns": [{"customer": "x"}]}\n{oops\n'))
    with pytest.raises(InputError, match="binary"):
        (tmp_path / "b.yaml").write_bytes(b"tests:\x00\x01")
        load_tests(tmp_path / "b.yaml")


def _got(**kw):
    base = {"kind": "answer", "reply": "Update the router's Firmware first.", "state": "AWAITING_FEEDBACK",
            "answer_id": "net-1#1", "confidence": 0.6}
    return TurnGot(**{**base, **kw})


def test_expectations_report_each_unmet_field():
    expect = parse_expectation({"kind": ["answer", "clarify"], "answer_id": "net-1#1", "contains": "FIRMWARE",
                                "not_contains": "reboot", "state": "awaiting_feedback", "min_confidence": 0.5})
    assert expect.failures(_got()) == []  # case-insensitive text match
    problems = expect.failures(_got(kind="abstain", answer_id=None, reply="Please reboot it.", state="AWAITING_DETAIL",
                                    confidence=None))
    assert problems == ["kind: expected answer or clarify, got abstain",
                        "answer_id: expected net-1#1, got no answer",
                        "contains: expected the reply to contain 'FIRMWARE'",
                        "not_contains: expected the reply not to contain 'reboot'",
                        "state: expected AWAITING_FEEDBACK, got AWAITING_DETAIL",
                        "min_confidence: expected confidence >= 0.5, got no confidence"]
    assert parse_expectation({"max_confidence": 0.5}).failures(_got(confidence=0.61)) == [
        "max_confidence: expected confidence <= 0.5, got 0.61"]


def test_an_answer_is_expected_by_a_phrase_of_it_or_by_its_row_id():
    got = _got(reply="Here is what may help: Update the router's Firmware first.",
               answer_text="Update the router's Firmware first.")
    assert parse_expectation({"answer_contains": "FIRMWARE first", "answer_id": "net-1"}).failures(got) == []
    # the phrase must be in the delivered answer itself, not in the words around it
    assert parse_expectation({"answer_contains": "what may help"}).failures(got) == [
        "answer_contains: expected the answer to contain 'what may help', got answer net-1#1"]
    assert parse_expectation({"answer_contains": "firmware"}).failures(_got(kind="clarify", answer_id=None)) == [
        "answer_contains: expected the answer to contain 'firmware', got no answer"]
    # an id without '#position' is the row's (dialogue's) id; with it, exactly that answer
    assert parse_expectation({"answer_id": "net"}).failures(got) == ["answer_id: expected net, got net-1#1"]
    assert parse_expectation({"answer_id": "net-1#3"}).failures(got) == ["answer_id: expected net-1#3, got net-1#1"]
    with pytest.raises(InputError, match="expect answer_contains must be a non-empty string"):
        parse_expectation({"answer_contains": " "})


def _outcome(test, number, failures=()):
    return TurnOutcome(test=test, number=number, customer=f"turn {number} of {test}",
                       expect=Expectation(kind=("answer",)), got=_got(kind="clarify" if failures else "answer"),
                       failures=tuple(failures))


def test_junit_has_one_testcase_per_turn_and_the_failures(tmp_path):
    outcomes = [_outcome("a", 1), _outcome("a", 2, ["kind: expected answer, got clarify"]), _outcome("b", 1)]
    path = write_junit(tmp_path / "reports" / "junit.xml", outcomes)
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    assert suite.get("tests") == "3" and suite.get("failures") == "1"
    cases = suite.findall("testcase")
    assert [(c.get("classname"), c.find("failure") is not None) for c in cases] == [
        ("a", False), ("a", True), ("b", False)]
    failure = cases[1].find("failure")
    assert failure.get("message") == "kind: expected answer, got clarify"
    assert '"kind": "clarify"' in failure.text and '"kind": "answer"' in failure.text
    assert junit_xml(outcomes) == path.read_bytes()
    assert summary(outcomes) == "2 test(s): 1 passed, 1 failed; 3 turn(s): 2 passed, 1 failed"
    assert report_lines(outcomes)[:3] == ["PASS a / turn 1", "FAIL a / turn 2", "     kind: expected answer, got clarify"]
    assert [p.name for p in path.parent.iterdir()] == ["junit.xml"]  # no temporary file left behind
