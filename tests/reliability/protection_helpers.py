"""Fixtures of the index-protection and quota tests: the API tests' small answer index and apps over it.

The hand-written dialogues and error assertions are the API tests' own (``tests/dtdialog/api/api_helpers.py``);
each test module imports the fixture functions (``*_fixture``; pytest knows them by their ``name``), so
the reliability folder needs no shared conftest.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dtdialog" / "api"))

from api_helpers import (  # noqa: E402
    API_KEY,
    LOCAL_URL,
    NO_QUOTAS,
    assert_error,
    keep_session_tokens,
    small_dialogues,
    write_corpus,
)

__all__ = ["API_KEY", "LOCAL_URL", "NO_QUOTAS", "assert_error", "keep_session_tokens", "write_corpus"]
#: An answer of the small index, and the scam text the probe served in its place.
ANSWER_ID = "t-brakes-1#1"
BRAKES_QUESTION = "My brakes squeal when I stop, even though the pads are new."
SCAM = "Call 555-0100 and pay the unlock fee by gift card, then the brakes will stop squealing."


@pytest.fixture(scope="session", name="protected_index")
def protected_index_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return a SQLite answer index over the API tests' hand-written dialogues (built once per run)."""
    from dtdialog.setup.assembly import engine_parser_name
    from index.builder import build_index
    from parsers.base import get_parser

    out = tmp_path_factory.mktemp("protected") / "answers.sqlite"
    build_index(dialogues=small_dialogues(), parser=get_parser(engine_parser_name()), backend="sqlite", out=out, progress=False)
    return out


@pytest.fixture(name="index_file")
def index_file_fixture(protected_index: Path, tmp_path: Path) -> Path:
    """Return this test's private copy of the small index (tests write to it)."""
    dst = tmp_path / "answers.sqlite"
    with sqlite3.connect(protected_index) as src, sqlite3.connect(dst) as out:
        src.backup(out)
    return dst


@pytest.fixture(name="app_client")
def app_client_fixture(index_file: Path, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """Return ``make(address="10.0.0.1", **settings)``: a started TestClient of a new app, or, with ``app=``, a
    second client of that app calling from ``address`` (a different customer). Each client sends the tokens of the
    sessions it started (``keep_session_tokens``)."""
    from fastapi.testclient import TestClient

    from dtdialog.api import ApiSettings, create_app

    started: list[Any] = []

    def make(address: str = "10.0.0.1", app: Any = None, **overrides: Any) -> Any:
        if app is not None:  # the same app, another remote address; the first client runs its lifespan
            return keep_session_tokens(TestClient(app, base_url=LOCAL_URL, raise_server_exceptions=False,
                                                  client=(address, 40000)))
        values: dict[str, Any] = {"index_path": index_file, "sessions_path": tmp_path / "sessions.sqlite",
                                  "api_key": None, "ranker": "rules"}
        values.update(overrides)
        client = keep_session_tokens(TestClient(create_app(ApiSettings(**values)), base_url=LOCAL_URL,
                                                raise_server_exceptions=False, client=(address, 40000)))
        client.__enter__()
        started.append(client)
        return client

    yield make
    for client in started:
        client.__exit__(None, None, None)


def served_text(client: Any, answer_id: str = ANSWER_ID, question: str = BRAKES_QUESTION) -> str | None:
    """Return the text a customer asking ``question`` is shown for ``answer_id`` (None when it is not among the hits)."""
    response = client.post("/search", json={"query": question, "size": 5})
    assert response.status_code == 200, response.text
    return next((h["text"] for h in response.json()["hits"] if h["id"] == answer_id), None)


def stored_text(index: Path, answer_id: str = ANSWER_ID) -> str | None:
    """Return the text stored under ``answer_id`` in the index file, read directly (not through the server)."""
    from index.sqlite_index import SqliteIndex

    with SqliteIndex(index) as ix:
        doc = ix.get(answer_id)
    return None if doc is None else doc.text




#: An answer a key holder adds through the API (what a rebuild must keep).
WIPERS = {"answers": [{"text": "If the wipers stop in the middle of the glass, replace the wiper motor park switch.",
                       "dialogue_id": "api-wipers", "position": 1}]}


def rebuild_client(app_client: Callable[..., Any], index_file: Path) -> Any:
    """Return a key-holding client of a server that may rebuild from ``small.jsonl`` and has the ``WIPERS`` answer."""
    root = index_file.parent / "corpora"
    root.mkdir()
    write_corpus(root / "small.jsonl")
    client = app_client(api_key=API_KEY, rebuild_roots=(root,))
    client.headers.update({"X-API-Key": API_KEY})
    assert client.post("/index/documents", json=WIPERS).status_code == 200
    return client
