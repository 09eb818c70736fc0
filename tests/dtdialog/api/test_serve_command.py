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
    (["serve", "--turn-rate", "lots"], "turn_rate"),
    (["serve", "--session-rate", "5/fortnight"], "session_rate"),
    (["serve", "--session-ttl", "soon"], "session_ttl"),
    (["serve", "--max-sessions", "0"], "max_sessions"),
    (["serve", "--engine-seconds", "-1"], "engine_seconds"),
    (["serve", "--engine-threads", "0"], "engine_threads"),
    (["serve", "--engine-threads", "17"], "engine_threads"),
    (["serve", "--allowed-hosts", "localhost:8000"], "allowed host"),
    (["serve", "--api-key-file", "/nonexistent/key"], "cannot read the API key file"),
    (["serve", "--forwarded-allow-ips", "127.0.0.1,proxy.local"], "--forwarded-allow-ips"),
])
def test_bad_options_exit_2_with_one_line(capsys, argv, needle):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and needle in err and "Traceback" not in err


def test_a_short_api_key_from_the_environment_is_refused(capsys, monkeypatch):
    monkeypatch.setenv("DTDIALOG_API_KEY", "abc")
    assert main(["serve"]) == 2
    assert "DTDIALOG_API_KEY" in capsys.readouterr().err


def test_an_api_key_file_is_read_and_must_agree_with_the_environment(tmp_path, capsys, monkeypatch):
    from dtdialog.commands.serve import api_key

    key_file = tmp_path / "key"
    key_file.write_text("file-key-0123456789\n")
    key_file.chmod(0o600)
    assert api_key(key_file) == "file-key-0123456789"
    empty = tmp_path / "empty"
    empty.write_text("\n")
    assert main(["serve", "--api-key-file", str(empty)]) == 2
    assert "one key on one line" in capsys.readouterr().err
    monkeypatch.setenv("DTDIALOG_API_KEY", "env-key-0123456789")
    assert main(["serve", "--api-key-file", str(key_file)]) == 2
    assert "differ" in capsys.readouterr().err


def test_the_bound_host_and_the_named_hosts_are_answered():
    from dtdialog.commands.serve import allowed_hosts

    assert allowed_hosts("127.0.0.1", None) == ("localhost", "127.0.0.1", "::1")
    assert allowed_hosts("0.0.0.0", "support.example.com, *.cars.example") == (
        "localhost", "127.0.0.1", "::1", "support.example.com", "*.cars.example")
    assert "192.168.1.5" in allowed_hosts("192.168.1.5", None) and "::" not in allowed_hosts("::", None)
