"""Elasticsearch request bodies as exact dicts, response parsing, mapping, and the unreachable-server error."""

from __future__ import annotations

import socket

import pytest

from index.base import AnswerDocument, RRTerm, SearchQuery
from index.es_query import INDEX_MAPPINGS, build_search_body, document_source, hits_from_response
from parsers.errors import DTDialogError, InputError


def test_keywords_only_body() -> None:
    body = build_search_body(SearchQuery(keywords=("Starter", "the", "relay*"), size=3))
    assert body == {
        "size": 3,
        "query": {"bool": {
            "should": [{"multi_match": {
                "query": "starter relay", "fields": ["keywords^1.0", "entities^1.0"],
                "type": "most_fields", "operator": "or", "_name": "keywords",
            }}],
            "minimum_should_match": 1,
        }},
        "highlight": {
            "pre_tags": ["<em>"], "post_tags": ["</em>"],
            "fields": {
                "keywords": {"number_of_fragments": 0, "highlight_query": {"match": {"keywords": "starter relay"}}},
                "text": {"fragment_size": 160, "number_of_fragments": 1,
                         "highlight_query": {"match": {"text": "starter relay"}}},
            },
        },
    }


def test_rr_terms_filters_and_exclusions_body() -> None:
    query = (SearchQuery(keywords=("battery",), size=5, rr_weight=1.5)
             .with_rr("Contrast", ["start", "car"])
             .with_relation_filter("contrast", "Cause")
             .excluding("d1#1"))
    body = build_search_body(query)
    assert body["query"] == {"bool": {
        "should": [
            {"multi_match": {"query": "battery", "fields": ["keywords^1.0", "entities^1.0"],
                             "type": "most_fields", "operator": "or", "_name": "keywords"}},
            {"match": {"rr_tokens": {"query": "contrast_start contrast_car", "operator": "or", "boost": 3.0,
                                     "_name": "rr:Contrast [start car]"}}},
            {"match_phrase": {"rr_edu": {"query": "Contrast start car", "slop": 3, "boost": 1.5}}},
        ],
        "minimum_should_match": 1,
        "filter": [{"terms": {"relations": ["Contrast", "Cause"]}}],
        "must_not": [{"ids": {"values": ["d1#1"]}}],
    }}
    assert body["highlight"]["fields"]["rr_edu"] == {
        "number_of_fragments": 0, "highlight_query": {"match": {"rr_edu": "start car"}}}
    assert body["highlight"]["fields"]["text"]["highlight_query"] == {"match": {"text": "battery start car"}}


def test_never_and_only() -> None:
    body = build_search_body(SearchQuery(keywords=("a1", "b2")).with_rr("Cause", ["cold"]))
    boolean = body["query"]["bool"]
    assert "must" not in boolean and boolean["minimum_should_match"] == 1
    assert all(c.get("multi_match", {}).get("operator", "or") == "or" for c in boolean["should"])


def test_unsearchable_queries_raise() -> None:
    with pytest.raises(InputError, match="empty query"):
        build_search_body(SearchQuery())
    with pytest.raises(InputError, match="no searchable words"):
        build_search_body(SearchQuery(keywords=("*", "AND", ":")))
    with pytest.raises(InputError, match="size"):
        build_search_body(SearchQuery(keywords=("belt",), size=0))


def test_mapping_types() -> None:
    props = INDEX_MAPPINGS["properties"]
    assert all(props[f] == {"type": "text", "analyzer": "english"} for f in ("keywords", "rr_edu", "text"))
    assert props["relations"] == {"type": "keyword"} and props["dialogue_id"] == {"type": "keyword"}
    assert props["tree"] == {"type": "object", "enabled": False}
    assert INDEX_MAPPINGS["dynamic"] == "strict"


def test_document_source_and_hit_parsing() -> None:
    doc = AnswerDocument(id="d#1", dialogue_id="d", position=1, text="The starter is worn but the battery is fine.",
                         keywords=("starter", "worn", "battery", "fine"), relations=("Contrast",),
                         rr_edu=(RRTerm("Contrast", ("starter", "worn", "battery", "fine")),), tree={"edus": []},
                         meta={"rr_phrases": ["Contrast [The starter is worn but the battery is fine.]"]})
    source = document_source(doc)
    assert source["rr_tokens"] == "contrast_starter contrast_worn contrast_battery contrast_fine"
    assert source["rr_edu"] == ["Contrast [starter worn battery fine]"]
    response = {"hits": {"hits": [{
        "_id": "d#1", "_score": 4.2, "_source": source,
        "matched_queries": ["keywords", "rr:Contrast [battery fine]"],
        "highlight": {"keywords": ["<em>battery</em>"],
                      "rr_edu": ["Contrast [starter worn <em>battery</em> <em>fine</em>]"],
                      "text": ["The starter is worn but the <em>battery</em> is fine."]},
    }]}}
    (hit,) = hits_from_response(response)
    assert hit.document == doc and hit.score == 4.2
    assert hit.matched == {
        "keywords": ["battery"],
        "rr_edu": ["Contrast [The starter is worn but the battery is fine.]"],
        "rr_terms": ["Contrast [battery fine]"],
        "text": ["The starter is worn but the <em>battery</em> is fine."],
    }


def test_unreachable_server_is_one_clear_error() -> None:
    pytest.importorskip("elasticsearch", reason="the elasticsearch client is not installed")
    from index.es_index import ElasticsearchIndex

    with socket.socket() as sock:  # a port nobody listens on: bind, read the number, close
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(DTDialogError, match=rf"cannot reach Elasticsearch at {url}"):
        ElasticsearchIndex(url)


def test_bad_index_name() -> None:
    pytest.importorskip("elasticsearch", reason="the elasticsearch client is not installed")
    from index.es_index import ElasticsearchIndex

    with pytest.raises(InputError, match="invalid Elasticsearch index name"):
        ElasticsearchIndex("http://127.0.0.1:1", index_name="Bad Name")
