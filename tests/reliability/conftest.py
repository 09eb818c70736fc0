"""Fixtures of the reliability suite (the hostile probe of issue 14 kept as tests): a small answer index, apps over
it, and a check that commands can run in a private mount namespace (helpers: ``reliability_helpers``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from protection_helpers import LOCAL_URL, NO_QUOTAS
from reliability_helpers import API_KEY, STRIDE, namespaces_work

from dtdialog.api import ApiSettings, create_app


@pytest.fixture(scope="session")
def small_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return a SQLite answer index over every ``STRIDE``-th built-in dialogue (built once per run, never written to)."""
    from data.builtin import load_builtin_corpus
    from dtdialog.setup.assembly import engine_parser_name
    from index.builder import build_index
    from parsers.base import get_parser

    out = tmp_path_factory.mktemp("reliability-index") / "answers.sqlite"
    build_index(dialogues=load_builtin_corpus()[::STRIDE], parser=get_parser(engine_parser_name()), backend="sqlite", out=out,
                progress=False)
    return out


@pytest.fixture
def index_copy(small_index: Path, tmp_path: Path) -> Path:
    """Return a private copy of the small index (tests that write to it or lock it)."""
    dst = tmp_path / "index" / "answers.sqlite"
    dst.parent.mkdir()
    with sqlite3.connect(small_index) as src, sqlite3.connect(dst) as out:
        src.backup(out)
    return dst


@pytest.fixture
def make_client(small_index: Path, tmp_path: Path) -> Iterator[Callable[..., TestClient]]:
    """Return a factory of started TestClients over the small index (sessions in this test's tmp dir).

    The clients send a Host the server answers and the API key, and the quotas are off: these tests probe faults,
    not access control or quotas (``test_index_protection``, ``test_quotas``)."""
    defaults: dict[str, Any] = {"index_path": small_index, "sessions_path": tmp_path / "sessions.sqlite",
                                "api_key": API_KEY, "ranker": "rules", **NO_QUOTAS}
    with ExitStack() as started:  # every client is shut down (its engine closed) at teardown
        yield lambda **overrides: started.enter_context(
            TestClient(create_app(ApiSettings(**{**defaults, **overrides})), base_url=LOCAL_URL,
                       raise_server_exceptions=False, headers={"X-API-Key": API_KEY}))


@pytest.fixture(scope="session")
def mount_namespace() -> None:
    """Skip unless a command can be run in a private mount namespace where it may mount (nothing leaks out)."""
    reason = namespaces_work()
    if reason is not None:
        pytest.skip(f"no private mount namespace: {reason}")


