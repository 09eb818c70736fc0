"""Conversation tests: scripted customer turns with expectations, run against an engine's dialogue manager.

A test file is YAML (``tests:`` a list of tests) or JSONL (one test object per line), each test a ``name``
and ``turns``; a turn is the ``customer`` text and an optional ``expect`` mapping (``EXPECT_KEYS``). Every
test runs as a fresh session, every turn is checked on its own, so one report line says what was expected
and what the bot did. ``dtdialog test`` is the command line; ``write_junit`` is the CI report.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dtdialog.dialogue.kinds import ReplyKind
from dtdialog.dialogue.session import STATES
from parsers.errors import DTDialogError, InputError, StorageError

#: Every reply kind the dialogue manager gives (``TurnResult.kind``).
REPLY_KINDS = tuple(ReplyKind)
EXPECT_KEYS = ("kind", "answer_id", "answer_contains", "contains", "not_contains", "state", "min_confidence",
               "max_confidence")
TEST_KEYS = ("name", "turns", "known_failure")
TURN_KEYS = ("customer", "expect")
YAML_SUFFIXES = (".yaml", ".yml")
JSONL_SUFFIXES = (".jsonl", ".ndjson")
#: A test file larger than this is refused: it holds scripted turns, not a corpus.
MAX_FILE_BYTES = 10_000_000
#: How much of the bot's reply a failure shows.
SHOWN_REPLY_CHARS = 200


@dataclass(frozen=True)
class Expectation:
    """What one bot turn must be; an unset field is not checked."""

    kind: tuple[str, ...] = ()
    #: a full answer id (``faq-3f2a9c01d4#1``) or its dialogue's id (``router-red``: any answer of that row)
    answer_id: str | None = None
    #: a phrase the delivered answer's own text holds (the stored answer, not the words around it)
    answer_contains: str | None = None
    contains: str | None = None
    not_contains: str | None = None
    state: tuple[str, ...] = ()
    min_confidence: float | None = None
    max_confidence: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in ("kind", "state"):
            names = getattr(self, name)
            if names:
                out[name] = names[0] if len(names) == 1 else list(names)
        for name in ("answer_id", "answer_contains", "contains", "not_contains", "min_confidence", "max_confidence"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    def failures(self, got: TurnGot) -> list[str]:
        """Return one message per unmet expectation (empty: the turn passed)."""
        problems = []
        if self.kind and got.kind not in self.kind:
            problems.append(f"kind: expected {' or '.join(self.kind)}, got {got.kind}")
        if self.answer_id is not None and not answer_id_matches(self.answer_id, got.answer_id):
            problems.append(f"answer_id: expected {self.answer_id}, got {got.answer_id or 'no answer'}")
        if self.answer_contains is not None and \
                self.answer_contains.casefold() not in (got.answer_text or "").casefold():
            problems.append(f"answer_contains: expected the answer to contain {self.answer_contains!r}, "
                            f"got {'answer ' + got.answer_id if got.answer_id else 'no answer'}")
        text = got.reply.casefold()
        if self.contains is not None and self.contains.casefold() not in text:
            problems.append(f"contains: expected the reply to contain {self.contains!r}")
        if self.not_contains is not None and self.not_contains.casefold() in text:
            problems.append(f"not_contains: expected the reply not to contain {self.not_contains!r}")
        if self.state and got.state not in self.state:
            problems.append(f"state: expected {' or '.join(self.state)}, got {got.state}")
        for name, bound, sign in (("min_confidence", self.min_confidence, ">="),
                                  ("max_confidence", self.max_confidence, "<=")):
            if bound is None:
                continue
            if got.confidence is None:
                problems.append(f"{name}: expected confidence {sign} {bound:g}, got no confidence")
            elif (got.confidence < bound) if sign == ">=" else (got.confidence > bound):
                problems.append(f"{name}: expected confidence {sign} {bound:g}, got {got.confidence:.2f}")
        return problems


def answer_id_matches(expected: str, got: str | None) -> bool:
    """Return True when ``got`` is the answer ``expected`` names: that very id, or without a ``#position`` part,
    any answer of the dialogue (a CSV row) with that id."""
    if got is None:
        return False
    return got == expected or ("#" not in expected and got.rpartition("#")[0] == expected)


@dataclass(frozen=True)
class Turn:
    customer: str
    expect: Expectation = field(default_factory=Expectation)


@dataclass(frozen=True)
class ConversationTest:
    name: str
    turns: tuple[Turn, ...]
    #: why the bot is known to fail this test today: its failed turns are reported as KNOWN and do not fail the run;
    #: where it passes (another ranker, a fix) the report says the mark can go
    known_failure: str | None = None


@dataclass(frozen=True)
class TurnGot:
    """What the bot did on one turn (``error`` set when the turn raised instead)."""

    kind: str
    reply: str
    state: str
    answer_id: str | None = None
    confidence: float | None = None
    error: str | None = None
    #: the delivered answer's stored text (None: no answer, or it left the index)
    answer_text: str | None = None

    @classmethod
    def of(cls, result, answer_text: str | None = None) -> TurnGot:
        return cls(kind=result.kind, reply=result.reply, state=result.state, answer_id=result.answer_id,
                   confidence=result.confidence, answer_text=answer_text)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "reply": self.reply, "state": self.state, "answer_id": self.answer_id,
                "confidence": self.confidence, "error": self.error}


@dataclass(frozen=True)
class TurnOutcome:
    test: str
    number: int  # 1-based
    customer: str
    expect: Expectation
    got: TurnGot
    failures: tuple[str, ...]
    known_failure: str | None = None

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def known(self) -> bool:
        """A failed turn of a test marked ``known_failure``: reported, but not a failure of the run."""
        return bool(self.failures) and self.known_failure is not None


# --- reading and validating -----------------------------------------------------------------------------

def load_tests(path: str | Path) -> list[ConversationTest]:
    """Return the tests of a YAML or JSONL file; raises ``InputError`` naming the file, test and turn."""
    path = Path(path)
    raw = _read(path)
    if path.suffix.lower() in JSONL_SUFFIXES:
        items = _jsonl_items(path, raw)
    elif path.suffix.lower() in YAML_SUFFIXES:
        items = _yaml_items(path, raw)
    else:
        raise InputError(f"{path}: unknown test file type {path.suffix or '(none)'}; "
                         f"use {', '.join(YAML_SUFFIXES + JSONL_SUFFIXES)}")
    if not items:
        raise InputError(f"{path}: no tests in the file")
    tests = [_test(path, i, item) for i, item in enumerate(items, start=1)]
    seen: set[str] = set()
    for i, test in enumerate(tests, start=1):
        if test.name in seen:
            raise InputError(f"{path}: test {i} {test.name!r}: the name is used twice; names identify tests in reports")
        seen.add(test.name)
    return tests


def _read(path: Path) -> str:
    if path.is_dir():
        raise InputError(f"{path} is a directory; give a test file (YAML or JSONL)")
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise InputError(f"{path} is larger than {MAX_FILE_BYTES} bytes; a test file holds scripted turns")
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"test file {path} not found") from None
    except OSError as exc:
        raise InputError(f"cannot read test file {path}: {exc.strerror or exc}") from None
    if b"\x00" in data:
        raise InputError(f"{path} is a binary file; expected a YAML or JSONL test file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def _yaml_items(path: Path, text: str) -> list:
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        from dtdialog.setup.profile import yaml_error

        line, problem = yaml_error(exc)
        where = f" at line {line}" if line is not None else ""
        raise InputError(f"{path}: not valid YAML{where}: {problem}") from None
    if not isinstance(doc, dict) or "tests" not in doc:
        raise InputError(f"{path}: expected a mapping with a 'tests' list at the top")
    extra = sorted(set(map(str, doc)) - {"tests"})
    if extra:
        raise InputError(f"{path}: unknown top-level key(s) {', '.join(extra)}; expected only 'tests'")
    if not isinstance(doc["tests"], list):
        raise InputError(f"{path}: 'tests' must be a list of tests")
    return doc["tests"]


def _jsonl_items(path: Path, text: str) -> list:
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
    return items


def _test(path: Path, number: int, item: Any) -> ConversationTest:
    where = f"{path}: test {number}"
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected a mapping with 'name' and 'turns', got {type(item).__name__}")
    _only(item, TEST_KEYS, where)
    name = item.get("name", f"test {number}")
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"{where}: 'name' must be a non-empty string")
    where = f"{path}: test {number} {name!r}"
    turns = item.get("turns")
    if not isinstance(turns, list) or not turns:
        raise InputError(f"{where}: 'turns' must be a non-empty list")
    known = item.get("known_failure")
    if known is not None and (not isinstance(known, str) or not known.strip()):
        raise InputError(f"{where}: 'known_failure' must say why the bot fails it today")
    return ConversationTest(name=name.strip(), turns=tuple(_turn(f"{where}, turn {i}", t)
                                                           for i, t in enumerate(turns, start=1)),
                            known_failure=known.strip() if known else None)


def _turn(where: str, item: Any) -> Turn:
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected a mapping with 'customer' and 'expect'")
    _only(item, TURN_KEYS, where)
    customer = item.get("customer")
    if not isinstance(customer, str) or not customer.strip():
        raise InputError(f"{where}: 'customer' must be the customer's non-empty text")
    expect = item.get("expect") or {}
    if not isinstance(expect, dict):
        raise InputError(f"{where}: 'expect' must be a mapping of {', '.join(EXPECT_KEYS)}")
    return Turn(customer=customer, expect=parse_expectation(expect, where=where))


def _only(item: dict, allowed: Sequence[str], where: str) -> None:
    extra = [str(k) for k in item if k not in allowed]
    if extra:
        raise InputError(f"{where}: unknown key(s) {', '.join(extra)}; expected {', '.join(allowed)}")


def _names(value: Any, known: dict[str, str], *, what: str, where: str) -> tuple[str, ...]:
    """Return the names ``value`` gives (one or a list), spelled as ``known`` maps their case-folded form."""
    if value is None:
        return ()
    listed = value if isinstance(value, list) else [value]
    if not listed or not all(isinstance(v, str) for v in listed):
        raise InputError(f"{where}: expect {what} must be a name or a list of names")
    unknown = [v for v in listed if v.casefold() not in known]
    if unknown:
        raise InputError(f"{where}: unknown {what}(s) {', '.join(unknown)}; expected {', '.join(known.values())}")
    return tuple(dict.fromkeys(known[v.casefold()] for v in listed))


def parse_expectation(data: dict, *, where: str = "expect") -> Expectation:
    """Return the ``Expectation`` of an ``expect`` mapping; raises ``InputError`` for unknown keys or values."""
    _only(data, EXPECT_KEYS, f"{where}: expect")
    kind = _names(data.get("kind"), {k: k for k in REPLY_KINDS}, what="reply kind", where=where)
    texts = {}
    for key in ("answer_id", "answer_contains", "contains", "not_contains"):
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise InputError(f"{where}: expect {key} must be a non-empty string")
        texts[key] = value
    state = _names(data.get("state"), {s.casefold(): s for s in STATES}, what="state", where=where)
    bounds = {}
    for key in ("min_confidence", "max_confidence"):
        value = data.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1 \
                    or math.isnan(value):
                raise InputError(f"{where}: expect {key} must be a number from 0 to 1, got {value!r}")
            value = float(value)
        bounds[key] = value
    if None not in bounds.values() and bounds["min_confidence"] > bounds["max_confidence"]:
        raise InputError(f"{where}: expect min_confidence is above max_confidence")
    return Expectation(kind=kind, state=state, **texts, **bounds)


# --- running --------------------------------------------------------------------------------------------

def run_tests(manager, tests: Iterable[ConversationTest]) -> list[TurnOutcome]:
    """Run every test as a fresh session of ``manager``; return one outcome per turn.

    A turn that raises a ``DTDialogError`` fails with the error as what the bot did (as a chat shows it);
    a storage fault stops the run, since no later turn could be saved either.
    """
    outcomes = []
    for test in tests:
        session_id = manager.start_session()
        for number, turn in enumerate(test.turns, start=1):
            try:
                result = manager.handle(session_id=session_id, text=turn.customer)
                got = TurnGot.of(result, _answer_text(manager, result.answer_id))
            except StorageError:
                raise
            except DTDialogError as exc:
                got = TurnGot(kind="error", reply="", state="", error=str(exc))
            failures = [f"error: {got.error}"] if got.error else turn.expect.failures(got)
            outcomes.append(TurnOutcome(test=test.name, number=number, customer=turn.customer, expect=turn.expect,
                                        got=got, failures=tuple(failures), known_failure=test.known_failure))
    return outcomes


def _answer_text(manager, answer_id: str | None) -> str | None:
    if answer_id is None:
        return None
    document = manager.selector.document(answer_id)
    return None if document is None else document.text


# --- reporting ------------------------------------------------------------------------------------------

def failed_tests(outcomes: Sequence[TurnOutcome]) -> set[str]:
    """Return the tests that fail the run: those with a failed turn not marked known."""
    return {o.test for o in outcomes if not o.passed and not o.known}


def summary(outcomes: Sequence[TurnOutcome]) -> str:
    """Return the one-line summary: tests and turns, passed and failed (and known failures, when there are)."""
    tests = list(dict.fromkeys(o.test for o in outcomes))
    failed = failed_tests(outcomes)
    known = {o.test for o in outcomes if o.known}
    failed_turns = sum(not o.passed and not o.known for o in outcomes)
    known_turns = sum(o.known for o in outcomes)
    line = (f"{len(tests)} test(s): {len(tests) - len(failed) - len(known)} passed, {len(failed)} failed; "
            f"{len(outcomes)} turn(s): {len(outcomes) - failed_turns - known_turns} passed, {failed_turns} failed")
    return line + (f"; {len(known)} known failure(s)" if known else "")


def report_lines(outcomes: Sequence[TurnOutcome]) -> list[str]:
    """Return the per-turn report: PASS/FAIL, and for a failure what was expected and what the bot did."""
    lines = []
    fixed = {o.test for o in outcomes if o.known_failure is not None} - {o.test for o in outcomes if o.known}
    for o in outcomes:
        lines.append(f"{'PASS' if o.passed else 'KNOWN' if o.known else 'FAIL'} {o.test} / turn {o.number}")
        if o.passed:
            if o.test in fixed and o.number == 1:
                lines.append(f"     marked known_failure ({o.known_failure}), but it passes here")
            continue
        if o.known:
            lines.append(f"     known failure: {o.known_failure}")
        lines.extend(f"     {problem}" for problem in o.failures)
        lines.append(f"     customer: {_one_line(o.customer)}")
        if not o.got.error:
            confidence = "-" if o.got.confidence is None else f"{o.got.confidence:.2f}"
            lines.append(f"     bot ({o.got.kind}, {o.got.state}, answer {o.got.answer_id or '-'}, "
                         f"confidence {confidence}): {_one_line(o.got.reply)}")
    return lines


def _one_line(text: str, limit: int = SHOWN_REPLY_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def junit_xml(outcomes: Sequence[TurnOutcome], *, suite: str = "dtdialog conversation tests") -> bytes:
    """Return a JUnit XML report: one ``testcase`` per turn (classname = the test), a ``failure`` per failed turn."""
    import xml.etree.ElementTree as ET

    failed = sum(not o.passed and not o.known for o in outcomes)
    known = sum(o.known for o in outcomes)
    root = ET.Element("testsuites", name=suite, tests=str(len(outcomes)), failures=str(failed), errors="0")
    element = ET.SubElement(root, "testsuite", name=suite, tests=str(len(outcomes)), failures=str(failed),
                            errors="0", skipped=str(known))
    for o in outcomes:
        case = ET.SubElement(element, "testcase", classname=o.test, name=f"turn {o.number}: {_one_line(o.customer, 80)}")
        if o.known:
            ET.SubElement(case, "skipped", message=f"known failure: {o.known_failure}; " + "; ".join(o.failures))
        elif not o.passed:
            failure = ET.SubElement(case, "failure", message="; ".join(o.failures), type="ExpectationFailed")
            failure.text = "\n".join([*o.failures, f"expected: {json.dumps(o.expect.to_dict(), ensure_ascii=False)}",
                                      f"got: {json.dumps(o.got.to_dict(), ensure_ascii=False)}"])
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def write_junit(path: str | Path, outcomes: Sequence[TurnOutcome]) -> Path:
    """Write ``junit_xml(outcomes)`` to ``path`` atomically (a failed write leaves no half-written report)."""
    from parsers.files import atomic_write

    data = junit_xml(outcomes)
    return atomic_write(path, lambda f: f.write(data))
