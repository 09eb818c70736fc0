"""RR tokens: how an ``RR [EDU]`` term becomes relation-tagged words a plain full-text index can match.

Words, stop words and stems come from ``index.vocabulary``.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from index.vocabulary import content_pieces, search_tokens

__all__ = ["relation_key", "rr_tokens"]


@lru_cache(maxsize=1024)  # a few dozen relation names, asked for every RR term of every search hit
def relation_key(relation: str) -> str:
    """Return the relation as one lower-case alphanumeric token, e.g. ``Manner-Means`` -> ``mannermeans``."""
    return "".join(search_tokens(relation))


def rr_tokens(relation: str, words: Iterable[str]) -> list[str]:
    """Return the relation-tagged tokens of an RR term: ``Contrast [start car]`` -> ``contrast_start contrast_car``.

    Tagging every word with its relation lets a plain full-text index match a word *inside a given
    relation* without an RR term's words bleeding into the neighbouring term.
    """
    key = relation_key(relation)
    return list(dict.fromkeys(f"{key}_{piece}" for word in words for piece in content_pieces(word)))
