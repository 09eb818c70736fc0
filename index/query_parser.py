"""Parse a user's search string into a ``SearchQuery``: ``Relation [words]`` parts become RR terms,
everything else becomes keywords.

``"car won't start Contrast [replaced battery] Cause [cold]"`` ->
keywords ``car start``, RR terms ``Contrast [replaced battery]`` and ``Cause [cold]``.
Only a known relation name directly before a closed ``[...]`` makes an RR term; any other
brackets, quotes or query-language characters (``" * : ( ) NEAR AND OR -``) are plain text.
"""

from __future__ import annotations

import re

from index.base import RRTerm, SearchQuery
from index.vocabulary import content_words, words_of
from parsers.errors import ConfigError, InputError
from parsers.relations import canonical

#: Longest query string accepted, in characters.
MAX_QUERY_CHARS = 10_000

_RR = re.compile(r"([A-Za-z][A-Za-z_-]*)\s*\[([^\[\]]*)\]")


def parse_query_string(text: str, *, size: int = 10, relations: tuple[str, ...] = (),
                       empty_ok: bool = False) -> SearchQuery:
    """Return the ``SearchQuery`` of ``text`` (``size`` hits, optional relation filter).

    Raises ``InputError`` for an empty or over-long string, or one with no searchable word (with ``empty_ok``, that
    one is an empty query instead: ``SearchQuery.is_empty``); ``ConfigError`` for an unknown relation in ``relations``.
    """
    if text is None or not text.strip():
        raise InputError("empty query: give keywords and/or RR terms such as 'Contrast [reset password]'")
    if len(text) > MAX_QUERY_CHARS:
        raise InputError(f"query too long ({len(text)} characters; at most {MAX_QUERY_CHARS})")
    rr_terms: list[RRTerm] = []
    rest: list[str] = []
    pos = 0
    for match in _RR.finditer(text):
        relation = _relation_or_none(match.group(1))
        if relation is None:
            continue
        rest.append(text[pos:match.start()])
        words = content_words(words_of(match.group(2)))
        if words:
            rr_terms.append(RRTerm(relation=relation, words=tuple(words)))
        pos = match.end()
    rest.append(text[pos:])
    keywords = content_words(words_of(" ".join(rest)))
    if not keywords and not rr_terms and not empty_ok:
        raise InputError(f"the query {text.strip()[:80]!r} has no searchable words (only stop words or punctuation)")
    return SearchQuery(keywords=tuple(keywords), rr_terms=tuple(rr_terms), size=size,
                       relations=tuple(canonical(r) for r in relations))


def _relation_or_none(name: str) -> str | None:
    try:
        return canonical(name)
    except ConfigError:
        return None
