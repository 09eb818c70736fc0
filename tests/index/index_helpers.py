"""Test helpers for the index tests: a stand-in RST parser built only from ``parsers.tree``, a small corpus, and a
stand-in encoder.

The stand-in keeps these tests independent of the rule parser's exact segmentation: it splits
sentences, then ``X but Y`` into Contrast, ``X because Y`` into Cause and ``X after Y`` into
Temporal, and joins sentences by Elaboration.
"""

from __future__ import annotations

import importlib.util
import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from data.model import ANSWER, CUSTOMER, QUESTION, Dialogue, Turn
from index.base import AnswerDocument, AnswerIndex
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


class CountingEncoder:
    """A deterministic stand-in encoder (hashing vectors) that records which texts it encoded."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts, *, progress: bool = False):
        import numpy

        self.seen.extend(texts)
        rows = [numpy.random.RandomState(abs(hash(t)) % (2**32)).randn(8) for t in texts]
        v = numpy.asarray(rows, dtype=numpy.float32).reshape(len(texts), 8)
        return v / numpy.linalg.norm(v, axis=1, keepdims=True)


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


# Shared by the contract fixtures (conftest.py) and tests that load their own documents: a module of its own,
# because ``from conftest import ...`` resolves to whichever test folder's conftest was imported first.
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
