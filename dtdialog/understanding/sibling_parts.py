"""Another part of the same kind: an answer logged for the "clutch pedal" is not for a customer with a "brake pedal".

An answer's logged opening question (``AnswerDocument.meta["question"]``) says which part the answer was written for.
When one of its noun compounds has the head of a compound the customer wrote ("clutch pedal" against "brake pedal",
"glow plug" against "spark plug", "water pump" against "fuel pump"), the customer never wrote its modifier, and the
logged question holds none of the customer's compounds of that head, the answer was written for a sibling part. The
compounds are the noun runs at the end of spaCy's noun chunks (``parsers.phrase_chunks``), as lemmas, so no list of
parts is needed and another domain's compounds work the same way ("gift card" against "credit card").
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from functools import lru_cache

NOUNS = frozenset({"NOUN", "PROPN"})
#: Compounds are read from the logged question only when it holds a head the customer used: most never do.
_CACHE = 20_000


@lru_cache(maxsize=_CACHE)
def compounds(text: str) -> frozenset[tuple[str, str]]:
    """Return the (modifier, head) lemmas of the noun compounds ending ``text``'s noun phrases ("clutch", "pedal"), and
    of those inside them ("brake", "fluid" of "brake fluid reservoir"); empty without spaCy's model."""
    from parsers.errors import ModelNotAvailableError
    from parsers.phrase_chunks import phrases_of_text

    try:
        chunks = phrases_of_text(text)
    except ModelNotAvailableError:
        return frozenset()
    out: set[tuple[str, str]] = set()
    for chunk in chunks:
        if chunk.kind != "NP" or len(chunk.lemmas) < 2 or chunk.pos[-1] not in NOUNS:
            continue
        start = len(chunk.lemmas) - 1
        while start > 0 and chunk.pos[start - 1] in NOUNS:
            start -= 1
        run = [lemma.lower() for lemma in chunk.lemmas[start:]]
        if len(run) > 1:
            out.add((" ".join(run[:-1]), run[-1]))
            # the compounds inside ("brake fluid" of "brake fluid reservoir"), but not the last pair of a longer one:
            # "pressure light" of "oil pressure light" is no part of its own
            out.update(zip(run[:-2], run[1:-1]))
    lowered = text.lower()
    # a chunk may run across punctuation ("video in comments - wheel turned"): keep the compounds written as one
    return frozenset(c for c in out if _written_together([*c[0].split(), c[1]], lowered))


def _written_together(lemmas: list[str], lowered: str) -> bool:
    """Return True when the words of ``lemmas`` follow each other in ``lowered`` with only spaces or one hyphen."""
    stems = [re.escape(w[:-1] if len(w) > 3 else w) for w in lemmas]
    return re.search(r"\b" + r"\w*(?: +|-)".join(stems), lowered) is not None


@lru_cache(maxsize=1)
def _skipped_heads() -> frozenset[str]:
    """Return the heads never read as a part: ``non_part_heads`` ("highway speed") and the kinds of evidence ("warning
    light" names any light: the opening's named-kind check reads those)."""
    from dtdialog.understanding.opening_facts import trigger_words

    triggers = trigger_words()
    return triggers.non_part_heads | frozenset(triggers.kinds)


def customer_compounds(texts: Iterable[str]) -> frozenset[tuple[str, str]]:
    """Return the noun compounds of the customer's messages."""
    return frozenset().union(*(compounds(t) for t in texts if t))


def other_part(mine: Collection[tuple[str, str]], said_words: Collection[str],
               logged_question: str) -> tuple[str, str] | None:
    """Return (the logged question's part, the customer's part of the same head) when the answer was logged for a
    sibling of a part the customer named, else None.

    ``mine``: the customer's compounds (``customer_compounds``); ``said_words``: the words the customer wrote outside a
    negation, lower-cased (a modifier they said, "the clutch or the brake pedal", is theirs too)."""
    skip = _skipped_heads()
    heads = {head for _, head in mine if head not in skip}
    lowered = logged_question.lower()
    if not heads or not any(head in lowered for head in heads):
        return None
    logged = compounds(logged_question)
    for modifier, head in sorted(logged):
        theirs = [m for m, h in mine if h == head] if head in heads else []
        if not theirs or modifier in theirs or any(w in said_words or f"{w}s" in said_words for w in modifier.split()):
            continue
        if any((m, head) in logged for m in theirs):
            continue  # the logged question names the customer's part too
        return f"{modifier} {head}", f"{theirs[0]} {head}"
    return None
