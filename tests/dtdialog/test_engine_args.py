"""One engine description: chat, test and serve read the same engine options into the same ``EngineSpec``; a saved
spec records what this machine resolved and is refused in one line where it cannot be built."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from dtdialog.api import ApiSettings
from dtdialog.cli import build_parser, main
from dtdialog.commands import chat, serve
from dtdialog.setup.assembly import EngineSpec
from dtdialog.setup.engine_args import spec_from_args
from parsers.errors import ConfigError


@pytest.fixture
def workdir(engine_workdir):
    """The engine work folder with an (empty) index file in it."""
    (engine_workdir / "answers.sqlite").touch()
    return engine_workdir


def _specs(argv: list[str]) -> dict[str, EngineSpec]:
    """Return the spec each command builds from the same engine options."""
    parser = build_parser()
    return {"chat": chat.engine_spec(parser.parse_args(["chat", *argv])),
            "test": spec_from_args(parser.parse_args(["test", *argv])),
            "serve": serve.settings_from_args(parser.parse_args(["serve", *argv])).engine}


@pytest.mark.parametrize("argv", [
    [],
    ["--index", "answers.sqlite", "--parser", "rules", "--ranker", "rules", "--sessions", "s.sqlite"],
    ["--corpus", "dialogues.jsonl", "--format", "jsonl", "--profile", "p.yaml", "--backend", "sqlite"],
])
def test_chat_test_and_serve_read_the_engine_options_into_the_same_spec(workdir, argv):
    specs = _specs(argv)
    assert specs["chat"] == specs["test"] == specs["serve"]


def test_a_corpus_without_its_format_is_the_same_one_line_error_everywhere(workdir):
    for command in ("chat", "test", "serve"):
        with pytest.raises(ConfigError, match="--corpus needs --format"):
            _specs_of(command, ["--corpus", "dialogues.jsonl"])


def _specs_of(command: str, argv: list[str]) -> EngineSpec:
    return _specs(argv)[command] if command == "chat" else spec_from_args(build_parser().parse_args([command, *argv]))


def _saved(path, **fields) -> str:
    path.write_text(json.dumps({"format": 1, **fields}))
    return str(path)


def test_serve_engine_runs_the_saved_spec(workdir):
    spec = EngineSpec(parser="rules", index_path=str(workdir / "answers.sqlite"), ranker="rules",
                      sessions_path=str(workdir / "s.sqlite"))
    saved = spec.save(workdir / "engine.json")
    settings = serve.settings_from_args(build_parser().parse_args(["serve", "--engine", str(saved)]))
    assert settings.engine == replace(EngineSpec.load(saved), sessions_path=str(workdir / "home" / "sessions.sqlite"))
    assert settings.index_path == workdir / "answers.sqlite"  # the store is this machine's default, not the spec's


@pytest.mark.parametrize("argv, needle", [
    (["--engine", "missing.json"], "cannot read engine spec"),
    (["--engine", "engine.json", "--ranker", "rules"], "--ranker"),
])
def test_serve_with_a_bad_engine_spec_is_one_line_exit_2(workdir, capsys, argv, needle):
    _saved(workdir / "engine.json", parser="rules", ranker="rules")
    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and needle in err and len(err.strip().splitlines()) == 1


def test_a_saved_spec_records_the_resolved_parser_and_ranker(workdir, monkeypatch):
    monkeypatch.setenv("DTDIALOG_RANKER", "rules")
    assert main(["chat", "--index", "answers.sqlite", "--save-engine", "engine.json"]) == 0
    saved = json.loads((workdir / "engine.json").read_text())
    assert saved["parser"] == "rules" and saved["ranker"] == "rules"  # the defaults here, not null
    assert saved["index_path"] == str(workdir / "answers.sqlite")  # absolute: loadable from another folder
    monkeypatch.setenv("DTDIALOG_RANKER", "learned")  # the environment no longer decides
    assert EngineSpec.load(workdir / "engine.json").ranker == "rules"


def test_a_learned_spec_records_the_model_version_and_encoder_runtime(workdir):
    pytest.importorskip("onnxruntime")
    from index.dense import dense_available

    if not dense_available():
        pytest.skip("the [dense] extra is not installed")
    EngineSpec(index_path=str(workdir / "answers.sqlite"), ranker="learned").save(workdir / "engine.json")
    saved = json.loads((workdir / "engine.json").read_text())
    assert saved["ranker_version"] == "ranker-v1" and saved["encoder_runtime"] in ("onnxruntime", "openvino")
    _saved(workdir / "other.json", ranker="learned", ranker_version="ranker-v0")
    with pytest.raises(ConfigError, match="saved with 'ranker-v0'"):
        EngineSpec.load(workdir / "other.json")


@pytest.mark.parametrize("fields, needle", [
    ({"ranker": "learned", "ranker_model": "/nonexistent/ranker.joblib"}, "/nonexistent/ranker.joblib is missing"),
    ({"parser": "no-such-parser"}, "parser 'no-such-parser' is not installed"),
    ({"corpus": "/nonexistent/d.jsonl", "corpus_format": "jsonl"}, "/nonexistent/d.jsonl is missing"),
])
def test_a_spec_this_machine_cannot_build_is_one_line_naming_why(workdir, capsys, fields, needle):
    spec = _saved(workdir / "engine.json", **fields)
    with pytest.raises(ConfigError, match="cannot be built here") as caught:
        EngineSpec.load(spec)
    assert needle in str(caught.value) and "\n" not in str(caught.value)
    assert main(["chat", "--engine", spec, "--script", "/dev/null"]) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1


def test_api_settings_hold_one_engine_spec(tmp_path):
    settings = ApiSettings(index_path=tmp_path / "a.sqlite", ranker="rules", sessions_path=tmp_path / "s.sqlite")
    assert settings.engine == EngineSpec(index_path=str(tmp_path / "a.sqlite"), ranker="rules",
                                         sessions_path=str(tmp_path / "s.sqlite"))
    assert ApiSettings.from_worker_data(settings.to_worker_data()).engine == settings.engine
    with pytest.raises(ConfigError, match="not both"):
        ApiSettings(engine=settings.engine, ranker="learned")
