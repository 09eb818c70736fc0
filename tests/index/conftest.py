"""Fixtures for the index tests: the stand-in parser, a small corpus, and every backend loaded with it."""

from __future__ import annotations

from pathlib import Path

import pytest
from index_helpers import BACKEND_PARAMS, StandInParser, loaded_index, small_corpus

from data.model import Dialogue
from index.base import AnswerDocument
from index.documents import build_document
from parsers.errors import ModelNotAvailableError


@pytest.fixture(scope="session")
def rules_parser():
    """Return the engine's rule parser (spaCy); skip without a spaCy model."""
    from parsers.nlp_spacy import load_spacy
    from parsers.rule_parser import RuleParser

    try:
        load_spacy()
    except ModelNotAvailableError as exc:
        pytest.skip(f"no spaCy model: {exc}")
    return RuleParser()


@pytest.fixture()
def standin_parser() -> StandInParser:
    return StandInParser()


@pytest.fixture()
def corpus() -> list[Dialogue]:
    return small_corpus()


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
