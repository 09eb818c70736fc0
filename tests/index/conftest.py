"""Fixtures for the index tests: a stand-in RST parser, a small corpus, and every backend loaded with it.

The stand-in parser is built only from ``parsers.tree`` so these tests do not depend on the
rule parser's exact segmentation: it splits sentences, then ``X but Y`` into Contrast,
``X because Y`` into Cause and ``if X, Y`` into Condition, and joins sentences by Elaboration.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from data.model import ANSWER, CUSTOMER, QUESTION, Dialogue, Turn
from index.base import AnswerDocument, AnswerIndex
from index.documents import build_document
from parsers.base import RSTParser
from parsers.tree import EDU, DiscourseTree, Node

_MARKERS = ((" but ", "Contrast", "NN"), (" because ", "Cause", "NS"), (" after ", "Temporal", "NS"))


class StandInParser(RSTParser):
    """Sentence + discourse-marker splitter producing real ``DiscourseTree`` objects."""

    name = "standin"

    def parse(self, text: str) -> DiscourseTree:
        edus: list[EDU] = []
        sentence_nodes: list[Node] = []
        for match in re.finditer(r"[^.!?]+[.!?]*", text):
            sentence = match.group(0)
            if not sentence.strip():
                continue
            sentence_nodes.append(self._sentence(sentence, match.start(), len(sentence_nodes), edus))
        root = sentence_nodes[0] if len(sentence_nodes) == 1 else Node.relate(
            "Elaboration", sentence_nodes, "N" + "S" * (len(sentence_nodes) - 1))
        return DiscourseTree(text=text, edus=tuple(edus), root=root, parser=self.name)

    def _sentence(self, sentence: str, offset: int, s_i: int, edus: list[EDU]) -> Node:
        for marker, relation, nuclearity in _MARKERS:
            at = sentence.find(marker)
            if at > 0:
                left = self._edu(sentence[:at], offset, s_i, edus)
                right = self._edu(sentence[at:], offset + at, s_i, edus)
                return Node.relate(relation, [left, right], nuclearity)
        return self._edu(sentence, offset, s_i, edus)

    @staticmethod
    def _edu(span: str, offset: int, s_i: int, edus: list[EDU]) -> Node:
        words = re.findall(r"[A-Za-z0-9']+", span)
        lemmas = tuple(w.lower().rstrip("s") if len(w) > 4 else w.lower() for w in words)
        entities = tuple(w for w in ("battery", "starter", "alternator") if w in span.lower())
        edus.append(EDU(index=len(edus), text=span.strip(), start=offset, end=offset + len(span), sentence=s_i,
                        lemmas=lemmas, entities=entities))
        return Node.leaf(len(edus) - 1)


@pytest.fixture()
def standin_parser() -> StandInParser:
    return StandInParser()


def small_corpus() -> list[Dialogue]:
    """Return four short car-repair dialogues with Contrast, Cause and Temporal answers."""
    return [
        Dialogue("nostart", (
            Turn(QUESTION, "I replaced the battery but the car still does not start."),
            Turn(ANSWER, "Check the starter relay. The starter may be worn but the battery is fine."),
            Turn(CUSTOMER, "The relay clicks."),
            Turn(ANSWER, "The engine cranks slowly because the starter motor draws too much current."),
        )),
        Dialogue("overheat", (
            Turn(QUESTION, "My engine overheats in traffic."),
            Turn(ANSWER, "The radiator fan may have failed because its fuse blew. Replace the fuse."),
        )),
        Dialogue("brakes", (
            Turn(QUESTION, "Brakes squeal when I stop."),
            Turn(ANSWER, "Replace the brake pads after you measure the rotor thickness."),
        )),
        Dialogue("alt", (
            Turn(QUESTION, "The battery light is on while driving."),
            Turn(ANSWER, "The alternator charges the battery but the belt may slip. Inspect the belt tension."),
        )),
    ]


@pytest.fixture()
def corpus() -> list[Dialogue]:
    return small_corpus()

ES_URL = os.environ.get("ELASTICSEARCH_URL")

BACKEND_PARAMS = [
    pytest.param("sqlite", id="sqlite"),
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
    """Yield each backend (SQLite; Elasticsearch when ELASTICSEARCH_URL is set) loaded with ``documents``."""
    with loaded_index(request.param, documents, tmp_path) as ix:
        yield ix
