"""Query strings: RR terms, keywords, query-language characters as text, and clear errors."""

from __future__ import annotations

import pytest

from index.base import RRTerm
from index.query_parser import MAX_QUERY_CHARS, parse_query_string
from parsers.errors import ConfigError, InputError


def test_rr_terms_and_keywords_mixed() -> None:
    q = parse_query_string("car won't start Contrast [replaced the battery] cause[cold morning]", size=3)
    assert q.keywords == ("car", "start")
    assert q.rr_terms == (RRTerm("Contrast", ("replaced", "battery")), RRTerm("Cause", ("cold", "morning")))
    assert q.size == 3


def test_unknown_relation_brackets_are_plain_words() -> None:
    q = parse_query_string("Foo [bar] (engine) * NEAR: \"OR\" AND -belt")
    assert q.rr_terms == ()
    assert q.keywords == ("foo", "bar", "engine", "belt")


def test_unclosed_bracket_is_text() -> None:
    q = parse_query_string("Contrast [start car")
    assert q.rr_terms == () and q.keywords == ("contrast", "start", "car")


def test_relation_filter_is_canonical() -> None:
    assert parse_query_string("belt", relations=("manner_means",)).relations == ("Manner-Means",)
    with pytest.raises(ConfigError, match="unknown relation"):
        parse_query_string("belt", relations=("Nope",))


@pytest.mark.parametrize("text", ["", "   ", "\n"])
def test_empty_query(text: str) -> None:
    with pytest.raises(InputError, match="empty query"):
        parse_query_string(text)


def test_only_syntax_or_stop_words() -> None:
    with pytest.raises(InputError, match="no searchable words"):
        parse_query_string('" * : ( ) NEAR AND OR -')


def test_too_long() -> None:
    with pytest.raises(InputError, match="too long"):
        parse_query_string("belt " * (MAX_QUERY_CHARS // 4))
