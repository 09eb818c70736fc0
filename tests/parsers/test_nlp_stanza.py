"""stanza backend: clear error without models, UD -> spaCy label conversion, real models when present."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import pytest

from parsers.errors import ModelNotAvailableError
from parsers.nlp_stanza import StanzaBackend, doc_to_analyzed, map_deprel, resources_dir
from parsers.segmenter import segment


def fake_doc(text: str, rows: list[tuple[str, str, str, int, str]]) -> SimpleNamespace:
    """Return a stanza-shaped one-sentence Document; rows are (word, lemma, upos, head, deprel)."""
    words, pos = [], 0
    for i, (w, lemma, upos, head, deprel) in enumerate(rows, start=1):
        start = text.index(w, pos)
        pos = start + len(w)
        tok = SimpleNamespace(start_char=start, end_char=pos)
        words.append(SimpleNamespace(id=i, text=w, lemma=lemma, upos=upos, xpos="", head=head, deprel=deprel,
                                     parent=tok, start_char=start, end_char=pos))
    return SimpleNamespace(sentences=[SimpleNamespace(words=words)], ents=[])


def test_missing_stanza_or_models_says_how_to_install(tmp_path):
    with pytest.raises(ModelNotAvailableError, match="stanza.download"):
        StanzaBackend(model_dir=tmp_path)


def test_map_deprel():
    assert map_deprel("acl:relcl") == "relcl"
    assert map_deprel("root") == "ROOT"
    assert map_deprel("nsubj:pass") == "nsubjpass"
    assert map_deprel("advcl") == "advcl"
    assert map_deprel("obl:agent") == "obl"


def test_resources_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("STANZA_RESOURCES_DIR", str(tmp_path))
    assert resources_dir() == tmp_path
    assert resources_dir("/x") == resources_dir("/x")


def test_conversion_feeds_the_segmenter():
    text = "The car stalls when it rains."
    doc = fake_doc(text, [
        ("The", "the", "DET", 2, "det"), ("car", "car", "NOUN", 3, "nsubj"), ("stalls", "stall", "VERB", 0, "root"),
        ("when", "when", "SCONJ", 6, "mark"), ("it", "it", "PRON", 6, "nsubj"), ("rains", "rain", "VERB", 3, "advcl"),
        (".", ".", "PUNCT", 3, "punct"),
    ])
    at = doc_to_analyzed(doc, text)
    assert [t.dep for t in at.tokens][:3] == ["det", "nsubj", "ROOT"]
    assert at.tokens[2].head == 2 and at.tokens[5].head == 2
    assert at.tokens[6].is_punct and at.tokens[0].is_stop
    assert [c.text for c in at.noun_chunks] == ["The car"]
    segs = segment(at)
    assert [text[at.tokens[s.start].idx: at.tokens[s.end - 1].end] for s in segs] == ["The car stalls",
                                                                                         "when it rains."]


@pytest.mark.stanza
def test_real_stanza_backend():
    if importlib.util.find_spec("stanza") is None:
        pytest.skip("stanza is not installed (pip install stanza)")
    if not (resources_dir() / "en").is_dir():
        pytest.skip(f"stanza English models not found in {resources_dir()}")
    at = StanzaBackend().analyze("The car stalls when it rains.")
    assert any(t.dep == "advcl" for t in at.tokens)
