"""RR terms are objects in memory and ``"Relation [words]"`` text only where they are stored or shown."""

import pytest

from index.base import AnswerDocument, RRTerm, SearchQuery
from index.sqlite_index import rr_column


@pytest.mark.parametrize("term", [
    RRTerm("Contrast", ("start", "car")),
    RRTerm("Manner-Means", ("won't", "v-belt", "würth")),
    RRTerm("Cause", ("cold",)),
    RRTerm("Condition", ()),
])
def test_text_form_round_trips(term):
    assert RRTerm.parse(str(term)) == term


def test_text_form_is_relation_then_bracketed_words():
    assert str(RRTerm("Contrast", ("replaced", "battery"))) == "Contrast [replaced battery]"
    assert RRTerm.parse("Cause [cold  morning]") == RRTerm("Cause", ("cold", "morning"))


def test_document_stores_terms_as_text_and_loads_them_as_objects():
    terms = (RRTerm("Contrast", ("starter", "worn")), RRTerm("Cause", ("cold",)))
    doc = AnswerDocument(id="d#1", dialogue_id="d", position=1, text="t", rr_edu=terms)
    stored = doc.to_dict()
    assert stored["rr_edu"] == ["Contrast [starter worn]", "Cause [cold]"]
    loaded = AnswerDocument.from_dict(stored)
    assert loaded.rr_edu == terms and all(isinstance(t, RRTerm) for t in loaded.rr_edu)


def test_a_record_written_before_terms_were_objects_loads_unchanged():
    record = {"id": "a#1", "dialogue_id": "a", "position": 1, "text": "x", "rr_edu": ["Contrast [start car]"]}
    doc = AnswerDocument.from_dict(record)
    assert doc.rr_edu == (RRTerm("Contrast", ("start", "car")),)
    assert doc.to_dict()["rr_edu"] == record["rr_edu"]


def test_query_dict_still_shows_terms_as_text():
    query = SearchQuery(keywords=("belt",)).with_rr("Contrast", ["start", "car"])
    assert query.to_dict()["rr_terms"] == ["Contrast [start car]"]


def test_sqlite_rr_column_tags_each_term_and_keeps_empty_terms_as_placeholders():
    column = rr_column((RRTerm("Contrast", ("start", "car")), RRTerm("Joint", ("the",)), RRTerm("Cause", ("cold",))))
    assert column == "contrast_start contrast_car | _ | cause_cold"
