"""Fixtures shared by the dialogue tests."""

from __future__ import annotations

from pathlib import Path

import pytest


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
    from dtdialog.assembly import EngineSpec, build_engine

    path = tmp_path_factory.mktemp("builtin-rules") / "answers.sqlite"
    build_engine(EngineSpec(index_path=path, ranker="rules"), parser=parser, progress=False).close()
    return path
