"""EDU segmentation from the dependency parse."""

from __future__ import annotations

import pytest

from parsers.nlp_spacy import SpacyBackend
from parsers.segmenter import segment


@pytest.fixture(scope="module")
def nlp() -> SpacyBackend:
    return SpacyBackend(disable=("ner",))


def edus(nlp, text: str) -> list[str]:
    doc = nlp.analyze(text)
    return [doc.text[doc.tokens[s.start].idx: doc.tokens[s.end - 1].end] for s in segment(doc)]


def test_segments_cover_all_tokens_in_order(nlp):
    doc = nlp.analyze("The car, which I bought last year, stalls when it is cold. I said that it was fine.")
    segs = segment(doc)
    assert segs[0].start == 0 and segs[-1].end == len(doc.tokens)
    for a, b in zip(segs, segs[1:]):
        assert a.end == b.start
        assert a.sent <= b.sent


@pytest.mark.parametrize("text,expected", [
    ("The car stalls when it is cold.", ["The car stalls", "when it is cold."]),
    ("If the battery is weak, replace it.", ["If the battery is weak,", "replace it."]),
    ("I checked the fuse, but it was fine.", ["I checked the fuse,", "but it was fine."]),
    ("The mechanic said that the pump failed.", ["The mechanic said", "that the pump failed."]),
    ("I bought a charger to test the battery.", ["I bought a charger", "to test the battery."]),
])
def test_clause_cuts(nlp, text, expected):
    assert edus(nlp, text) == expected


def test_relative_clause_leaves_a_fragment(nlp):
    doc = nlp.analyze("The old car, which I bought last year, broke down yesterday.")
    assert [s.head_dep for s in segment(doc)] == ["frag", "relcl", "ROOT"]


def test_single_word_is_one_segment(nlp):
    assert edus(nlp, "Hello") == ["Hello"]


def test_quoted_speech_is_apart_from_its_speech_verb(nlp):
    # Speech introduced by "said ," starts at its opening quote ...
    parts = edus(nlp, 'The mechanic said , " This pump is worn out and it leaks . "')
    assert any(p.startswith('" This pump') for p in parts), parts
    # ... and a quoted sentence followed by its speech verb leaves that verb a unit of its own.
    parts = edus(nlp, '" Not yet , " I say .')
    assert parts[-1] == "I say ." and parts[0].startswith('" Not yet'), parts


def test_citation_opening_a_sentence_is_its_own_unit(nlp):
    doc = nlp.analyze("He won the award in 2010 . [ 8 ] In 2004 , he appeared in a film .")
    texts = [doc.text[doc.tokens[s.start].idx: doc.tokens[s.end - 1].end] for s in segment(doc)]
    assert any(t.startswith("In 2004") for t in texts), texts


def test_noun_chunks_are_found_per_sentence_as_spacy_finds_them(nlp):
    # The chunks are read with spaCy's iterator on each sentence (not ``Span.noun_chunks``, which walks the whole
    # document for every sentence and made long texts cost seconds): the same chunks must come out.
    text = ("The old red car and the new blue truck were parked near the big house. Mary's brother, a mechanic, "
            "fixed the brakes and the rusty exhaust pipe! I replaced the battery, but the car still does not start.")
    doc = nlp.nlp(text)
    expected = [(c.start, c.end, c.text) for sent in doc.sents for c in sent.noun_chunks]
    assert [(p.start, p.end, p.text) for p in nlp.analyze(text).noun_chunks] == expected and len(expected) > 8
