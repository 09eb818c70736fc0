"""Entity stems stored at index time give an answer's analysis the terms its words give, without stemming them.

The oracle is the plain term code (``plain_analysis.plain_terms_of_edu``: every word stemmed per call); stale,
miscounted or malformed stored stems are never used.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plain_analysis import plain_terms_of_edu

import index.vocabulary as vocabulary
from dtdialog import entities
from dtdialog.agreement import RhetoricalAgreement
from index.base import AnswerDocument
from index.documents import build_document, entity_stems_of, stored_entity_stems
from parsers.tree import EDU, DiscourseTree, Node


@pytest.fixture(scope="module")
def stored_documents(builtin_rules_index) -> list[AnswerDocument]:
    """Every answer of the built-in corpus as the index gives it back."""
    from index.sqlite_index import SqliteIndex

    index = SqliteIndex(builtin_rules_index)
    try:
        docs = [doc for doc in index.documents() if doc.tree]
    finally:
        index.close()
    assert len(docs) > 300
    return docs


def _analysis_parts(analysis) -> tuple:
    return [(r.relation, [e.index for e in r.edus], r.terms) for r in analysis.relations], analysis.terms


def test_every_builtin_answer_stores_current_stems_that_give_the_plain_terms(stored_documents) -> None:
    agreement = RhetoricalAgreement()
    normalizer = agreement.normalizer
    for doc in stored_documents:
        tree = DiscourseTree.from_dict(doc.tree)
        stored = stored_entity_stems(doc, len(tree.edus))
        assert stored is not None, doc.id  # every document the index wrote carries current stems
        for entry, edu in zip(stored, tree.edus):
            assert entry is not None
            assert normalizer.terms_of_stored(entry, edu) == plain_terms_of_edu(normalizer, edu), (doc.id, edu.text)
        fast = agreement.analyze(tree, stored_stems=stored)
        assert _analysis_parts(fast) == _analysis_parts(agreement.analyze(tree))


def test_reading_stored_stems_stems_no_word(stored_documents, monkeypatch) -> None:
    docs = stored_documents[:40]
    trees = [DiscourseTree.from_dict(d.tree) for d in docs]
    expected = [_analysis_parts(RhetoricalAgreement().analyze(t)) for t in trees]

    def no_stemming(text):
        raise AssertionError(f"stemmed {text!r}")

    monkeypatch.setattr(entities, "entity_stems", no_stemming)
    monkeypatch.setattr(entities, "_stems_of", no_stemming)
    agreement = RhetoricalAgreement()  # a fresh normaliser: nothing memoised
    got = [_analysis_parts(agreement.analyze(t, stored_stems=stored_entity_stems(d, len(t.edus))))
           for d, t in zip(docs, trees)]
    assert got == expected


def _edu_tree(edu: EDU) -> DiscourseTree:
    return DiscourseTree(text=edu.text, edus=(edu,), root=Node(first=0, last=0, edu=0))


def _doc(tree: DiscourseTree) -> AnswerDocument:
    return build_document(doc_id="d#1", dialogue_id="d", position=1, text=tree.text, tree=tree)


def test_stale_miscounted_or_missing_stems_are_not_used() -> None:
    edu = EDU(index=0, text="Replace the ECU.", start=0, end=16, sentence=0, lemmas=("replace", "the", "ecu"), entities=("ECU",))
    doc = _doc(_edu_tree(edu))
    assert stored_entity_stems(doc, 1) == doc.entity_stems["edus"]
    assert stored_entity_stems(doc, 2) is None  # not one entry per EDU of the tree read
    stale = {**doc.entity_stems, "v": "0" * 16}
    assert stored_entity_stems(AnswerDocument.from_dict({**doc.to_dict(), "entity_stems": stale}), 1) is None
    old = {k: v for k, v in doc.to_dict().items() if k != "entity_stems"}  # a document built before they were
    assert AnswerDocument.from_dict(old).entity_stems is None and stored_entity_stems(AnswerDocument.from_dict(old), 1) is None
    assert stored_entity_stems(AnswerDocument.from_dict({**doc.to_dict(), "entity_stems": {"v": stale["v"]}}), 1) is None


@pytest.mark.parametrize("entry", [None, "ecm", [], [3], [["ecm"]], ["ecm", None], {"0": "ecm"}])
def test_a_malformed_entry_falls_back_to_the_edu(entry) -> None:
    normalizer = entities.EntityNormalizer()
    edu = EDU(index=0, text="The computer died.", start=0, end=18, sentence=0, lemmas=("the", "computer", "die"),
              entities=("The computer",))
    assert normalizer.terms_of_stored(entry, edu) == plain_terms_of_edu(normalizer, edu)
    assert "engin control modul" in normalizer.terms_of_stored(entry, edu)  # the synonym list applied (computer)


def test_the_stamp_follows_what_stems_depend_on(monkeypatch) -> None:
    stamp = vocabulary.entity_stems_stamp()
    vocabulary.entity_stems_stamp.cache_clear()
    monkeypatch.setattr(vocabulary, "LIGHT_VERBS", vocabulary.LIGHT_VERBS | {"wiggle"})
    try:
        assert vocabulary.entity_stems_stamp() != stamp
    finally:
        vocabulary.entity_stems_stamp.cache_clear()
    monkeypatch.undo()
    assert vocabulary.entity_stems_stamp() == stamp


_WORDS = st.sampled_from(["engine", "ecu", "computer", "control", "module", "spark-plug", "o2", "won't", "the",
                          "check", "replaced", "replacing", "coils", "battery", "12v", "a", "x", "fuel", "pump",
                          "mass", "air", "flow", "sensor", "maf", "idle", "it's", "café", "ÜBER", "running"])
_PHRASES = st.lists(_WORDS, min_size=0, max_size=5).map(" ".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lemmas=st.lists(_PHRASES, max_size=8), phrases=st.lists(_PHRASES, max_size=4), text=_PHRASES)
def test_stored_stems_give_the_plain_terms_of_any_edu(lemmas, phrases, text) -> None:
    edu = EDU(index=0, text=text or "x", start=0, end=len(text or "x"), sentence=0, lemmas=tuple(lemmas), entities=tuple(phrases))
    doc = _doc(_edu_tree(edu))
    entry = stored_entity_stems(doc, 1)[0]
    normalizer = entities.EntityNormalizer()
    assert normalizer.terms_of_stored(entry, edu) == plain_terms_of_edu(normalizer, edu)
    assert entity_stems_of(_edu_tree(edu)) == doc.entity_stems
