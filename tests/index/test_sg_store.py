"""SG phrases stored beside an index: round trip, identical scores, out-of-step and corrupt files rebuilt."""

from __future__ import annotations

import json

import pytest
from index_helpers import StandInParser, small_corpus

from index.builder import build_index
from index.sg_store import SGPhraseStore, build_for_index, build_sg_store, sg_path, sg_store_for
from index.sqlite_index import SqliteIndex
from parsers.errors import InputError, ModelNotAvailableError
from parsers.phrase_chunks import PhraseChunk

TEXTS = [
    "Check the starter relay. The starter may be worn but the battery is fine.",
    "The radiator fan may have failed because its fuse blew. Replace the fuse.",
    "Replace the brake pads after you measure the rotor thickness.",
    "The alternator charges the battery but the belt may slip. Inspect the belt tension.",
]
QUESTIONS = [
    "My car does not start although I replaced the battery and the starter clicks.",
    "The brakes squeal and the pads look worn, should I replace the rotor too?",
    "Why does the battery light come on while driving?\nThe belt looks loose.",
]


@pytest.fixture(scope="module")
def nlp():
    from parsers.nlp_spacy import load_spacy

    try:
        return load_spacy()
    except ModelNotAvailableError as exc:
        pytest.skip(f"no spaCy model: {exc}")


@pytest.fixture()
def index_path(tmp_path):
    path = tmp_path / "answers.sqlite"
    build_index(dialogues=small_corpus(), parser=StandInParser(), backend="sqlite", out=path, progress=False)
    return path


def test_round_trip_keeps_every_phrase(tmp_path, nlp):
    store = build_sg_store(ids=["a", "b", "c", "d"], texts=TEXTS, nlp=nlp, fingerprint={"count": 4}, progress=False)
    assert all(store.phrases(i) for i in "abcd")
    path = store.save(tmp_path / "x.sqlite")
    assert path == sg_path(tmp_path / "x.sqlite")
    loaded = SGPhraseStore.load(tmp_path / "x.sqlite")
    assert loaded.ids == store.ids and loaded.fingerprint == {"count": 4}
    for i in "abcd":
        assert loaded.phrases(i) == store.phrases(i)
        assert all(isinstance(p, PhraseChunk) for p in loaded.phrases(i))
    assert loaded.phrases("missing") is None and "missing" not in loaded
    assert [p.name for p in tmp_path.iterdir()] == ["x.sqlite.sg.json"]  # no temporary file left


def test_stored_phrase_scores_equal_on_the_fly_scores(nlp):
    """The engine's stored-phrase path gives the very same SG feature as parsing the answer at query time."""
    from dtdialog.selection.syntactic_generalization import SyntacticGeneralizer

    store = build_sg_store(ids=[str(i) for i in range(len(TEXTS))], texts=TEXTS, nlp=nlp, progress=False)
    stored = SyntacticGeneralizer(nlp=nlp)
    fresh = SyntacticGeneralizer(nlp=nlp)  # its own cache: every answer parsed with nlp(text), one by one
    nonzero = 0
    for q in QUESTIONS:
        for i, text in enumerate(TEXTS):
            expected = fresh.score(q, text)
            assert stored.score_phrases(q, store.phrases(str(i))) == expected
            nonzero += expected > 0
    assert nonzero >= 3  # the comparison is not vacuous


def test_skipping_ner_leaves_every_phrase_unchanged(nlp):
    """Phrases are parsed without the NER pipe (cheaper); NER runs last and sets only entities."""
    from parsers.nlp_spacy import doc_to_analyzed
    from parsers.phrase_chunks import extract_phrases, phrases_of_text, phrases_of_texts

    full = [extract_phrases(doc_to_analyzed(nlp(t))) for t in TEXTS + QUESTIONS]
    assert phrases_of_texts(TEXTS + QUESTIONS, nlp=nlp) == full
    assert [phrases_of_text(t, nlp=nlp) for t in TEXTS + QUESTIONS] == full


def test_prefetched_query_parse_gives_the_same_score(nlp):
    from dtdialog.selection.syntactic_generalization import SyntacticGeneralizer

    store = build_sg_store(ids=["a"], texts=TEXTS[:1], nlp=nlp, progress=False)
    g = SyntacticGeneralizer(nlp=nlp)
    g.prefetch(QUESTIONS[0])
    g.prefetch(QUESTIONS[0])  # a second prefetch of the same text is not parsed twice
    assert g.score_phrases(QUESTIONS[0], store.phrases("a")) == SyntacticGeneralizer(nlp=nlp).score(QUESTIONS[0], TEXTS[0])
    assert QUESTIONS[0] in g._cache


def test_builder_writes_phrases_that_match_the_index(index_path, nlp):
    store = build_for_index(index_path, nlp=nlp, progress=False)
    with SqliteIndex(index_path) as index:
        assert sorted(store.ids) == sorted(index.ids())
        assert store.in_step_with(index)
        assert sg_store_for(index, index_path, nlp=nlp, progress=False).ids == store.ids


def test_out_of_step_store_is_rebuilt(index_path, nlp, tmp_path):
    from index.documents import build_document

    build_for_index(index_path, nlp=nlp, progress=False)
    tree = StandInParser().parse("Replace the spark plugs and the ignition coil.")
    with SqliteIndex(index_path, readonly=False) as writer:
        writer.add([build_document(doc_id="new#1", dialogue_id="new", position=1, text=tree.text, tree=tree)])
    import index.sg_store as sg_module

    parsed: list[str] = []
    real = sg_module.phrases_of_texts

    def recording(texts, **kw):
        parsed.extend(texts)
        return real(texts, **kw)

    sg_module.phrases_of_texts = recording
    try:
        with SqliteIndex(index_path) as index:
            with pytest.raises(ModelNotAvailableError):  # none for the index as it is now: never the old one
                SGPhraseStore.load(index_path)
            old = SGPhraseStore.load(index_path, latest=True)  # what a refresh starts from
            assert not old.in_step_with(index)
            rebuilt = sg_store_for(index, index_path, nlp=nlp, progress=False)
            assert "new#1" in rebuilt and rebuilt.in_step_with(index)
            assert all(rebuilt.phrases(i) == old.phrases(i) for i in old.ids)
    finally:
        sg_module.phrases_of_texts = real
    assert parsed == [tree.text]  # only the added answer was parsed; the others kept their phrases
    assert "new#1" in SGPhraseStore.load(index_path)


@pytest.mark.parametrize("content", [b"", b"{not json", b"\x00\xff\xfe binary", b'{"kind": "other"}',
                                     b'{"kind": "dtdialog-sg-phrases", "version": 1, "ids": [], "phrases": []}',
                                     b'{"kind": "dtdialog-sg-phrases", "version": 2, "ids": ["a"], "phrases": []}',
                                     b'{"kind": "dtdialog-sg-phrases", "version": 2, "ids": ["a"], "phrases": [[["NP"]]]}',
                                     b'{"kind": "dtdialog-sg-phrases", "version": 2, "ids": ["a"], "phrases": ["[[1]]"]}'])
def test_corrupt_file_is_a_clear_error_and_rebuilt_on_use(index_path, nlp, content):
    sg_path(index_path).write_bytes(content)
    with pytest.raises(InputError, match="corrupt SG phrase file"):
        SGPhraseStore.load(index_path)
    with SqliteIndex(index_path) as index:
        store = sg_store_for(index, index_path, nlp=nlp, progress=False)
        assert len(store) == index.count()
    assert json.loads(sg_path(index_path).read_text())["kind"] == "dtdialog-sg-phrases"


def test_missing_store_and_bad_arguments(tmp_path):
    with pytest.raises(ModelNotAvailableError, match="no SG phrases"):
        SGPhraseStore.load(tmp_path / "none.sqlite")
    with pytest.raises(InputError, match="2 ids for 1"):
        build_sg_store(ids=["a", "b"], texts=["x"], progress=False)
    assert len(build_sg_store(ids=[], texts=[], progress=False)) == 0
