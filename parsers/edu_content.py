"""What every parser puts in an EDU besides its text: content lemmas and entity phrases.

One definition for every parser, so indexes built with any of them match queries the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from parsers.features import EduView
from parsers.nlp_base import AnalyzedText
from parsers.tree import EDU

_CONTENT_POS = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "ADV", "NUM"})
_DROP_LEADING = frozenset({"DET", "PRON"})


def content_lemmas(doc: AnalyzedText, lo: int, hi: int) -> tuple[str, ...]:
    """Return the distinct lower-cased lemmas of the content words in tokens ``lo:hi``, in text order."""
    out: list[str] = []
    for t in doc.tokens[lo:hi]:
        lemma = t.lemma.lower().strip()
        if t.is_punct or t.is_stop or t.pos not in _CONTENT_POS or not any(c.isalnum() for c in lemma):
            continue
        if lemma not in out:
            out.append(lemma)
    return tuple(out)


def entity_phrases(doc: AnalyzedText, lo: int, hi: int) -> tuple[str, ...]:
    """Return the distinct noun chunks and named entities inside tokens ``lo:hi``, lower-cased, without a
    leading determiner or pronoun."""
    out: list[str] = []
    for phrase in (*doc.noun_chunks, *doc.entities):
        if phrase.start < lo or phrase.end > hi:
            continue
        toks = list(doc.tokens[phrase.start: phrase.end])
        while toks and (toks[0].pos in _DROP_LEADING or toks[0].is_punct):
            toks = toks[1:]
        text = "".join(t.text + t.whitespace for t in toks).strip().lower()
        if text and any(c.isalnum() for c in text) and text not in out:
            out.append(text)
    return tuple(out)


def enrich_edus(analyzed: AnalyzedText, views: Sequence[EduView], edus: list[EDU]) -> list[EDU]:
    """Return ``edus`` with ``lemmas`` and ``entities`` filled from their token ranges ``views``."""
    return [replace(e, lemmas=content_lemmas(analyzed, v.start, v.end), entities=entity_phrases(analyzed, v.start, v.end))
            for e, v in zip(edus, views)]
