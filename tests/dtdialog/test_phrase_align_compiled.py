"""The compiled phrase alignment (``dtdialog/_phrase_align.pyx``) returns exactly what the Python one does.

Exactly: the same lemmas and POS, and a score equal to the last bit, on every same-type pair of real phrases that
share a content lemma (the pairs the SG feature aligns) and on generated pairs built to tie (a few lemmas, every
POS, wildcards, numbers, nouns meeting proper nouns, empty and 10-word phrases).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dtdialog.selection.syntactic_generalization as sg

pytestmark = pytest.mark.skipif(sg._compiled_path is None, reason="dtdialog._phrase_align is not built (no C "
                                "compiler at install, or run from a source tree): the Python alignment runs")


def _both(kind: str, first: tuple[tuple[str, ...], tuple[str, ...]], second: tuple[tuple[str, ...], tuple[str, ...]]):
    (l1, t1), (l2, t2) = first, second
    weights = sg._word_weights(l1, t1)
    return [None if g is None else (g.kind, g.lemmas, g.pos, g.score)
            for g in (sg._align_python(kind, l1, t1, weights, l2, t2), sg._align_compiled(kind, l1, t1, weights, l2, t2))]


def test_the_engine_aligns_with_the_compiled_module() -> None:
    assert sg.ALIGNMENT == "compiled" and sg._align is sg._align_compiled


def test_real_phrase_pairs_align_the_same() -> None:
    from data.builtin import load_builtin_corpus
    from parsers.errors import ModelNotAvailableError
    from parsers.phrase_chunks import phrases_of_texts

    corpus = load_builtin_corpus()[:40]
    texts = [d.question for d in corpus] + [t.text for d in corpus for _, t in d.answers()]
    try:
        phrases = [p for ps in phrases_of_texts(texts, nlp=sg.default_generalizer().nlp) for p in ps]
    except ModelNotAvailableError as exc:
        pytest.skip(str(exc))
    pairs = [(p, q) for i, p in enumerate(phrases[:400]) for q in phrases[i + 1:]
             if p.kind == q.kind and p.content & q.content][:6000]
    assert len(pairs) > 1000
    found = 0
    for p, q in pairs:
        python, compiled = _both(p.kind, (p.lemmas, p.pos), (q.lemmas, q.pos))
        assert python == compiled, (p, q)
        found += python is not None
    assert found > len(pairs) // 2  # most pairs that share a lemma have a common phrase: the paths were compared


_POS = ("NOUN", "PROPN", "VERB", "AUX", "ADJ", "ADV", "NUM", "DET", "ADP", "PRON")
_word = st.tuples(st.sampled_from(("engine", "start", "be", "the", "fuel", "2")), st.sampled_from(_POS))
_phrase = st.lists(_word, min_size=0, max_size=10).map(lambda ws: (tuple(w for w, _ in ws), tuple(t for _, t in ws)))


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(kind=st.sampled_from(("NP", "VP", "PP")), first=_phrase, second=_phrase)
def test_generated_pairs_align_the_same(kind: str, first, second) -> None:
    python, compiled = _both(kind, first, second)
    assert python == compiled
