"""A logged follow-up is given only after the kind of reply it was written for (the overheating chat: "the fan doesn't
come on at all" got "Then the fan motor and its wiring are fine", written for "it does come on with the AC")."""

from __future__ import annotations

from types import SimpleNamespace

from data.model import Dialogue, Turn
from dtdialog.selection.agreement import AgreementResult
from dtdialog.selection.scoring import RankedCandidate
from dtdialog.selection.stages import StepRecord
from dtdialog.selection.stages.branch_clash import SKIPS_AHEAD, demote_branch_clashes
from dtdialog.selection.stages.scoring_stage import Scored
from dtdialog.understanding.entities import EntityNormalizer
from dtdialog.understanding.reply_branch import branch_clash, polar_question, refers_back, reply_polarity, reports
from index.base import AnswerDocument
from index.builder import parse_documents
from tests.dtdialog.engine_helpers import TableParser

FAN = ("Let the engine idle until the gauge rises and see whether the fan starts spinning. If it doesn't, check the "
       "fan fuse and relay. Does the fan come on when you turn on the air conditioning?")
LOGGED = "The fan doesn't spin when it's hot, but it does come on with the AC."
THEN = "Then the fan motor and its wiring are fine, and the problem is the switch that tells the fan to run."
TERMS = EntityNormalizer().terms_of_text


def test_the_closing_yes_no_question_is_found_and_wh_or_choice_questions_are_not():
    assert polar_question(FAN) == "Does the fan come on when you turn on the air conditioning?"
    assert polar_question("Clean the area. And is the level low?") == "And is the level low?"
    assert polar_question("Clean the area. Where does the fresh oil appear?") is None
    assert polar_question("Does the shaking happen only when braking, or also while cruising?") is None
    assert polar_question("Replace the gasket.") is None


def test_replies_from_the_corpus_are_read_yes_no_or_not_at_all():
    question = polar_question(FAN)
    assert reply_polarity(LOGGED, question, TERMS) == 1  # the clause about the AC answers it, not the one before
    assert reply_polarity("the fan doesn't come on at all", question, TERMS) == -1
    assert reply_polarity("No, it's the same on all roads.", "Does the shaking change on a different road?") == -1
    assert reply_polarity("Yes, it smells sweet, and it's sticky.", "Does it smell sweet?") == 1
    # "no spark" opens a statement, not an answer; and it shares no word with the question
    assert reply_polarity("no spark at all", question, TERMS) == 0
    assert reply_polarity("The carpet is dry.", "Is it wet?") == 0


def test_a_reply_about_another_situation_says_neither_yes_nor_no():
    # found by trying the chat: "the fan doesn't spin at all when it gets hot" was read as a no to the AC question, so
    # the logged follow-up was held back as written for the other branch, and the question was never asked again
    question = polar_question(FAN)
    assert reply_polarity("I checked and the fan doesn't spin at all when it gets hot", question, TERMS) == 0
    assert branch_clash("I checked and the fan doesn't spin at all when it gets hot", LOGGED, FAN, TERMS,
                        answer_after=THEN).kind == "unanswered"
    assert reply_polarity("no, not even with the AC on", question, TERMS) == -1
    # a situation that only points back at the symptom is the one asked about
    assert reply_polarity("The rpm goes up and down by about 200 during the surge.",
                          "Does the rpm change by a couple of hundred when it happens?") == 1


def test_a_reply_that_reports_the_logged_finding_with_another_verb_follows_its_branch():
    # found by trying the chat: "swapped it" against the logged "I replaced it" fell short of half the logged words,
    # so "Then clean the evaporator ..." was held back as following a finding not reported
    before = "Replace the cabin air filter first. Do you know where your cabin air filter is located?"
    logged = "I found it behind the glove box and it was full of leaves and dirt. I replaced it, but the smell is still there."
    then = "Then clean the evaporator with an AC evaporator cleaning foam."
    reply = "found the cabin filter behind the glovebox, it was filthy with leaves. swapped it but still smells"
    assert branch_clash(reply, logged, before, TERMS, answer_after=then) is None
    assert branch_clash("it smells like fuel now", logged, before, TERMS, answer_after=then).kind == "finding"


def test_a_short_answer_is_read_by_its_auxiliary():
    """The paper's own C1, "It did at first but not anymore", to "Did it fire briefly on starting fluid?" shares no
    content word with the question: read as saying nothing, the answer logged after it ("Then start with fuel
    pressure") was taken for one whose question was left open."""
    question = "Did it fire briefly on starting fluid?"
    assert reply_polarity("It did at first but not anymore. What should I do?", question) == 1
    assert reply_polarity("it didn't", question) == -1 and reply_polarity("It did not catch at all", question) == -1
    assert reply_polarity("I smell gas", question) == 0


def test_a_question_back_reports_nothing():
    assert not reports("where would the oil be dripping from?")
    assert reports("It did fire on the starting fluid, but now it won't. What should I do next?")
    assert not reports("ok?")


def test_a_clash_is_the_other_answer_or_no_report():
    found = branch_clash("the fan doesn't come on at all", LOGGED, FAN, TERMS)
    assert found is not None and found.kind == "polarity" and "the other way" in found.explain()
    assert branch_clash("It stays off when hot but it does come on with the AC", LOGGED, FAN, TERMS) is None
    asked = branch_clash("where would the oil be dripping from?", "Fresh oil runs down the valve cover edge.",
                         "Look for fresh wetness. Where does the fresh oil appear?", TERMS)
    assert asked is not None and asked.kind == "no_report"
    # an answer closing with a wh-question leaves a report against a report alone
    assert branch_clash("It's at the back.", "Fresh oil runs down the valve cover edge.",
                        "Where does the fresh oil appear?", TERMS) is None


def test_replies_that_report_opposite_values_clash_whatever_the_question():
    """Found by trying the chat: "I checked the power steering fluid and it's full" got "Top it up with the correct
    power steering fluid ... because the level dropped", written for "The level is slightly low"."""
    check = "Check the fluid level in the reservoir. Is the level low or the fluid foamy?"  # a choice: no yes or no
    logged = "The level is slightly low and the fluid is dark and a bit foamy."
    found = branch_clash("I checked the power steering fluid and it's full", logged, check, TERMS)
    assert found is not None and found.kind == "polarity"
    assert branch_clash("it's low and looks dark", logged, check, TERMS) is None
    # a value said under a negation is not said: "not full" is no report of a full reservoir
    assert branch_clash("it's not full, maybe a bit under the line", logged, check, TERMS) is None


def _cand(doc_id: str, text: str, score: float, reply_before: str | None = None) -> RankedCandidate:
    dialogue_id, position = doc_id.split("#")
    doc = AnswerDocument(id=doc_id, dialogue_id=dialogue_id, position=int(position), text=text,
                         meta={"reply_before": reply_before} if reply_before else {})
    return RankedCandidate(document=doc, retrieval_score=1.0, score=score,
                           agreement=AgreementResult(verdict=True, score=1.0, addressed=1, required=1))


def _stage(reply: str, *, penalty: float = 0.8) -> tuple[Scored, StepRecord]:
    previous = AnswerDocument(id="fan#1", dialogue_id="fan", position=1, text=FAN)
    kept = [_cand("fan#3", THEN, 0.9, LOGGED), _cand("fan#5", "Bleed the air after the switch.", 0.7, "Done."),
            _cand("other#1", "Check the fan fuse and the fan relay.", 0.5)]
    record = StepRecord()
    out = demote_branch_clashes(Scored(kept=kept, rescued=[]), SimpleNamespace(previous=previous, is_followup=True),
                                reply, penalty=penalty, tools=SimpleNamespace(normalizer=EntityNormalizer(),
                                                                              document=lambda _id: None),
                                record=record)
    return out, record


SWAP = ("To check, swap the two front tires left and right. If the pull changes direction, one tire is the cause. "
        "Can you swap the front tires?")
SWAPPED = "I swapped them, and now it pulls to the right."
CONFIRMS = "That confirms one of the tires has a conicity problem. Take it back to the tire shop."


def _swap_stage(reply: str) -> tuple[Scored, StepRecord]:
    previous = AnswerDocument(id="tire#1", dialogue_id="tire", position=1, text=SWAP)
    kept = [_cand("tire#3", CONFIRMS, 0.9, SWAPPED), _cand("other#1", "A bent tie rod can make the car pull.", 0.5)]
    record = StepRecord()
    out = demote_branch_clashes(Scored(kept=kept, rescued=[]), SimpleNamespace(previous=previous, is_followup=True),
                                reply, penalty=0.8, tools=SimpleNamespace(normalizer=EntityNormalizer(),
                                                                          document=lambda _id: None), record=record)
    return out, record


def test_an_answer_that_opens_on_a_finding_needs_the_reply_to_report_it():
    """Found by trying the chat: "tire pressures are all at 35" read as a yes to "Can you swap the front tires?", and
    "That confirms one of the tires has a conicity problem" followed."""
    out, record = _swap_stage("tire pressures are all at 35")
    assert out.kept[0].document.id == "other#1" and "finding you have not reported" in record.branch_clash["tire#3"]
    out, record = _swap_stage("yes, I swapped them and now it pulls right")
    assert out.kept[0].document.id == "tire#3" and not record.branch_clash
    assert refers_back(CONFIRMS) and not refers_back("That loose connection can also cause it.")


def test_an_answer_that_opens_on_a_consequence_needs_the_reply_it_was_written_for():
    """Found by trying the chat: to "Where does the oil appear?", "no leaks on the ground" got "Then replace the valve
    cover gasket" (written for "Fresh oil is along the back edge of the valve cover"), and to "Did it fire briefly on
    starting fluid?", "I can smell gas after cranking" got "Then start with fuel pressure". "Then ..." follows only
    the same yes or no to the question before it, or most of the logged reply's words."""
    where = "Clean the area and drive a few days. Where does the fresh oil appear?"
    fresh = "Fresh oil is along the back edge of the valve cover, and the dipstick is at the full mark."
    gasket = "Then replace the valve cover gasket, along with the spark plug tube seals."
    found = branch_clash("no leaks on the ground", fresh, where, TERMS, answer_after=gasket)
    assert found is not None and found.kind == "finding"
    assert branch_clash("there's fresh oil along the back edge of the valve cover", fresh, where, TERMS,
                        answer_after=gasket) is None
    fluid = "Spray a short shot of starting fluid into the intake. Did it fire briefly on starting fluid?"
    fired = "It did fire on the starting fluid the first couple of times, but now it won't even do that."
    pressure = "Then start with fuel pressure, because starting fluid only proves the ignition works."
    assert branch_clash("I can smell gas after cranking", fired, fluid, TERMS, answer_after=pressure) is not None
    assert branch_clash("yes, it fired for a second", fired, fluid, TERMS, answer_after=pressure) is None
    # the overheating chat's own branch: the same yes to the same question is enough for "Then ..."
    assert branch_clash("yes, it comes on with the AC", LOGGED, FAN, TERMS, answer_after=THEN) is None


def test_a_reply_that_leaves_the_yes_no_question_open_takes_no_branch():
    """Found by trying the chat: "also my brakes squeak, unrelated" to "Does your engine have a bleeder screw?" got
    "Open that bleeder screw ..." at 97%, written for "I found a small screw on top of the thermostat housing". A reply
    that answers the question neither way and reports none of the logged finding takes no branch; an answer that
    opens on its own condition ("If both hoses are hot, ...") says which reply it is for, and may follow any."""
    bleeder = "Many engines have a bleeder screw on the thermostat housing. Does your engine have a bleeder screw?"
    found_it = "I found a small screw on top of the thermostat housing. It's a 2010 Jeep Liberty."
    open_it = "Open that bleeder screw with the engine cold and slowly fill the reservoir."
    found = branch_clash("also my brakes squeak, unrelated", found_it, bleeder, TERMS, answer_after=open_it)
    assert found is not None and found.kind == "unanswered" and "have not given" in found.explain()
    assert branch_clash("yes, there's one on the thermostat housing", found_it, bleeder, TERMS,
                        answer_after=open_it) is None
    hoses = "Feel both heater hoses at the firewall. Are both hoses hot?"
    both_hot = "Both hoses are hot, and the coolant is full."
    blend = "If both hoses are hot, the coolant is flowing through the heater core, so the blend door is likely."
    assert branch_clash("the coolant level is fine", both_hot, hoses, TERMS, answer_after=blend) is None


def test_the_stage_demotes_every_later_answer_of_the_branch_not_taken():
    out, record = _stage("the fan doesn't come on at all")
    assert [c.document.id for c in out.kept] == ["other#1", "fan#3", "fan#5"]
    assert abs(out.kept[1].score - 0.18) < 1e-9 and out.kept[1].features["branch_clash"] == 1.0
    assert set(record.branch_clash) == {"fan#3", "fan#5"} and record.to_dict()["branch_clash"]
    same, record = _stage("It stays off when hot, but it does come on with the AC.")
    # the logged branch: its next answer first; the one after it was written for a reply not given yet
    assert [c.document.id for c in same.kept] == ["fan#3", "other#1", "fan#5"] and record.branch_follows == "fan#3"
    assert record.branch_clash == {"fan#5": SKIPS_AHEAD}
    off, _ = _stage("the fan doesn't come on at all", penalty=0.0)
    assert off.kept[0].document.id == "fan#3"


def test_a_reply_on_the_logged_branch_puts_its_next_answer_first():
    kept = [_cand("other#1", "Check the fan fuse and the fan relay.", 0.9), _cand("fan#3", THEN, 0.4, LOGGED)]
    previous = AnswerDocument(id="fan#1", dialogue_id="fan", position=1, text=FAN)
    tools = SimpleNamespace(normalizer=EntityNormalizer(), document=lambda _id: None)
    step = SimpleNamespace(previous=previous, is_followup=True)
    record = StepRecord()
    out = demote_branch_clashes(Scored(kept=list(kept)), step, "yes it comes on with the AC, just not when hot",
                                penalty=0.8, tools=tools, record=record)
    assert [c.document.id for c in out.kept] == ["fan#3", "other#1"] and record.branch_follows == "fan#3"
    # a reply that says something else leaves the ranking alone
    record = StepRecord()
    out = demote_branch_clashes(Scored(kept=list(kept)), step, "it smells sweet inside the cabin", penalty=0.8,
                                tools=tools, record=record)
    assert out.kept[0].document.id == "other#1" and record.branch_follows is None


def test_the_index_keeps_the_reply_each_follow_up_was_written_for():
    dialogue = Dialogue(id="fan", turns=(Turn("Q", "It overheats in traffic."), Turn("A", FAN), Turn("C", LOGGED),
                                         Turn("A", THEN)))
    docs = {d.id: d for d in parse_documents([(dialogue, p, t) for p, t in dialogue.answers()], parser=TableParser(),
                                             progress=False)}
    assert "reply_before" not in docs["fan#1"].meta
    assert docs["fan#3"].meta["reply_before"] == LOGGED


def test_another_code_or_a_fault_that_stayed_is_another_branch():
    # found by trying the chat: P0302 got "swap the cylinder 3 coil ...", written after "The code is P0303", and
    # "the misfire stayed on 2" got "Then the ignition coil is the fault", written after "The misfire moved"
    asked = "Do you have a code?"
    clash = branch_clash("it is code P0302", "The code is P0303, cylinder 3 misfire.", asked)
    assert clash is not None and clash.kind == "code" and "another code" in clash.explain()
    assert branch_clash("it is code P0303", "The code is P0303, cylinder 3 misfire.", asked) is None
    swap = "To find out which, swap the coils. If the misfire moves, replace the coil; if it stays, check the plug."
    moved = "The misfire moved to cylinder 1 after the swap."
    assert branch_clash("I swapped the coil with cylinder 1 and the misfire stayed on 2", moved, swap) is not None
    assert branch_clash("it moved to cylinder 1", moved, swap) is None
