"""One suite for every backend: SQLite and the Elasticsearch fake always, a live Elasticsearch when ELASTICSEARCH_URL
points at a server."""

from __future__ import annotations

import pytest

from index.base import SearchQuery
from parsers.errors import ConfigError, InputError


def ids(hits) -> list[str]:
    return [h.document.id for h in hits]


def test_count_and_get_round_trip(index, documents) -> None:
    assert index.count() == len(documents)
    got = index.get("nostart#1")
    assert got == documents[0]
    assert got.tree == documents[0].tree and got.meta["question"].startswith("I replaced")
    assert index.get("missing#9") is None


def test_keywords_are_or_ed_and_ranked(index) -> None:
    hits = index.search(SearchQuery(keywords=("belt", "rotor")))
    assert set(ids(hits)) == {"alt#1", "brakes#1"}  # either word is enough: never AND-only
    assert all(h.score > 0 for h in hits)
    assert hits[0].matched["keywords"]


def test_rr_term_matches_inside_its_relation_only(index) -> None:
    hits = index.search(SearchQuery().with_rr("Contrast", ["battery", "fine"]))
    assert ids(hits)[0] == "nostart#1"
    top = hits[0]
    assert top.matched["rr_terms"] == ["Contrast [battery fine]"]
    assert top.matched["rr_edu"] == ["Contrast [The starter may be worn but the battery is fine.]"]
    # "battery" also occurs in a Cause-free answer, but a Cause term must not match Contrast words.
    assert "nostart#1" not in ids(index.search(SearchQuery().with_rr("Cause", ["battery", "fine"])))


def test_relation_filter_and_exclusion(index) -> None:
    query = SearchQuery(keywords=("battery", "starter", "fuse")).with_relation_filter("Contrast")
    assert set(ids(index.search(query))) == {"nostart#1", "alt#1"}
    assert ids(index.search(query.excluding("nostart#1"))) == ["alt#1"]
    assert ids(index.search(SearchQuery(keywords=("fuse",)).with_relation_filter("Cause"))) == ["overheat#1"]


@pytest.mark.parametrize("text", ['"belt', "belt*", "belt:", "(belt)", "belt NEAR rotor", "belt AND", "OR belt",
                                  "-belt", 'NEAR("belt" "rotor", 2)'])
def test_query_syntax_characters_are_plain_text(index, text) -> None:
    from index.query_parser import parse_query_string

    hits = index.search(parse_query_string(text))
    assert "alt#1" in ids(hits)


def test_empty_and_unsearchable_queries(index) -> None:
    with pytest.raises(InputError, match="empty query"):
        index.search(SearchQuery())
    with pytest.raises(InputError, match="no searchable words"):
        index.search(SearchQuery(keywords=("the", "*", "AND")))
    with pytest.raises(ConfigError, match="unknown relation"):
        index.search(SearchQuery(keywords=("belt",)).with_relation_filter("Nonsense"))


def test_size_limits_hits(index) -> None:
    assert len(index.search(SearchQuery(keywords=("battery", "starter", "belt", "fuse", "rotor"), size=2))) == 2
    assert index.search(SearchQuery(keywords=("zeppelin",))) == []


def test_ids_list_every_document_once(index, documents) -> None:
    listed = index.ids()
    assert sorted(listed) == sorted(d.id for d in documents) and len(listed) == len(set(listed))


def test_answer_texts_are_aligned_with_ids(index, documents) -> None:
    doc_ids, texts = index.answer_texts()
    assert sorted(doc_ids) == sorted(index.ids())
    assert texts == [index.get(i).text for i in doc_ids]


def test_build_information_and_dense_description_default_to_empty(index) -> None:
    # the fixture stores no build information and no vectors; a backend must say so, not guess
    assert index.info() == {}
    assert index.dense_info() is None


def test_generation_is_stable_between_writes(index) -> None:
    first = index.generation()
    assert isinstance(first, str) and index.generation() == first
    index.search(SearchQuery(keywords=("belt",)))
    assert index.generation() == first  # reads never move it
