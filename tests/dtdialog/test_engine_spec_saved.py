"""A saved engine spec pins what the environment would otherwise choose at build time: the Elasticsearch server (without
its password), what the neural parser's encoder runs and the corpus's content; it leaves out the machine's session
store."""

from __future__ import annotations

import json

import pytest

from dtdialog.cli import main
from dtdialog.setup.assembly import EngineSpec, build_engine
from dtdialog.setup.index_location import open_spec_index
from dtdialog.setup.spec_resolution import corpus_digest, resolve_spec
from parsers.errors import ConfigError, InputError

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


# --- the corpus's content ---------------------------------------------------------------------------------
FAQ = ('{"id": "d1", "turns": [{"role": "Q", "text": "My brakes squeal when I stop."}, '
       '{"role": "A", "text": "Replace the worn brake pads."}]}\n')


@pytest.fixture
def faq(workdir):
    (workdir / "faq.jsonl").write_text(FAQ)
    return workdir / "faq.jsonl"


def _one_line_error(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    return err


def test_a_saved_spec_records_the_content_of_the_corpus_it_reads(workdir, faq):
    assert main(["chat", "--corpus", "faq.jsonl", "--format", "jsonl", "--ranker", "rules",
                 "--save-engine", "engine.json"]) == 0
    assert json.loads((workdir / "engine.json").read_text())["corpus_digest"] == corpus_digest(str(faq), "jsonl")
    assert main(["chat", "--ranker", "rules", "--save-engine", "builtin.json"]) == 0  # the built-in corpus too
    assert json.loads((workdir / "builtin.json").read_text())["corpus_digest"] == corpus_digest(None, "builtin")
    (workdir / "answers.sqlite").touch()  # an index file alone: the file is what it reads, no corpus
    assert main(["chat", "--index", "answers.sqlite", "--ranker", "rules", "--save-engine", "index.json"]) == 0
    assert json.loads((workdir / "index.json").read_text())["corpus_digest"] is None


def test_an_edited_corpus_is_refused_in_one_line_when_loaded_and_when_built(workdir, faq, capsys):
    EngineSpec(corpus=str(faq), corpus_format="jsonl", ranker="rules").save(workdir / "engine.json")
    loaded = EngineSpec.load(workdir / "engine.json")
    faq.write_text(FAQ.replace("worn brake pads", "brake rotors"))
    err = _one_line_error(["chat", "--engine", "engine.json", "--script", "/dev/null"], capsys)
    assert f"the corpus {faq} changed since the spec was saved" in err
    assert "dtdialog chat --engine engine.json --save-engine engine.json" in err
    with pytest.raises(InputError, match="changed since the spec was saved") as caught:
        build_engine(loaded, progress=False)  # edited after the spec was loaded
    assert "\n" not in str(caught.value)


def test_a_folder_of_jsonl_files_is_a_corpus_a_spec_loads_and_guards(workdir, capsys):
    (workdir / "faq").mkdir()
    (workdir / "faq" / "brakes.jsonl").write_text(FAQ)
    EngineSpec(corpus=str(workdir / "faq"), corpus_format="jsonl", ranker="rules").save(workdir / "engine.json")
    assert EngineSpec.load(workdir / "engine.json").corpus == str(workdir / "faq")
    (workdir / "faq" / "more.jsonl").write_text(FAQ.replace("d1", "d2"))  # a file added to the folder
    err = _one_line_error(["chat", "--engine", "engine.json", "--script", "/dev/null"], capsys)
    assert "changed since the spec was saved" in err


def test_re_saving_a_spec_takes_its_corpus_as_it_is_now(workdir, faq, capsys):
    EngineSpec(corpus=str(faq), corpus_format="jsonl", ranker="rules").save(workdir / "engine.json")
    faq.write_text(FAQ.replace("worn brake pads", "brake rotors"))
    assert main(["chat", "--engine", "engine.json", "--save-engine", "engine.json"]) == 0
    assert EngineSpec.load(workdir / "engine.json").corpus_digest == corpus_digest(str(faq), "jsonl")


def test_other_line_ends_are_the_same_corpus_and_older_specs_load(workdir, faq):
    EngineSpec(corpus=str(faq), corpus_format="jsonl", ranker="rules").save(workdir / "engine.json")
    faq.write_bytes(FAQ.replace("\n", "\r\n").encode())
    assert EngineSpec.load(workdir / "engine.json").corpus == str(faq)
    data = json.loads((workdir / "engine.json").read_text())
    del data["corpus_digest"]  # saved before digests were recorded: not checked
    faq.write_text(FAQ.replace("worn brake pads", "brake rotors"))
    (workdir / "old.json").write_text(json.dumps(data))
    assert EngineSpec.load(workdir / "old.json").corpus_digest is None


def test_a_changed_built_in_corpus_is_named(workdir, monkeypatch, capsys):
    import shutil

    import data.builtin

    copy = workdir / "car_repair"
    shutil.copytree(data.builtin.builtin_corpus_dir(), copy)
    monkeypatch.setattr(data.builtin, "builtin_corpus_dir", lambda: copy)
    assert main(["chat", "--ranker", "rules", "--save-engine", "engine.json"]) == 0
    capsys.readouterr()
    first = sorted(copy.glob("*.jsonl"))[0]
    first.write_text(first.read_text() + FAQ)
    err = _one_line_error(["chat", "--engine", "engine.json", "--script", "/dev/null"], capsys)
    assert "the built-in corpus changed since the spec was saved" in err
