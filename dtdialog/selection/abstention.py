"""Which detail to ask for when the engine is not confident enough to answer.

An abstention asks for the one missing detail that would most help the next search, derived from the
question itself (its EDUs' noun phrases and content lemmas, as the RST parser found them) and from the
vocabulary of the answers the index offered for it - never from a hand-written list of car parts, so an
index of another domain gets the same behaviour:

* ``part``: the question names no thing at all (no noun phrase with a term) - ask which part or system it is about;
* ``named``: it names a thing, but none the offered answers talk about ("my wipers don't work" to an index without
  wipers) - ask to describe it in other words, never "which part?" of a customer who just named it;
* ``symptom``: it names a part but says nothing about what happens (no content word outside its noun
  phrases) - ask what happens;
* ``context``: both are there - ask when it happens and what was already tried.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from parsers.tree import EDU

PART = "part"
NAMED = "named"
SYMPTOM = "symptom"
CONTEXT = "context"
DETAILS = (PART, NAMED, SYMPTOM, CONTEXT)


def missing_detail(edus: Sequence[EDU], *, answer_terms: Iterable[str], normalizer) -> str:
    """Return ``part``, ``named``, ``symptom`` or ``context``: what the question lacks (see the module docstring).

    ``normalizer`` turns text into index terms (``terms_of_text``); ``answer_terms`` are the terms of the
    answers the engine ranked for it. A parser that records no noun phrases makes every content word count
    as a possible part name.
    """
    known = frozenset(answer_terms)
    phrases = [p for e in edus for p in e.entities]
    text = " ".join(e.text for e in edus)
    nouns = normalizer.terms_of_text(" ".join(phrases) if phrases else text)
    if not nouns & known:
        return NAMED if nouns else PART
    phrase_words = {w for p in phrases for w in p.lower().split()}
    others = [lemma for e in edus for lemma in e.lemmas if lemma.lower() not in phrase_words]
    if phrases and not normalizer.terms_of_text(" ".join(others)):
        return SYMPTOM
    return CONTEXT
