"""Fixtures for the index tests: the stand-in parser, a small corpus, and every backend loaded with it."""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from index_helpers import StandInParser, small_corpus

from data.model import Dialogue
from index.base import AnswerDocument, AnswerIndex
from index.documents import build_document


@pytest.fixture()
def standin_parser() -> StandInParser:
    return StandInParser()


@pytest.fixture()
def corpus() -> list[Dialogue]:
    return small_corpus()


ES_URL = os.environ.get("ELASTICSEARCH_URL")

BACKEND_PARAMS = [
    pytest.param("sqlite", id="sqlite"),
    # the real client against the in-process fake server (``es_fake``): the Elasticsearch code path, always run
    pytest.param("elasticsearch-fake", id="elasticsearch-fake", marks=pytest.mark.skipif(
        importlib.util.find_spec("elasticsearch") is None, reason="the elasticsearch client is not installed")),
    pytest.param("elasticsearch", id="elasticsearch", marks=[
        pytest.mark.elasticsearch,
        pytest.mark.skipif(not ES_URL, reason="ELASTICSEARCH_URL is not set: no live Elasticsearch server"),
    ]),
]


@contextmanager
def loaded_index(backend: str, documents: list[AnswerDocument], tmp_path: Path) -> Iterator[AnswerIndex]:
    """Yield an index of ``backend`` holding ``documents``; the Elasticsearch index is deleted afterwards."""
    if backend == "sqlite":
        from index.sqlite_index import SqliteIndex

        path = tmp_path / "answers.sqlite"
        with SqliteIndex(path, readonly=False) as writer:
            writer.add(documents)
        with SqliteIndex(path) as reader:
            yield reader
        return
    from index.es_index import ElasticsearchIndex

    if backend == "elasticsearch-fake":
        from es_fake import FakeElasticsearch

        es = ElasticsearchIndex("http://fake-es:9200", index_name="answers", client=FakeElasticsearch().client())
    else:
        es = ElasticsearchIndex(ES_URL or "", index_name=f"dtdialog-test-{uuid.uuid4().hex[:10]}")
    try:
        es.rebuild(documents)
        yield es
    finally:
        es.delete_index()
        es.close()


@pytest.fixture()
def documents(standin_parser, corpus) -> list[AnswerDocument]:
    """Return the index documents of ``small_corpus`` parsed by the stand-in parser."""
    return [build_document(doc_id=d.answer_id(pos), dialogue_id=d.id, position=pos, text=t.text,
                           tree=standin_parser.parse(t.text), meta={"question": d.question})
            for d in corpus for pos, t in d.answers()]


@pytest.fixture(params=BACKEND_PARAMS)
def index(request, documents, tmp_path: Path):
    """Yield each backend (SQLite, the Elasticsearch fake, and a live Elasticsearch when ELASTICSEARCH_URL is set)
    loaded with ``documents``."""
    with loaded_index(request.param, documents, tmp_path) as ix:
        yield ix
