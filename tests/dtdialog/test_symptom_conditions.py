"""When the customer says a symptom happens, and when an answer says it stops (issue 13: "My brakes squeal when I
stop" got an answer for a squeal that "stops when you press the brakes")."""

from __future__ import annotations

from dtdialog.selection.agreement import AgreementResult
from dtdialog.selection.scoring import RankedCandidate
from dtdialog.selection.stages import StepRecord
from dtdialog.selection.stages.condition_clash import demote_clashes
from dtdialog.selection.stages.scoring_stage import Scored
from dtdialog.understanding.symptom_conditions import (
    cessation_clauses,
    clash,
    occurrence_clauses,
    says_when,
    situations,
)
from index.base import AnswerDocument

WEAR_TAB = ("A squeal that is present while driving and stops when you press the brakes is very typical of the "
            "wear indicator.")
NEW_PADS = "Some squeak in the first few hundred miles is normal while new pads bed in."


def test_occurrence_and_cessation_clauses():
    assert occurrence_clauses("My brakes squeal when I stop. It got worse every time I turn.") == [
        "when I stop", "every time I turn"]
    # after a verb of ceasing, "when" says when it stops, not when it happens
    assert occurrence_clauses("It squeals while driving and goes away when I press the pedal.") == ["while driving"]
    assert cessation_clauses(WEAR_TAB) == ["stops when you press the brakes"]
    assert cessation_clauses("The noise disappears completely once the engine warms up.") == [
        "disappears completely once the engine warms up"]
    # "stops" + a gerund ceases an action, unless the gerund is a symptom's (a mechanics question was misread so)
    assert cessation_clauses("The engine stops turning when the wheels stop turning.") == []
    assert cessation_clauses("It stops squealing when you press the brakes.") == [
        "stops squealing when you press the brakes"]


def test_an_occasion_phrase_says_when_as_a_clause_does():
    """Before: "My temperature gauge climbs in traffic" was asked "When does it happen?"."""
    for said in ("My temperature gauge climbs in traffic", "It shakes at highway speed", "clunks over bumps",
                 "it squeals on cold mornings", "rough at idle", "hesitates at 2000 rpm", "it happens every morning",
                 "squeals when I stop", "my battery keeps dying overnight", "it won't start after sitting a week"):
        assert says_when(said), said
    for said in ("My car makes a noise", "I had it checked at the shop", "the light on the dash is on",
                 "in my driveway", "on my 2012 Civic"):
        assert not says_when(said), said


def test_situations_are_matched_by_stem_and_phrase():
    assert situations("when I stop at a light") == {"braking", "idling"}
    assert situations("when you press the brakes") == {"braking"}
    assert situations("on cold mornings when I start it") == {"cold", "starting"}
    assert situations("when I open the trunk") == set()


def test_a_clash_needs_the_same_situation():
    found = clash("My brakes squeal when I stop.", WEAR_TAB)
    assert found is not None and found.situation == "braking"
    assert '"stops when you press the brakes"' in found.explain() and '"when I stop"' in found.explain()
    assert clash("My brakes squeal while driving and it goes away when I brake.", WEAR_TAB) is None  # agrees
    assert clash("It squeals every time I turn the wheel.", WEAR_TAB) is None  # another situation
    assert clash("It squeals on cold mornings.", "A squeal that goes away once the engine warms up is the belt.") is None
    assert clash("My brakes squeal.", WEAR_TAB) is None  # the customer said nothing about when


def _cand(doc_id: str, text: str, score: float) -> RankedCandidate:
    doc = AnswerDocument(id=doc_id, dialogue_id=doc_id.split("#")[0], position=1, text=text)
    return RankedCandidate(document=doc, retrieval_score=1.0, score=score,
                           agreement=AgreementResult(verdict=True, score=1.0, addressed=1, required=1))


def test_the_stage_demotes_the_clashing_answer_and_says_why():
    scored = Scored(kept=[_cand("wear#1", WEAR_TAB, 0.9), _cand("pads#1", NEW_PADS, 0.5)], rescued=[])
    record = StepRecord()
    out = demote_clashes(scored, ["My brakes squeal when I stop."], penalty=0.8, record=record)
    assert [c.document.id for c in out.kept] == ["pads#1", "wear#1"]
    assert abs(out.kept[1].score - 0.18) < 1e-9 and out.kept[1].features["condition_clash"] == 1.0
    assert "when I stop" in record.condition_clash["wear#1"] and record.to_dict()["condition_clash"]
    # a reply can bring the situation too; penalty 0 turns the stage off
    later = demote_clashes(Scored(kept=[_cand("wear#1", WEAR_TAB, 0.9)], rescued=[]),
                           ["My brakes squeal.", "Only when I stop."], penalty=0.5, record=StepRecord())
    assert later.kept[0].score == 0.45
    off = demote_clashes(Scored(kept=[_cand("wear#1", WEAR_TAB, 0.9)], rescued=[]), ["squeal when I stop"],
                         penalty=0.0, record=StepRecord())
    assert off.kept[0].score == 0.9
