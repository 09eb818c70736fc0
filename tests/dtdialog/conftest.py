"""Fixtures shared by the dialogue tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def engine_workdir(tmp_path, monkeypatch) -> Path:
    """A working folder that is no project, with its own data home and no engine variables set."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DTDIALOG_HOME", str(tmp_path / "home"))
    for name in ("DTDIALOG_PARSER", "DTDIALOG_RANKER", "DTDIALOG_API_KEY", "DTDIALOG_ENCODER_RUNTIME",
                 "ELASTICSEARCH_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@pytest.fixture(scope="session")
def builtin_rules_index(tmp_path_factory) -> Path:
    """Return the built-in corpus indexed once per test run with the rule parser (the chat tests only read it)."""
    from parsers.base import get_parser
    from parsers.errors import DTDialogError

    try:
        parser = get_parser("rules")
        parser.parse("The car starts.")
    except DTDialogError as exc:
        pytest.skip(f"rule parser unavailable: {exc}")
    from dtdialog.setup.assembly import EngineSpec, build_engine

    path = tmp_path_factory.mktemp("builtin-rules") / "answers.sqlite"
    build_engine(EngineSpec(index_path=path, ranker="rules"), parser=parser, progress=False).close()
    return path


@pytest.fixture(scope="session")
def builtin_learned_index(tmp_path_factory) -> tuple[Path, object]:
    """Return ``(index path, rule parser)``: the whole built-in corpus indexed once per test run with MiniLM vectors
    for the learned ranker (built by ``build_engine``, as a user's first chat would); skip without them."""
    from index.dense import dense_available

    if not dense_available():
        pytest.skip("the [dense] extra (onnxruntime, tokenizers) is not installed")
    from dtdialog.ranking.learned_scorer import DEFAULT_MODEL

    if not DEFAULT_MODEL.is_file():
        pytest.skip("no shipped ranker model (python -m eval.train_ranker)")
    from dtdialog.setup.assembly import EngineSpec, build_engine
    from parsers.base import get_parser

    parser = get_parser("rules")
    path = tmp_path_factory.mktemp("builtin-learned") / "answers.sqlite"
    build_engine(EngineSpec(index_path=str(path), ranker="learned"), parser=parser, progress=False).close()
    return path, parser
