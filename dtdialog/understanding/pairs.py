"""Two of a kind: an answer that opens on "Both fluids ..." refers back to two things the conversation named.

"Both fluids can be red, but their location helps" answers someone who asked whether a puddle is transmission or
power steering fluid; to "How do I check my transmission fluid?" it reads as an answer to another person. The
opening's "both N" or "neither N" (``pair_phrase``) is stated when the conversation named N twice, named two N
joined by "and" or "or" ("front and rear tires"), or counted them ("two tires", "both hoses"): ``paired_nouns``.
Nouns are compared by their Porter stem, so "fluid" and "fluids" are one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from index.vocabulary import is_entity_word, stem, words_of

#: the opening words that refer back to two things; "either" is left out ("Either the pump or the relay ...")
REFERRERS = frozenset({"both", "neither"})
#: words between the referrer and its noun ("both of the front hoses")
_SKIPPED = frozenset({"of", "the", "these", "those", "your", "my", "our", "their"})
#: heads that name sides of one thing or a turn of phrase, not two things the customer named
_NOT_REFERENTS = frozenset({"way", "ways", "side", "sides", "end", "ends", "hand", "hands", "case", "cases"})
#: how many entity words may make up the noun phrase ("both front brake hoses")
NOUN_WORDS = 3
_COUNTS = frozenset({"two", "both", "pair", "2"})
_JOINS = frozenset({"and", "or", "&", "/"})


def pair_phrase(opening: str) -> tuple[str, str] | None:
    """Return (the phrase, its head noun's stem) of an opening that starts "Both N" or "Neither N", else None.

    "Both" and "neither of" take a plural head, the first plural of the noun phrase ("both front brake hoses");
    "neither" a singular one, whose phrase ends before the verb ("neither tire needs ..."): no tagger is needed."""
    words = words_of(opening)
    if not words or words[0] not in REFERRERS:
        return None
    k = 1
    while k < len(words) and words[k] in _SKIPPED:
        k += 1
    plural = words[0] == "both" or "of" in words[1:k]
    head = None
    for j in range(k, min(k + NOUN_WORDS, len(words))):
        if not is_entity_word(words[j]):
            break
        head = j
        if (plural and _plural(words[j])) or (not plural and j + 1 < len(words) and _plural(words[j + 1])):
            break
    if head is None or words[head] in _NOT_REFERENTS or (plural and not _plural(words[head])):
        return None
    return " ".join(words[:head + 1]), stem(words[head])


def _plural(word: str) -> bool:
    return word.endswith("s") and not word.endswith("ss")


def paired_nouns(texts: Iterable[str]) -> frozenset[str]:
    """Return the stems of the nouns ``texts`` name two of: said twice, joined to another ("front and rear tires"),
    or counted ("two tires", "both hoses", "a pair of wipers")."""
    seen: Counter[str] = Counter()
    paired: set[str] = set()
    for text in texts:
        words = words_of(text or "")
        for i, word in enumerate(words):
            if not is_entity_word(word):
                continue
            key = stem(word)
            seen[key] += 1
            before = words[max(0, i - NOUN_WORDS):i]
            if _COUNTS & set(before) or (_plural(word) and _JOINS & set(before)):
                paired.add(key)
    return frozenset(paired | {key for key, n in seen.items() if n >= 2})
