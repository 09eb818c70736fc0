"""What the Elasticsearch backend adds to the index contract: listing every answer past one page, and its defaults."""

from __future__ import annotations

import pytest
from es_fake import FakeElasticsearch

pytest.importorskip("elasticsearch", reason="the elasticsearch client is not installed")

from index import es_index  # noqa: E402 - needs the client, checked just above
from index.es_index import ElasticsearchIndex  # noqa: E402


@pytest.fixture()
def loaded(documents):
    server = FakeElasticsearch()
    es = ElasticsearchIndex("http://fake-es:9200", index_name="answers", client=server.client())
    es.rebuild(documents)
    yield server, es
    es.close()


def test_ids_and_texts_page_with_search_after(loaded, documents, monkeypatch):
    server, es = loaded
    monkeypatch.setattr(es_index, "SCAN_PAGE", 2)
    expected = sorted(d.id for d in documents)
    before = len(server.requests_to("/_search"))
    assert es.ids() == expected
    pages = server.requests_to("/_search")[before:]
    assert len(pages) == len(documents) // 2 + 1  # the last, short page ends the listing
    assert "search_after" not in pages[0].body and pages[1].body["search_after"] == [expected[1]]
    assert pages[0].body["_source"] is False
    doc_ids, texts = es.answer_texts()
    assert texts == [next(d.text for d in documents if d.id == i) for i in doc_ids]


def test_generation_and_build_information_use_the_documented_defaults(loaded):
    _, es = loaded
    # Elasticsearch stamps no writes and stores no build information: derived stores compare ids and counts only
    assert es.generation() == "" and es.info() == {}
    assert es.dense_info() is None  # built without vectors
