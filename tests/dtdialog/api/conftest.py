"""Fixtures for the API tests: a small hand-written answer index in a tmp dir and apps over it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from api_helpers import LOCAL_URL, keep_session_tokens, small_dialogues
from fastapi import FastAPI
from fastapi.testclient import TestClient

from dtdialog.api import ApiSettings, create_app


@pytest.fixture(scope="session")
def parser() -> Any:
    from dtdialog.setup.assembly import engine_parser_name
    from parsers.base import get_parser

    return get_parser(engine_parser_name())


@pytest.fixture(scope="session")
def small_index(tmp_path_factory: pytest.TempPathFactory, parser: Any) -> Path:
    """Return the path of a SQLite answer index over the hand-written dialogues (built once per test run)."""
    from index.builder import build_index

    out = tmp_path_factory.mktemp("index") / "answers.sqlite"
    build_index(dialogues=small_dialogues(), parser=parser, backend="sqlite", out=out, progress=False)
    return out


@pytest.fixture
def index_copy(small_index: Path, tmp_path: Path) -> Path:
    """Return a private copy of the small index, for tests that write to it."""
    import sqlite3

    dst = tmp_path / "answers.sqlite"
    with sqlite3.connect(small_index) as src, sqlite3.connect(dst) as out:
        src.backup(out)
    return dst


@pytest.fixture
def make_settings(small_index: Path, tmp_path: Path) -> Callable[..., ApiSettings]:
    """Return a factory of settings over the small index with sessions in this test's tmp dir."""

    def make(**overrides: Any) -> ApiSettings:
        # The HTTP tests check the API, not ranking: they pin the rule scorer (the default ``auto`` would
        # pick the learned ranker whenever the [dense] extra is installed); test_api_ranking.py covers that one.
        values: dict[str, Any] = {"index_path": small_index, "sessions_path": tmp_path / "sessions.sqlite",
                                  "api_key": None, "ranker": "rules"}
        values.update(overrides)
        return ApiSettings(**values)

    return make


@pytest.fixture
def make_client(make_settings: Callable[..., ApiSettings]) -> Iterator[Callable[..., TestClient]]:
    """Return a factory of started TestClients (closed at teardown); keyword arguments override settings.

    The clients send each session's token, as the chat page does (``keep_session_tokens``; one test's clients share them)."""
    clients: list[TestClient] = []
    tokens: dict[str, str] = {}

    def make(**overrides: Any) -> TestClient:
        app: FastAPI = create_app(make_settings(**overrides))
        # The server answers only its own Host names (DNS-rebinding guard); TestClient's default is "testserver".
        client = keep_session_tokens(TestClient(app, base_url=LOCAL_URL, raise_server_exceptions=False), tokens)
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for c in clients:
        c.__exit__(None, None, None)


@pytest.fixture
def client(make_client: Callable[..., TestClient]) -> TestClient:
    return make_client()


#: Debian's chromium, which the browser tests drive through Playwright (``DTDIALOG_CHROMIUM`` points elsewhere).
CHROMIUM = Path(os.environ.get("DTDIALOG_CHROMIUM", "/usr/bin/chromium"))
#: No background networking: this machine's closed network refuses it, many connections at a time.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium per test module; skips with the reason when chromium or playwright is missing."""
    if not CHROMIUM.exists():
        pytest.skip(f"Debian chromium not found at {CHROMIUM} (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()
