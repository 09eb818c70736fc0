"""Elasticsearch request bodies and response parsing for ``ElasticsearchIndex`` — pure functions, no client.

The mapping indexes ``keywords``, ``entities``, ``rr_edu`` and ``text`` with the ``english`` analyzer,
``relations`` and ``dialogue_id`` as keywords, and ``rr_tokens`` (relation-tagged words such as
``contrast_start``, see ``index.terms.rr_tokens``) with a whitespace + Porter analyzer, so an RR term
matches only words inside that relation. The DT and display data are stored but not indexed.
"""

from __future__ import annotations

import re
from typing import Any

from index.base import AnswerDocument, RRTerm, SearchHit, SearchQuery
from index.terms import relation_key, rr_tokens
from index.vocabulary import content_words, search_tokens
from parsers.errors import InputError
from parsers.relations import canonical

KEYWORDS_BOOST = 1.0
RR_BOOST = 2.0
#: Extra weight when an RR term's words occur close together inside one rr_edu entry.
RR_PHRASE_BOOST = 1.0
RR_PHRASE_SLOP = 3
HIGHLIGHT_PRE, HIGHLIGHT_POST = "<em>", "</em>"
RR_QUERY_PREFIX = "rr:"

INDEX_SETTINGS: dict[str, Any] = {
    "number_of_shards": 1,
    "number_of_replicas": 0,
    "analysis": {
        "analyzer": {
            "rr_tokens": {"type": "custom", "tokenizer": "whitespace", "filter": ["lowercase", "porter_stem"]},
        },
    },
}

INDEX_MAPPINGS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "id": {"type": "keyword"},
        "dialogue_id": {"type": "keyword"},
        "position": {"type": "integer"},
        "text": {"type": "text", "analyzer": "english"},
        "keywords": {"type": "text", "analyzer": "english"},
        "entities": {"type": "text", "analyzer": "english"},
        "relations": {"type": "keyword"},
        "rr_edu": {"type": "text", "analyzer": "english"},
        "rr_tokens": {"type": "text", "analyzer": "rr_tokens"},
        "tree": {"type": "object", "enabled": False},
        "meta": {"type": "object", "enabled": False},
    },
}


def keyword_text(query: SearchQuery) -> str:
    """Return the query keywords as one space-separated string of content tokens."""
    return " ".join(content_words(p for w in query.keywords for p in search_tokens(w)))


def build_search_body(query: SearchQuery) -> dict[str, Any]:
    """Return the ``_search`` body of ``query``: a ``bool`` of ``should`` clauses with ``minimum_should_match: 1``.

    Keywords become one ``multi_match`` over keywords and entities; each RR term a ``match`` on
    ``rr_tokens`` plus a ``match_phrase`` bonus on ``rr_edu``. Relations become a ``terms`` filter,
    excluded ids a ``must_not``. Raises ``InputError`` when nothing is searchable.
    """
    if query.is_empty():
        raise InputError("empty query: give at least one keyword or RR term")
    if query.size < 1:
        raise InputError(f"query size must be at least 1, got {query.size}")
    should: list[dict[str, Any]] = []
    keywords = keyword_text(query)
    if keywords:
        should.append({"multi_match": {
            "query": keywords, "fields": [f"keywords^{KEYWORDS_BOOST}", f"entities^{KEYWORDS_BOOST}"],
            "type": "most_fields", "operator": "or", "_name": "keywords",
        }})
    rr_words: list[str] = []
    for term in query.rr_terms:
        tokens = rr_tokens(term.relation, term.words)
        if not tokens:
            continue
        words = [t.split("_", 1)[1] for t in tokens]
        rr_words.extend(words)
        should.append({"match": {"rr_tokens": {
            "query": " ".join(tokens), "operator": "or", "boost": RR_BOOST * query.rr_weight,
            "_name": f"{RR_QUERY_PREFIX}{term}",
        }}})
        should.append({"match_phrase": {"rr_edu": {
            "query": f"{term.relation} {' '.join(words)}", "slop": RR_PHRASE_SLOP,
            "boost": RR_PHRASE_BOOST * query.rr_weight,
        }}})
    if not should:
        raise InputError("the query has no searchable words (only stop words, punctuation or query syntax)")
    boolean: dict[str, Any] = {"should": should, "minimum_should_match": 1}
    if query.relations:
        boolean["filter"] = [{"terms": {"relations": [canonical(r) for r in query.relations]}}]
    if query.exclude_ids:
        boolean["must_not"] = [{"ids": {"values": list(query.exclude_ids)}}]
    highlight_words = " ".join(dict.fromkeys(keywords.split() + rr_words))
    highlight: dict[str, Any] = {
        "pre_tags": [HIGHLIGHT_PRE], "post_tags": [HIGHLIGHT_POST],
        "fields": {
            "keywords": {"number_of_fragments": 0, "highlight_query": {"match": {"keywords": keywords}}},
            "rr_edu": {"number_of_fragments": 0, "highlight_query": {"match": {"rr_edu": " ".join(rr_words)}}},
            "text": {"fragment_size": 160, "number_of_fragments": 1,
                     "highlight_query": {"match": {"text": highlight_words}}},
        },
    }
    if not keywords:
        del highlight["fields"]["keywords"]
    if not rr_words:
        del highlight["fields"]["rr_edu"]
    return {"size": query.size, "query": {"bool": boolean}, "highlight": highlight}


def document_source(doc: AnswerDocument) -> dict[str, Any]:
    """Return the ``_source`` indexed for ``doc`` (its ``to_dict()`` plus the ``rr_tokens`` field)."""
    source = doc.to_dict()
    source["rr_tokens"] = " ".join(tok for term in doc.rr_edu for tok in rr_tokens(term.relation, term.words))
    return source


def hits_from_response(response: dict[str, Any]) -> list[SearchHit]:
    """Return the ``SearchHit`` list of an ``_search`` response, with ``matched`` from highlights and named queries."""
    hits: list[SearchHit] = []
    for raw in response.get("hits", {}).get("hits", []):
        source = dict(raw.get("_source") or {})
        source.pop("rr_tokens", None)
        doc = AnswerDocument.from_dict(source)
        highlight = raw.get("highlight") or {}
        matched: dict[str, list[str]] = {}
        keywords = list(dict.fromkeys(w for frag in highlight.get("keywords", []) for w in _emphasised(frag)))
        if keywords:
            matched["keywords"] = keywords
        named = [n[len(RR_QUERY_PREFIX):] for n in (raw.get("matched_queries") or []) if n.startswith(RR_QUERY_PREFIX)]
        relations = {relation_key(RRTerm.parse(t).relation) for t in named}
        stored = [str(t) for t in doc.rr_edu]  # highlights come back in the stored text form
        phrases = doc.meta.get("rr_phrases") or stored
        rr_hits: list[str] = []
        for fragment in highlight.get("rr_edu", []):
            plain = fragment.replace(HIGHLIGHT_PRE, "").replace(HIGHLIGHT_POST, "")
            i = stored.index(plain) if plain in stored else -1
            if i >= 0 and relation_key(doc.rr_edu[i].relation) in relations:
                rr_hits.append(phrases[i] if i < len(phrases) else plain)
        if rr_hits:
            matched["rr_edu"] = rr_hits
        if named:
            matched["rr_terms"] = named
        if highlight.get("text"):
            matched["text"] = list(highlight["text"])
        hits.append(SearchHit(document=doc, score=float(raw.get("_score") or 0.0), matched=matched))
    return hits


def _emphasised(fragment: str) -> list[str]:
    return re.findall(re.escape(HIGHLIGHT_PRE) + r"(.*?)" + re.escape(HIGHLIGHT_POST), fragment)

