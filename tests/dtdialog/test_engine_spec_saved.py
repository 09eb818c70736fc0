"""A saved engine spec pins what the environment would otherwise choose at build time: the Elasticsearch server (without
its password) and what the neural parser's encoder runs."""

from __future__ import annotations

import json

import pytest

from dtdialog.cli import main
from dtdialog.setup.assembly import EngineSpec
from dtdialog.setup.index_location import open_spec_index
from dtdialog.setup.spec_resolution import resolve_spec
from parsers.errors import ConfigError

SAVED = "http://es.saved:9200"
WITH_PASSWORD = "http://elastic:s3cret@es.saved:9200"


@pytest.fixture
def workdir(engine_workdir):
    return engine_workdir


class _Connected(Exception):
    """Raised by the stand-in Elasticsearch index with the URL it was asked to connect to."""


@pytest.fixture
def connect_url(monkeypatch):
    """Return a function that opens a spec's index and gives the URL the Elasticsearch client would connect to."""
    import index.es_index

    def refuse(url, **_):
        raise _Connected(url)

    monkeypatch.setattr(index.es_index, "ElasticsearchIndex", refuse)

    def url_of(spec: EngineSpec) -> str:
        with pytest.raises(_Connected) as caught:
            open_spec_index(spec, None, progress=False)
        return str(caught.value)

    return url_of


# --- the Elasticsearch server -----------------------------------------------------------------------------
def test_a_saved_elasticsearch_spec_records_the_server_the_environment_named(workdir, monkeypatch):
    monkeypatch.setenv("ELASTICSEARCH_URL", WITH_PASSWORD)
    assert main(["chat", "--backend", "elasticsearch", "--ranker", "rules", "--save-engine", "engine.json"]) == 0
    text = (workdir / "engine.json").read_text()
    assert json.loads(text)["index_url"] == SAVED and "s3cret" not in text  # the server, never its password


def test_an_explicit_url_is_saved_without_its_credentials(workdir):
    spec = EngineSpec(backend="elasticsearch", index_url=WITH_PASSWORD, ranker="rules")
    assert resolve_spec(spec).index_url == SAVED
    assert resolve_spec(EngineSpec(index_url=WITH_PASSWORD)).index_url == WITH_PASSWORD  # sqlite: not a server


def test_saving_an_elasticsearch_spec_without_a_url_is_one_line(workdir, capsys):
    assert main(["chat", "--backend", "elasticsearch", "--save-engine", "engine.json"]) == 2
    err = capsys.readouterr().err
    assert "no Elasticsearch URL" in err and len(err.strip().splitlines()) == 1
    assert not (workdir / "engine.json").exists()


def test_a_loaded_spec_connects_to_its_server_with_the_environments_credentials(workdir, monkeypatch, connect_url):
    EngineSpec(backend="elasticsearch", index_url=SAVED, ranker="rules").save(workdir / "engine.json")
    spec = EngineSpec.load(workdir / "engine.json")
    monkeypatch.setenv("ELASTICSEARCH_URL", WITH_PASSWORD)
    assert connect_url(spec) == WITH_PASSWORD
    # credentials for another server are never sent to the saved one, and that server does not replace it
    monkeypatch.setenv("ELASTICSEARCH_URL", "http://elastic:s3cret@localhost:9200")
    assert connect_url(spec) == SAVED


def test_es_url_beside_engine_gives_the_saved_servers_credentials(workdir, monkeypatch, capsys):
    EngineSpec(backend="elasticsearch", index_url=SAVED, ranker="rules").save(workdir / "engine.json")
    import dtdialog.setup.engine_args as engine_args
    from dtdialog.cli import build_parser

    args = build_parser().parse_args(["chat", "--engine", "engine.json", "--es-url", WITH_PASSWORD])
    assert engine_args.spec_from_args(args).index_url == WITH_PASSWORD
    assert main(["chat", "--engine", "engine.json", "--es-url", "http://elastic:s3cret@other:9200",
                 "--script", "/dev/null"]) == 2
    err = capsys.readouterr().err
    assert "not the server the spec" in err and "s3cret" not in err and len(err.strip().splitlines()) == 1


# --- the neural parser's encoder --------------------------------------------------------------------------
@pytest.fixture
def neural_here():
    from parsers.base import neural_ready

    if not neural_ready():
        pytest.skip("the neural parser cannot run here (the [dense] extra and onnx)")


@pytest.mark.parametrize("runtime", ["openvino", "onnxruntime", "auto"])
def test_a_neural_spec_records_its_int8_onnxruntime_encoder_whatever_the_environment_says(workdir, monkeypatch,
                                                                                           neural_here, runtime):
    from parsers.neural.encoder import MiniLMWordEncoder

    monkeypatch.setenv("DTDIALOG_ENCODER_RUNTIME", runtime)
    assert MiniLMWordEncoder().encoder.runtime == "onnxruntime"  # the environment is dense retrieval's choice only
    resolved = resolve_spec(EngineSpec(parser="neural", ranker="rules"))
    assert resolved.parser_encoder.endswith("/onnxruntime-int8")
    assert resolve_spec(EngineSpec(parser="rules", ranker="rules")).parser_encoder is None


def test_a_neural_spec_saved_with_another_encoder_is_refused_in_one_line(workdir, neural_here):
    EngineSpec(parser="neural", ranker="rules").save(workdir / "engine.json")
    assert EngineSpec.load(workdir / "engine.json").parser_encoder.endswith("/onnxruntime-int8")
    data = json.loads((workdir / "engine.json").read_text())
    (workdir / "engine.json").write_text(json.dumps({**data, "parser_encoder": "all-MiniLM-L6-v2-other/openvino-bf16"}))
    with pytest.raises(ConfigError, match="saved with 'all-MiniLM-L6-v2-other/openvino-bf16'") as caught:
        EngineSpec.load(workdir / "engine.json")
    assert "\n" not in str(caught.value)


# --- the session store ------------------------------------------------------------------------------------
def test_a_saved_spec_holds_no_session_store(workdir):
    assert main(["chat", "--ranker", "rules", "--sessions", "mine.sqlite", "--save-engine", "engine.json"]) == 0
    data = json.loads((workdir / "engine.json").read_text())
    assert "sessions_path" not in data and "mine.sqlite" not in json.dumps(data)
    EngineSpec(ranker="rules", sessions_path=str(workdir / "s.sqlite")).save(workdir / "api.json")
    assert "sessions_path" not in json.loads((workdir / "api.json").read_text())


def test_a_spec_naming_another_machines_session_store_creates_nothing_there(workdir, builtin_rules_index):
    foreign = workdir / "someoneelse" / ".cache" / "dtdialog" / "sessions.sqlite"
    old = resolve_spec(EngineSpec(index_path=str(builtin_rules_index), ranker="rules", sessions_path=str(foreign)))
    (workdir / "engine.json").write_text(json.dumps(old.to_dict()))  # as specs were saved before
    assert json.loads((workdir / "engine.json").read_text())["sessions_path"] == str(foreign)
    assert EngineSpec.load(workdir / "engine.json").sessions_path is None
    (workdir / "turns.txt").write_text("my brakes squeal\n")
    assert main(["chat", "--engine", "engine.json", "--script", "turns.txt", "--quiet"]) == 0
    assert not (workdir / "someoneelse").exists()
    assert (workdir / "home" / "sessions.sqlite").is_file()  # this machine's default store
    assert main(["chat", "--engine", "engine.json", "--sessions", "here.sqlite", "--script", "turns.txt",
                 "--quiet"]) == 0
    assert (workdir / "here.sqlite").is_file() and not (workdir / "someoneelse").exists()
