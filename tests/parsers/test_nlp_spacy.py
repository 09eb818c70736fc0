"""The spaCy backend's view of a text."""

import pytest

from parsers.errors import ModelNotAvailableError


@pytest.fixture(scope="module")
def backends():
    from parsers.nlp_spacy import SpacyBackend

    try:
        return SpacyBackend(disable=("ner",)), SpacyBackend(disable=("ner", "parser"))
    except ModelNotAvailableError as exc:
        pytest.skip(f"spaCy model unavailable: {exc}")


def test_a_pipeline_run_without_its_parser_tags_the_text_as_one_sentence(backends):
    """Tagging alone (the sibling-part check's compounds need no parse) gives the full pipeline's tags and lemmas,
    one sentence and no noun chunks, instead of spaCy's "sentence boundaries unset" error."""
    full, tagging = backends
    text = "My clutch pedal stays on the floor. The brake fluid reservoir is full, and the pedal feels soft."
    whole, tagged = full.analyze(text), tagging.analyze(text)
    assert [(t.text, t.pos, t.lemma) for t in tagged.tokens] == [(t.text, t.pos, t.lemma) for t in whole.tokens]
    assert len(whole.sentences) == 2 and tagged.sentences == ((0, len(tagged.tokens)),)
    assert whole.noun_chunks and not tagged.noun_chunks
    assert {t.sent for t in tagged.tokens} == {0}
