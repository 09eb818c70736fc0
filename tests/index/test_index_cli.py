"""``dtdialog index build`` / ``dtdialog index search`` end to end on a JSONL corpus written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from index_helpers import StandInParser, small_corpus

from dtdialog.cli import main
from parsers.base import register_parser

register_parser("standin-test")(StandInParser)


@pytest.fixture()
def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(d.to_dict()) for d in small_corpus()) + "\n")
    return path


@pytest.fixture()
def built(tmp_path: Path, corpus_file: Path, capsys) -> Path:
    out = tmp_path / "ix.sqlite"
    code = main(["index", "build", "--corpus", str(corpus_file), "--format", "jsonl", "--out", str(out),
                 "--parser", "standin-test", "--quiet"])
    assert code == 0
    assert "indexed 5 of 5 answers from 4 dialogues" in capsys.readouterr().out
    return out


def test_search_prints_hits_with_matched_fields(built: Path, capsys) -> None:
    assert main(["index", "search", "Contrast [battery fine]", "--index", str(built)]) == 0
    out = capsys.readouterr().out
    assert "nostart#1" in out
    assert "rr_edu: Contrast [The starter may be worn but the battery is fine.]" in out
    assert "rr_terms: Contrast [battery fine]" in out


def test_search_json_and_relation_filter(built: Path, capsys) -> None:
    assert main(["index", "search", "battery fuse", "--index", str(built), "--relation", "Cause", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in rows] == ["overheat#1"]
    assert rows[0]["matched"]["keywords"] == ["fuse"] and "Cause" in rows[0]["relations"]


def test_syntax_characters_are_searched_as_text(built: Path, capsys) -> None:
    assert main(["index", "search", 'NEAR("belt" -rotor*) OR (fuse):', "--index", str(built)]) == 0
    assert "alt#1" in capsys.readouterr().out


def test_no_hits_exit_code(built: Path, capsys) -> None:
    assert main(["index", "search", "zeppelin", "--index", str(built)]) == 1
    assert "no answers matched" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["index", "search", "   "], "error: empty query"),
    (["index", "search", "* : ( ) AND"], "error: the query"),
    (["index", "search", "belt", "--relation", "Nope"], "error: unknown relation 'Nope'"),
])
def test_bad_queries_are_one_line_errors(built: Path, capsys, argv: list[str], message: str) -> None:
    assert main([*argv, "--index", str(built)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_missing_index_and_bad_corpus(tmp_path: Path, corpus_file: Path, capsys) -> None:
    assert main(["index", "search", "belt", "--index", str(tmp_path / "none.sqlite")]) == 2
    assert "index not found at" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(corpus_file.read_text() + "{broken\n")
    out = tmp_path / "ix.sqlite"
    assert main(["index", "build", "--corpus", str(bad), "--format", "jsonl", "--out", str(out),
                 "--parser", "standin-test", "--quiet", "--on-error", "raise"]) == 2
    assert "bad.jsonl:5: not valid JSON" in capsys.readouterr().err
    assert not out.exists()
    assert main(["index", "build", "--corpus", str(bad), "--format", "jsonl", "--out", str(out),
                 "--parser", "standin-test", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "skipped 1 malformed record(s); first: " in captured.err and "bad.jsonl:5" in captured.err
    assert out.exists()


def test_unknown_backend_format_and_es_url(tmp_path: Path, corpus_file: Path, capsys, monkeypatch) -> None:
    with pytest.raises(SystemExit):
        main(["index", "build", "--corpus", str(corpus_file), "--format", "xml"])
    with pytest.raises(SystemExit):
        main(["index", "search", "belt", "--backend", "solr"])
    capsys.readouterr()
    monkeypatch.delenv("ELASTICSEARCH_URL", raising=False)
    assert main(["index", "search", "belt", "--backend", "elasticsearch"]) == 2
    assert "no Elasticsearch URL" in capsys.readouterr().err
    assert main(["index", "search", "belt", "--backend", "elasticsearch", "--es-url", "http://127.0.0.1:9"]) == 2
    assert "cannot reach Elasticsearch at http://127.0.0.1:9" in capsys.readouterr().err


def test_build_dense_refuses_early_without_the_extra(tmp_path: Path, corpus_file: Path, capsys, monkeypatch) -> None:
    import index.dense

    monkeypatch.setattr(index.dense, "dense_available", lambda: False)
    out = tmp_path / "d.sqlite"
    assert main(["index", "build", "--corpus", str(corpus_file), "--format", "jsonl", "--out", str(out),
                 "--parser", "standin-test", "--quiet", "--dense"]) == 2
    assert "--dense needs the [dense] extra" in capsys.readouterr().err and not out.exists()


@pytest.mark.dense
def test_build_dense_writes_vectors_and_sg_phrases_beside_the_index(tmp_path: Path, corpus_file: Path, capsys) -> None:
    from index.dense import dense_available

    if not dense_available():
        pytest.skip("the [dense] extra is not installed")
    from index.dense_store import DenseStore
    from index.sg_store import sg_path

    out = tmp_path / "d.sqlite"
    assert main(["index", "build", "--corpus", str(corpus_file), "--format", "jsonl", "--out", str(out),
                 "--parser", "standin-test", "--quiet", "--dense"]) == 0
    assert len(DenseStore.load(out)) == 5 and sg_path(out).is_file()


def test_force_and_wait_are_sqlite_options(tmp_path: Path, corpus_file: Path, capsys) -> None:
    assert main(["index", "build", "--corpus", str(corpus_file), "--format", "jsonl", "--backend", "elasticsearch",
                 "--es-url", "http://127.0.0.1:9", "--parser", "standin-test", "--quiet", "--force"]) == 2
    assert "--force, --wait and --drop-api-answers apply to the sqlite backend only" in capsys.readouterr().err
    for bad in ("-1", "soon"):
        with pytest.raises(SystemExit):
            main(["index", "build", "--corpus", str(corpus_file), "--format", "jsonl", "--wait", bad])
        assert "--wait: expected" in capsys.readouterr().err


def test_a_second_build_of_a_locked_out_is_one_clear_line(built: Path, corpus_file: Path, capsys) -> None:
    from index.index_files import build_lock

    before = built.read_bytes()
    with build_lock(built):  # stands for a build running in another process
        assert main(["index", "build", "--corpus", str(corpus_file), "--format", "jsonl", "--out", str(built),
                     "--parser", "standin-test", "--quiet", "--wait", "0.3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: another build (pid ") and err.count("\n") == 1
    assert built.read_bytes() == before
