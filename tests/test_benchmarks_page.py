"""Every command quoted in docs/benchmarks.md exists and accepts its arguments.

How: each command line of the page's code blocks is run in this process up to its argument parsing and no
further: ``python -m eval.X`` runs the module's file (a package's ``__main__.py``) as ``__main__``, as ``python -m`` does. ``argparse.ArgumentParser.parse_known_args`` (which ``parse_args`` calls) is wrapped so that, once a
parser has parsed the command's arguments, it raises ``Parsed`` instead of returning: the module's own parser,
with its own types and choices, judges the arguments, and no benchmark runs. An unknown option or a bad value is
argparse's exit 2; a missing module is an ``ImportError``. ``dtdialog`` commands go through
``dtdialog.cli.main`` the same way (``dtdialog eval ...`` reaches the evaluation's own parser). ``python -m pytest``
lines must name test files that exist. Leading ``VAR=value`` assignments and ``nice -n N`` are skipped.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import runpy
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "benchmarks.md"
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)


class Parsed(Exception):
    """The command's arguments were parsed: stop before it runs."""


def commands(text: str) -> list[list[str]]:
    """Return the command lines of the code blocks of ``text`` as argument lists (continuations joined)."""
    out = []
    for block in FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
                words = words[1:]
            if words[:1] == ["nice"]:
                words = words[3:] if words[1:2] == ["-n"] else words[1:]
            if words:
                out.append(words)
    return out


def parse_only(monkeypatch, run) -> None:
    """Call ``run()`` and stop it once its arguments are parsed; fail if they are refused."""
    original = argparse.ArgumentParser.parse_known_args

    def parse_known_args(self, args=None, namespace=None):
        ns, rest = original(self, args, namespace)
        if getattr(ns, "_pass_through", False):  # dtdialog's sub-command parses the rest itself
            return ns, rest
        if rest:
            self.error(f"unrecognized arguments: {' '.join(rest)}")
        raise Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", parse_known_args)
    with pytest.raises(Parsed):
        run()


def module_file(name: str) -> str:
    """Return the file ``python -m name`` runs."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ImportError(f"no module named {name}")
    return str(Path(spec.origin).with_name("__main__.py") if spec.submodule_search_locations else spec.origin)


def check(monkeypatch, words: list[str]) -> None:
    """Check one command line; fail with the reason."""
    if words[:3] == ["python", "-m", "pytest"]:
        files = [w.split("::")[0] for w in words[3:] if not w.startswith("-") and w.endswith(".py")]
        assert files and all((ROOT / f).is_file() for f in files), f"no such test file in {shlex.join(words)}"
    elif words[:2] == ["python", "-m"] and words[2].startswith("eval."):
        monkeypatch.setattr(sys, "argv", words[2:])
        parse_only(monkeypatch, lambda: runpy.run_path(module_file(words[2]), run_name="__main__"))
    elif words[0] == "dtdialog":
        from dtdialog.cli import main

        parse_only(monkeypatch, lambda: main(words[1:]))
    else:
        pytest.fail(f"not a checkable command: {shlex.join(words)}")


QUOTED = commands(PAGE.read_text(encoding="utf-8"))


def test_the_page_quotes_commands():
    assert len(QUOTED) >= 10 and any(w[:3] == ["python", "-m", "eval.reconstruct"] for w in QUOTED)


@pytest.mark.parametrize("words", QUOTED, ids=[shlex.join(w) for w in QUOTED])
def test_command_exists_and_parses_its_arguments(monkeypatch, words):
    check(monkeypatch, words)


@pytest.mark.parametrize("line", [
    "python -m eval.parser_bench --gum x --no-such-option",
    "python -m eval.parser_bench --split nope",
    "python -m eval.no_such_bench --runs 3",
    "dtdialog chat --no-such-option",
    "dtdialog eval selective --no-such-option",
    "python -m pytest tests/no_such_test.py",
])
def test_a_wrong_command_is_caught(monkeypatch, line):
    (words,) = commands(f"```\n{line}\n```\n")
    with pytest.raises((SystemExit, ImportError, AssertionError)):
        check(monkeypatch, words)


def test_env_and_nice_prefixes_and_continuations_are_read():
    text = "```bash\nHF_HUB_OFFLINE=1 nice -n 10 python -m eval.x --a 1 \\\n    --b 2   # note\n```\n"
    assert commands(text) == [["python", "-m", "eval.x", "--a", "1", "--b", "2"]]
