"""A small SQLite index of the built-in corpus with MiniLM vectors beside it (needs the [dense] extra)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def dense_index(tmp_path_factory):
    """Return the path of a 12-dialogue built-in-corpus index built with ``dense=True``; skip without the extra."""
    from index.dense import dense_available

    if not dense_available():
        pytest.skip("the [dense] extra (onnxruntime, tokenizers) is not installed")
    from data.builtin import load_builtin_corpus
    from dtdialog.setup.assembly import engine_parser_name
    from index.builder import build_index
    from parsers.base import get_parser

    path = tmp_path_factory.mktemp("ranking") / "answers.sqlite"
    build_index(dialogues=load_builtin_corpus()[:12], parser=get_parser(engine_parser_name()), backend="sqlite", out=path,
                progress=False, dense=True)
    return path


@pytest.fixture(scope="session")
def dense_signals(dense_index):
    from dtdialog.ranking.dense_signals import DenseSignals
    from index.dense import DenseEncoder
    from index.dense_store import DenseStore

    return DenseSignals(store=DenseStore.load(dense_index), encoder=DenseEncoder())
