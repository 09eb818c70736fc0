"""``dtdialog parse``: output forms, stdin, images, and one-line errors for bad input."""

from __future__ import annotations

import io
import json
import sys

import pytest

from dtdialog.cli import main
from parsers.text_input import MAX_CHARS

PAPER = ("I have checked the spark plugs, replaced the battery, also replaced ignition coils and the solenoid, "
         "but I still could not start my car.")


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


def assert_one_line_error(capsys, code: int, needle: str) -> None:
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], err
    assert "Traceback" not in err


def test_parse_paper_example_shows_contrast(capsys):
    assert main(["parse", PAPER]) == 0
    out = capsys.readouterr().out
    assert "Concession" in out or "Contrast" in out
    assert "[3] but I still could not start my car." in out
    assert "[N]" in out  # the compact form follows the drawing


def test_parse_json(capsys, monkeypatch):
    from parsers.base import default_parser_name

    monkeypatch.delenv("DTDIALOG_PARSER", raising=False)
    assert main(["parse", "--json", PAPER]) == 0
    data = json.loads(capsys.readouterr().out)
    # the default parser: neural where it is installed (it beat the rules on GUM), the rules otherwise
    assert data["parser"] == default_parser_name() and len(data["edus"]) >= 3
    assert main(["parse", "--json", "--parser", "rules", PAPER]) == 0
    assert json.loads(capsys.readouterr().out)["parser"] == "rules"


def test_parse_stdin_and_image(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "stdin", _Stdin(PAPER.encode("utf-8")))
    out_svg = tmp_path / "tree.svg"
    assert main(["parse", "-", "--image", str(out_svg)]) == 0
    assert out_svg.read_text(encoding="utf-8").startswith("<svg")
    assert "wrote" in capsys.readouterr().err


@pytest.mark.parametrize("argv,stdin,needle", [
    (["parse", ""], None, "empty"),
    (["parse", "   \n "], None, "empty"),
    (["parse", "-"], b"\xff\xfe broken", "not valid UTF-8"),
    (["parse", "-"], b"", "no text"),
    (["parse", "x" * (MAX_CHARS + 5)], None, "100,000"),
    (["parse", "hello", "--image", "out.gif"], None, ".svg or .png"),
    (["parse", "hello", "--parser", "nope"], None, "unknown parser"),
])
def test_bad_input_one_line_error(capsys, monkeypatch, argv, stdin, needle):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", _Stdin(stdin))
    assert_one_line_error(capsys, main(argv), needle)


@pytest.mark.parametrize("text", ["Hello", "🚗😤", "<p>My <b>car</b> stalls.</p>"])
def test_odd_but_valid_input_parses(capsys, text):
    assert main(["parse", text]) == 0
    out = capsys.readouterr().out
    assert "[0]" in out and "<" not in out
