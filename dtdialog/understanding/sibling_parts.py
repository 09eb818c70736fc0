"""Another part of the same kind: an answer logged for the "clutch pedal" is not for a customer with a "brake pedal".

An answer's logged opening question (``AnswerDocument.meta["question"]``) says which part the answer was written for.
When one of its noun compounds has the head of a compound the customer wrote ("clutch pedal" against "brake pedal",
"glow plug" against "spark plug", "water pump" against "fuel pump"), the customer never wrote its modifier, and the
logged question holds none of the customer's compounds of that head, the answer was written for a sibling part. The
compounds are runs of nouns in spaCy's tagging, as lemmas (the question's from the parse the RST parser made of it),
so no list of parts is needed and another domain's compounds work the same way ("gift card" against "credit card").
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable
from functools import lru_cache
from typing import Any

from index.vocabulary import SENTENCE_BREAK

NOUNS = frozenset({"NOUN", "PROPN"})
#: the compounds of this many texts parsed here (replies and the sentences of logged questions) are kept
_CACHE = 20_000


#: compounds of texts the engine's RST parser already analysed (``remember``): the question is not parsed twice
_REMEMBERED: OrderedDict[str, frozenset[tuple[str, str]]] = OrderedDict()
_REMEMBERED_SIZE = 1024
_LOCK = threading.Lock()


def remember(text: str, analyzed: Any, nlp: Any = None) -> None:
    """Keep the compounds of ``text`` from the parse the RST parser made of it (a ``question_analyzed`` hook of the
    selector): a long question costs spaCy ~30 ms, which every turn would otherwise pay again."""
    found = compounds_of_tokens(analyzed.tokens, text.lower())
    with _LOCK:  # the API's engine serves turns from several threads
        _REMEMBERED[text] = found
        _REMEMBERED.move_to_end(text)
        if len(_REMEMBERED) > _REMEMBERED_SIZE:
            _REMEMBERED.popitem(last=False)


def compounds(text: str) -> frozenset[tuple[str, str]]:
    """Return the (modifier, head) lemmas of ``text``'s noun compounds ("clutch", "pedal"), and of those inside a
    longer one ("brake", "fluid" of "brake fluid reservoir"); empty without spaCy's model."""
    with _LOCK:
        found = _REMEMBERED.get(text)
        if found is None:  # the engine plans a long question from its first EDUs: that is what its parser analysed
            found = next((c for t, c in reversed(_REMEMBERED.items()) if len(t) > 200 and text.startswith(t)), None)
    return found if found is not None else _parsed_compounds(text)


@lru_cache(maxsize=_CACHE)
def _parsed_compounds(text: str) -> frozenset[tuple[str, str]]:
    from parsers.errors import ModelNotAvailableError

    try:
        analyzed = _backend().analyze(text)
    except ModelNotAvailableError:
        return frozenset()
    return compounds_of_tokens(analyzed.tokens, text.lower())


@lru_cache(maxsize=1)
def _backend() -> Any:
    from parsers.nlp_spacy import SpacyBackend

    # compounds need tags and lemmas only: without the parser a text tags in ~60% of the time, with the same tags
    return SpacyBackend(disable=("ner", "parser"))


def compounds_of_tokens(tokens: Iterable[Any], lowered: str) -> frozenset[tuple[str, str]]:
    """Return the compounds of a run of nouns among ``tokens`` (``parsers.nlp_base.Token``: POS and lemma), each
    written together in ``lowered`` (the text, lower-cased)."""
    out: set[tuple[str, str]] = set()
    run: list[str] = []
    for token in [*tokens, None]:
        if token is not None and token.pos in NOUNS and not token.is_punct:
            run.append(token.lemma.lower())
            continue
        if len(run) > 1:
            out.add((" ".join(run[:-1]), run[-1]))
            # the compounds inside ("brake fluid" of "brake fluid reservoir"), but not the last pair of a longer one:
            # "pressure light" of "oil pressure light" is no part of its own; nor those of an indicator's name ("check
            # engine" of "check engine light" is no kind of engine)
            if run[-1] not in _evidence_words():
                out.update(zip(run[:-2], run[1:-1]))
        run = []
    # a run may join words across punctuation the tagger missed ("comments - wheel"): keep those written together
    return frozenset(c for c in out if _written_together([*c[0].split(), c[1]], lowered))


def _written_together(lemmas: list[str], lowered: str) -> bool:
    """Return True when the words of ``lemmas`` follow each other in ``lowered`` with only spaces or one hyphen."""
    stems = [re.escape(w[:-1] if len(w) > 3 else w) for w in lemmas]
    return re.search(r"\b" + r"\w*(?: +|-)".join(stems), lowered) is not None


@lru_cache(maxsize=1)
def _evidence_words() -> frozenset[str]:
    """Return the words that name a kind of evidence ("light", "noise", "code"): a compound they head is its name."""
    from dtdialog.understanding.opening_facts import trigger_words

    return frozenset(trigger_words().kinds)


@lru_cache(maxsize=1)
def _skipped_heads() -> frozenset[str]:
    """Return the heads never read as a part: ``non_part_heads`` ("highway speed") and the kinds of evidence ("warning
    light" names any light: the opening's named-kind check reads those)."""
    from dtdialog.understanding.opening_facts import trigger_words

    return trigger_words().non_part_heads | _evidence_words()


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
    # only the sentences that hold one of the customer's heads are tagged: a long logged question costs spaCy ~30 ms
    logged = compounds(" ".join(s for s in SENTENCE_BREAK.split(logged_question) if any(h in s.lower() for h in heads)))
    for modifier, head in sorted(logged):
        theirs = [m for m, h in mine if h == head] if head in heads else []
        if not theirs or modifier in theirs or any(w in said_words or f"{w}s" in said_words for w in modifier.split()):
            continue
        if any((m, head) in logged for m in theirs):
            continue  # the logged question names the customer's part too
        return f"{modifier} {head}", f"{theirs[0]} {head}"
    return None
