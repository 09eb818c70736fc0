"""The dialogue-position detector: answers whose opening points back to earlier turns cannot stand alone.

The trees are hand-built, so the verdicts follow from the discourse structure (which EDU is a satellite) and the
cue lexicon, not from a parser's segmentation.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dtdialog"))
from engine_helpers import build_tree  # noqa: E402

from index.base import AnswerDocument  # noqa: E402
from index.documents import build_document  # noqa: E402
from index.position import FOLLOWUP, OPENING, detect_position, first_edu_place, position_of, source_role  # noqa: E402

FOLLOWUPS = {
    "then, as a nucleus": ("Elaboration", "NS", ["Then focus on the range switch,", "it sits on the gearbox."]),
    "that + evaluation": ("Cause", "NS", ["That confirms the alternator is weak,", "because the voltage drops."]),
    "this + evaluation": "This rules out the fuel pump.",
    "acknowledgement": ("Joint", "NN", ["Good, both fuses are fine.", "Now test the relay."]),
    "reference to an earlier turn": "As I said, the belt needs replacing.",
    "condition on an earlier result": ("Condition", "SN", ["If that did not work,", "replace the ignition relay."]),
    "in that case": "In that case the master cylinder is leaking internally.",
}
OPENINGS = {
    "plain statement": ("Elaboration", "NS", ["A squeal that stops when you press the brakes", "is the wear indicator."]),
    "condition on the customer's own words": ("Condition", "SN", ["If the slide pins are free,",
                                                                  "the caliper piston is seized."]),
    "anaphor without evaluation": "That noise usually comes from a worn wheel bearing.",
    "yes-answer to the question's own subject": "Yes, that's limp mode, also called fail-safe mode.",
    "it refers to the customer's car": "It sounds like the starter solenoid is sticking.",
}


@pytest.mark.parametrize("name", sorted(FOLLOWUPS))
def test_back_pointing_openings_cannot_stand_alone(name):
    position = detect_position(build_tree(FOLLOWUPS[name]), role=FOLLOWUP)
    assert not position.stands_alone and position.reason


@pytest.mark.parametrize("name", sorted(OPENINGS))
def test_openings_stand_alone(name):
    position = detect_position(build_tree(OPENINGS[name]))
    assert position.stands_alone and position.reason == ""


def test_a_continuing_cue_resolved_inside_the_answer_does_not_point_back():
    # the same first EDU: as a satellite its cue attaches to the answer's own nucleus, as a nucleus to an earlier turn
    inside = build_tree(("Condition", "SN", ["Right when the pads wear down,", "the rotor gets scored."]))
    outside = build_tree(("Elaboration", "NS", ["Right, the pads wear down,", "and the rotor gets scored."]))
    assert first_edu_place(inside) == ("Condition", "S") and first_edu_place(outside) == ("Elaboration", "N")
    assert detect_position(inside).stands_alone
    assert not detect_position(outside).stands_alone


def test_then_at_the_start_of_an_answer_points_back_whatever_its_place():
    """No first answer of the built-in corpus, the IRC train split or mechanics opens with "Then"."""
    inside = build_tree(("Temporal", "SN", ["Then the pads wear down,", "and the rotor gets scored."]))
    assert detect_position(inside).reason == "back-pointing opener: then"


def test_an_anaphor_in_a_satellite_points_back_only_when_the_satellite_is_one():
    as_satellite = build_tree(("Background", "SN", ["Since both read fine,", "the wiring is the suspect."]))
    as_nucleus = build_tree(("Elaboration", "NS", ["Since both read fine,", "the wiring is the suspect."]))
    assert not detect_position(as_satellite).stands_alone
    assert "Background satellite" in detect_position(as_satellite).reason
    assert detect_position(as_nucleus).stands_alone


def test_role_comes_from_the_source_and_documents_store_the_position():
    assert source_role(1, 1) == OPENING and source_role(3, 1) == FOLLOWUP and source_role(2, 2) == OPENING
    tree = build_tree(FOLLOWUPS["then, as a nucleus"])
    doc = build_document(doc_id="d#3", dialogue_id="d", position=3, text=tree.text, tree=tree)
    assert doc.meta["role"] == FOLLOWUP and doc.meta["stands_alone"] is False
    assert build_document(doc_id="d#3", dialogue_id="d", position=3, text=tree.text, tree=tree,
                          role=OPENING).meta["role"] == OPENING


def test_an_index_without_the_fields_gets_them_computed_on_load():
    tree = build_tree(FOLLOWUPS["that + evaluation"])
    old = AnswerDocument(id="old#3", dialogue_id="old", position=3, text=tree.text, tree=tree.to_dict())
    position = position_of(old)
    assert position.role == FOLLOWUP and not position.stands_alone
    plain = build_tree(OPENINGS["plain statement"])
    fresh = AnswerDocument(id="new#1", dialogue_id="new", position=1, text=plain.text, tree=plain.to_dict(),
                           meta={"role": OPENING, "stands_alone": True})
    assert position_of(fresh).stands_alone and position_of(fresh).role == OPENING


def test_a_stored_verdict_still_meets_the_formulas_listed_since():
    """An index built before "since you already" was listed reads it from the answer's text on load."""
    stored = AnswerDocument(id="old#1", dialogue_id="old", position=1,
                            text="Since you already replaced the battery, the alternator is the next suspect.",
                            meta={"role": OPENING, "stands_alone": True, "position_reason": ""})
    position = position_of(stored)
    assert not position.stands_alone and position.reason == "back-pointing opener: since you already"
    assert position.role == OPENING
