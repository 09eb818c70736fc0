"""``dtdialog serve`` options: bad values are one-line errors (exit 2), never a traceback."""

from __future__ import annotations

import pytest

from dtdialog.cli import build_parser, main


def test_serve_is_a_registered_command_with_its_options():
    args = build_parser().parse_args(["serve", "--port", "8123", "--sessions", "s.sqlite", "--index", "i.sqlite"])
    assert args.command == "serve" and args.port == 8123 and str(args.sessions) == "s.sqlite"
    assert args.host == "127.0.0.1"  # local only unless asked


@pytest.mark.parametrize(("argv", "needle"), [
    (["serve", "--port", "70000"], "--port"),
    (["serve", "--backend", "mongodb"], "backend"),
    (["serve", "--max-body-bytes", "0"], "max_body_bytes"),
])
def test_bad_options_exit_2_with_one_line(capsys, argv, needle):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and needle in err and "Traceback" not in err


def test_a_short_api_key_from_the_environment_is_refused(capsys, monkeypatch):
    monkeypatch.setenv("DTDIALOG_API_KEY", "abc")
    assert main(["serve"]) == 2
    assert "DTDIALOG_API_KEY" in capsys.readouterr().err
