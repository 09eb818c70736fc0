"""Word-level helpers shared by documents, queries and backends: stop words, content words, RR tokens."""

from __future__ import annotations

import re
from collections.abc import Iterable

#: English function words never used as keywords (query or document side).
STOP_WORDS: frozenset[str] = frozenset("""
a about above after again against all am an and any are aren't as at be because been before being below
between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
few for from further get got had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers
herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself just let's me more
most mustn't my myself near no nor not now of off on once only or other ought our ours ourselves out over own
same shan't she she'd she'll she's should shouldn't so some such than that that's the their theirs them
themselves then there there's these they they'd they'll they're they've this those through to too under until
up very was wasn't we we'd we'll we're we've were weren't what what's when when's where where's which while who
who's whom why why's will with won't would wouldn't you you'd you'll you're you've your yours yourself
yourselves also still even yet however though although thus hence etc like just really quite maybe may might
must shall one ones also anyway s t d ll m re ve n't 's 'm 're 've 'd 'll
""".split())

_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")
_ALNUM = re.compile(r"[^\W_]+")


def words_of(text: str) -> list[str]:
    """Return the lower-cased words of ``text`` (letters/digits, inner hyphens and apostrophes kept)."""
    return _WORD.findall(text.lower())


def is_content_word(word: str) -> bool:
    """Return True for a word worth indexing: not a stop word, not punctuation, at least two characters."""
    w = word.lower()
    if w.isdigit():
        return len(w) >= 3  # years and part numbers are worth keeping, "2" and "12" are not
    return len(w) >= 2 and w not in STOP_WORDS and any(ch.isalpha() for ch in w)


def content_words(words: Iterable[str]) -> list[str]:
    """Return the content words of ``words``, lower-cased, first occurrence order, without repeats."""
    seen: dict[str, None] = {}
    for word in words:
        w = word.lower().strip()
        if w and is_content_word(w):
            seen.setdefault(w, None)
    return list(seen)


def search_tokens(word: str) -> list[str]:
    """Return the alphanumeric pieces of ``word`` that a full-text index tokenizes it into."""
    return _ALNUM.findall(word.lower())


def relation_key(relation: str) -> str:
    """Return the relation as one lower-case alphanumeric token, e.g. ``Manner-Means`` -> ``mannermeans``."""
    return "".join(_ALNUM.findall(relation.lower()))


def rr_tokens(relation: str, words: Iterable[str]) -> list[str]:
    """Return the relation-tagged tokens of an RR term: ``Contrast [start car]`` -> ``contrast_start contrast_car``.

    Tagging every word with its relation lets a plain full-text index match a word *inside a given
    relation* without an RR term's words bleeding into the neighbouring term.
    """
    key = relation_key(relation)
    out: dict[str, None] = {}
    for word in words:
        for piece in search_tokens(word):
            if is_content_word(piece):
                out.setdefault(f"{key}_{piece}", None)
    return list(out)
