"""What the customer already tried (issue 13, item 5): extraction from DT-Q, memory across turns, demotion and
its explanation, and the paper's example."""

from __future__ import annotations

import pytest
from engine_helpers import TableParser, build_tree, make_index

from dtdialog.dialogue.session import SessionRecord
from dtdialog.dialogue.trace import format_trace
from dtdialog.understanding.entities import EntityNormalizer
from dtdialog.understanding.tried import (
    CHECKED,
    DONE,
    REPLACED,
    RULED_OUT,
    TriedAction,
    extract_tried,
    main_recommendation,
    repeated_action,
    reported_in_clause,
    says_work_done,
    tried_from_dicts,
)

NORMALIZER = EntityNormalizer()


def _tried(spec) -> list[TriedAction]:
    return extract_tried(build_tree(spec), NORMALIZER)


def _has(actions, verb_class: str, word: str) -> bool:
    term = NORMALIZER.terms_of_text(word)
    return any(a.verb_class == verb_class and term <= a.objects for a in actions)


# --- extraction -------------------------------------------------------------------------------------
def test_concession_satellite_of_the_paper_question_lists_every_action():
    spec = ("Concession", "SN", [("Joint", "NNN", ["I have checked the spark plugs,", "replaced the battery,",
                                                   "also replaced ignition coils and the solenoid,"]),
                                 "but I still could not start my car."])
    actions = _tried(spec)
    assert _has(actions, CHECKED, "spark plugs") and _has(actions, REPLACED, "battery")
    assert _has(actions, REPLACED, "ignition coils") and _has(actions, REPLACED, "solenoid")
    assert {a.relation for a in actions} == {"Concession"}
    # the Concession's nucleus is the problem, not something done
    assert not any("start" in a.objects for a in actions)


@pytest.mark.parametrize("spec, verb_class, word", [
    (("Contrast", "SN", ["The fuses are fine,", "but the dash stays dark."]), RULED_OUT, "fuses"),
    (("Contrast", "SN", ["I already replaced the alternator,", "but the battery light is on."]), REPLACED, "alternator"),
    (("Joint", "NN", ["The battery was tested", "and is good."]), RULED_OUT, "battery"),
    (("Joint", "NN", ["The battery was tested", "and is good."]), CHECKED, "battery"),
    (("Condition", "SN", ["Even after I put in a new battery,", "it still clicks."]), REPLACED, "battery"),
    ("My battery tested good at the parts store.", RULED_OUT, "battery"),
    ("I had the alternator tested last week.", CHECKED, "alternator"),
    # the demo's first message: the "not" of the clause before the comma is not this report's
    ("My car will not start, I replaced the battery but it still clicks.", REPLACED, "battery"),
    ("It won't crank; I put in a new battery yesterday.", REPLACED, "battery"),
    # found by trying the chat: "Coolant is full" was no report, and "Check the coolant level first" was no repeat
    ("Heater blows cold air even after the engine is warm. Coolant is full.", RULED_OUT, "coolant"),
    # a level told by its mark, or as correct
    ("The transmission fluid is at the full mark and looks red.", RULED_OUT, "fluid"),
    ("The coolant level is correct.", RULED_OUT, "coolant"),
    # found by trying the chat: "the alignment was done with the brakes" under options was read as picking the
    # option that names the alignment; work reported without saying which is work done on that part
    ("The alignment was done with the brakes.", DONE, "alignment"),
    ("I had the timing belt done at 90k.", DONE, "timing belt"),
    ("I did the brakes on all four wheels last spring.", DONE, "brakes"),
    # a passive's subject is its object, not the words after it
    ("The pads were replaced at the shop.", REPLACED, "pads"),
])
def test_reports_of_done_or_ruled_out(spec, verb_class, word):
    assert _has(_tried(spec), verb_class, word)


def test_a_report_read_before_its_verb_is_quoted_without_the_joiner():
    # found by trying the chat: a demotion said "you already and the tires rotated"
    actions = _tried(("Joint", "NN", ["The wheel bearing was checked", "and the pads replaced."]))
    assert _has(actions, REPLACED, "pads") and _has(actions, CHECKED, "wheel bearing")
    assert sorted(a.explain() for a in actions) == ['you said "the pads replaced"',
                                                    'you said "the wheel bearing was checked"']
    assert [a.explain() for a in _tried("I had the alternator tested.")] == ["you already had the alternator tested"]


def test_a_condition_satellite_keeps_its_relation():
    actions = _tried(("Condition", "SN", ["When I replaced the thermostat,", "the gauge still read hot."]))
    assert _has(actions, REPLACED, "thermostat") and actions[0].relation == "Condition"


@pytest.mark.parametrize("text", [
    "Should I replace the battery?",
    "I haven't checked the fuses.",
    "I have not checked the fuses yet but the car is dead.",
    "If I replace the starter, will it start?",
    "I need a new battery.",
    "I never tested the alternator.",
    "The car starts fine, I did not replace the battery.",
    "I want to clean the throttle body.",
    "The oil pan is full of sludge.",
    "What did I do wrong?",
    "I did not check the fuses yet.",
    "The car is level on the driveway.",
    # found by a simulated customer: the right answer's check of "the bulb" was taken for a repeat of this
    "The bulb doesn't light at all. All the other bulbs are fine.",
])
def test_what_the_customer_did_not_do_is_not_extracted(text):
    assert extract_tried(build_tree(text), NORMALIZER) == []


def test_a_prepositional_phrase_is_not_part_of_the_object():
    (action,) = [a for a in _tried("I replaced the battery at the parts store.") if a.verb_class == REPLACED]
    assert action.objects == NORMALIZER.terms_of_text("battery") and action.explain() == "you already replaced the battery"


# --- the answer's main recommendation ---------------------------------------------------------------
def test_main_recommendation_is_in_the_nucleus_not_the_satellite():
    tree = build_tree(("Explanation", "SN", ["Since you replaced the battery,", "check the starter relay."]))
    rec = main_recommendation(tree, NORMALIZER)
    assert rec is not None and rec.verb_class == CHECKED and NORMALIZER.terms_of_text("relay") <= rec.objects
    tried = _tried("I replaced the battery.")
    assert repeated_action(rec, tried) is None  # it mentions the tried part in passing, and is not demoted
    only_satellite = build_tree(("Condition", "SN", ["If you have not replaced the battery, replace it,",
                                                     "otherwise the starter motor is the likely fault."]))
    assert main_recommendation(only_satellite, NORMALIZER) is None


def test_a_reply_word_is_no_object_of_what_was_tried():
    (action,) = _tried("yes the battery is new")
    assert action.objects == NORMALIZER.terms_of_text("battery")


def test_a_verb_split_from_its_object_clause_is_read_with_it():
    """The segmenter splits "and check | whether the belt is still on"; the check is of the belt, so it repeats "the
    belt looks fine"."""
    tree = build_tree(("Joint", "NN", ["Open the hood and check", "whether the belt is still on the pulleys."]))
    rec = main_recommendation(tree, NORMALIZER)
    assert rec is not None and rec.verb_class == CHECKED and NORMALIZER.terms_of_text("belt") <= rec.objects
    assert repeated_action(rec, _tried("the belt looks fine")) is not None
    # a verb with its own object keeps it: the next clause is not borrowed
    tree = build_tree(("Joint", "NN", ["Check the fuse", "whether the belt is still on the pulleys."]))
    rec = main_recommendation(tree, NORMALIZER)
    assert rec is not None and rec.objects == NORMALIZER.terms_of_text("fuse")


@pytest.mark.parametrize("said, answer, repeats", [
    ("I already replaced the alternator.", "Have the alternator tested at a parts store.", True),
    ("I checked the grounds and the morning voltage.", "Check the grounds and the morning voltage.", True),
    ("The fuses are fine.", "Replace the main fuse.", True),
    ("I measured the battery voltage.", "Test the battery voltage with a meter.", True),
    ("I have checked the spark plugs.", "Pull one coil and check for a spark while someone cranks it.", False),
    ("I have checked the spark plugs.", "Replace the spark plugs.", False),  # a check does not settle a replacement
    ("I cleaned the throttle body.", "Check the throttle position sensor.", False),
    # found by trying the chat: "I already tightened the gas cap" was asked what had been tried, and tightening the
    # cap stayed the advice
    ("I already tightened the gas cap.", "Tighten the cap until it clicks.", True),
    ("I bled the brakes last weekend.", "Bleed the brakes again, starting at the right rear.", True),
    ("I topped up the coolant.", "Top up the coolant to the line.", True),
    ("I reset the ECU.", "Reset the ECU by pulling its fuse for a minute.", True),
    ("I bled the brakes last weekend.", "Tighten the bleeder screws.", False),  # other work is not a repeat
    ("I bleed the brakes every year.", "Bleed the brakes.", False),  # a habit, not a report of this problem
    ("I had the alignment done last week.", "Check the alignment first.", True),
    ("I had the alignment done last week.", "Check the tire pressures first.", False),
    # found by trying the chat: "Have the battery load-tested" was offered to a customer whose battery is new
    ("yes the battery is new, it's 3 months old", "Have the battery load-tested after it's been fully charged.", True),
    ("I replaced the alternator.", "Have the battery bench-tested.", False),
])
def test_repeats_needs_a_covering_verb_class_on_the_same_thing(said, answer, repeats):
    rec = main_recommendation(build_tree(answer), NORMALIZER)
    assert (repeated_action(rec, _tried(said)) is not None) is repeats


def test_the_why_never_says_an_answer_leaves_out_what_any_of_its_clauses_advises():
    """An answer whose advice a parse put in a satellite is not demoted (its main clause recommends nothing), yet the
    customer's why must not claim it leaves the action out: the stage records it in ``mentions_tried``."""
    from dtdialog.selection.agreement import AgreementResult
    from dtdialog.selection.scoring import RankedCandidate
    from dtdialog.selection.stages import StepRecord
    from dtdialog.selection.stages.already_tried import demote_tried
    from dtdialog.selection.stages.scoring_stage import Scored
    from index.base import AnswerDocument

    tree = build_tree(("Elaboration", "NS", ["To find out which,", "swap the coil with the one from cylinder 1."]))
    doc = AnswerDocument(id="coil#1", dialogue_id="coil", position=1, text=tree.text)
    cand = RankedCandidate(document=doc, retrieval_score=1.0, score=1.0,
                           agreement=AgreementResult(verdict=True, score=1.0, addressed=1, required=1))

    class Tools:
        normalizer = NORMALIZER

        @staticmethod
        def analyze(_doc):
            return type("Analysis", (), {"tree": tree, "terms": NORMALIZER.terms_of_text(tree.text)})()

    record = StepRecord()
    tried = _tried("I swapped the coil with cylinder 2.")
    out = demote_tried(Scored(kept=[cand]), tried, penalty=0.5, tools=Tools(), record=record)
    assert out.kept[0].score == 1.0 and record.mentions_tried == {"coil#1": [0]}


# --- session memory and demotion through the dialogue manager ---------------------------------------
QUESTION = "My car struggles to start in the cold morning and the dash lights flicker."
ANSWERS = {
    "grounds#1": "Check the engine grounds when the car struggles to start in the cold morning and lights flicker.",
    "grounds2#1": "Check the battery grounds because flicker and a cold morning start point to the grounds.",
    "relay#1": "Test the starter relay when the car struggles to start in the morning.",
    "relay2#1": "Test the ignition switch when the dash lights flicker in the cold.",
    "fuse#1": "Test the main fuse when the dash lights flicker and the car struggles in the cold.",
    "belt#1": "Inspect the alternator belt when the lights flicker in the cold morning.",
}


def _world(tmp_path, **config):
    from dtdialog.dialogue.manager import DialogueManager
    from dtdialog.dialogue.session_store import SessionStore
    from dtdialog.selection.selector import AnswerSelector
    from dtdialog.setup.engine_config import EngineConfig

    tmp_path.mkdir(parents=True, exist_ok=True)
    index = make_index(tmp_path / "answers.sqlite", ANSWERS)
    cfg = EngineConfig.from_dict({"clarify_margin": 0.0, **config})
    selector = AnswerSelector(index=index, parser=TableParser(), config=cfg)
    return DialogueManager(selector=selector, store=SessionStore(tmp_path / "sessions.sqlite"), config=cfg)


def _two_turns(manager):
    sid = manager.start_session()
    first = manager.handle(session_id=sid, text=QUESTION)
    second = manager.handle(session_id=sid, text="I already checked the grounds, the lights still flicker.")
    return sid, first, second


def test_a_later_reply_is_remembered_and_demotes_a_grounds_answer(tmp_path):
    off = _world(tmp_path / "off", already_tried_penalty=0.0)
    sid, _, second = _two_turns(off)
    assert second.answer_id.startswith("grounds")  # the failure: told to check what was just checked
    manager = _world(tmp_path / "on")
    sid, first, second = _two_turns(manager)
    assert not first.trace["steps"][-1]["already_tried"]  # nothing was said about the grounds yet
    assert second.kind == "answer" and not second.answer_id.startswith("grounds")
    record = manager.session(sid)
    assert any(t["verb_class"] == CHECKED and "ground" in t["objects"] for t in record.tried)
    why = second.trace["steps"][-1]["already_tried"]
    assert why and all(k.startswith("grounds") for k in why)
    assert "you already checked the grounds" in next(iter(why.values()))
    assert "you already checked the grounds" in format_trace(second.trace)
    # the memory outlives the turn: a reply that does not say it again still keeps the grounds answers down
    third = manager.handle(session_id=sid, text="that didn't help, the grounds and dash lights flicker in the cold")
    assert third.kind == "answer" and not third.answer_id.startswith("grounds")
    step = third.trace["steps"][-1]
    scores = {c["id"]: c["score"] for c in step["candidates"]}
    # without the demotion a grounds answer would have been delivered
    assert max(scores[i] / 0.5 for i in step["already_tried"] if i in scores) > scores[third.answer_id]


def test_the_question_itself_reports_what_was_done(tmp_path):
    manager = _world(tmp_path)
    sid = manager.start_session()
    result = manager.handle(session_id=sid, text="I checked the grounds but my car still struggles to start in "
                                                 "the cold morning and the dash lights flicker.")
    assert result.trace["steps"][0]["tried"][0]["text"] == "checked the grounds"
    assert result.trace["steps"][0]["already_tried"]


def test_a_new_question_forgets_what_was_tried(tmp_path):
    manager = _world(tmp_path)
    sid, _, _ = _two_turns(manager)
    manager.handle(session_id=sid, text="new question: my dash lights flicker in the cold")
    assert manager.session(sid).tried == []


def test_old_session_records_without_tried_still_load():
    data = SessionRecord(id="abc").to_dict()
    data.pop("tried")
    assert SessionRecord.from_dict(data).tried == []
    assert tried_from_dicts([{"verb_class": "replaced"}, "junk", {"verb_class": "checked", "objects": ["fuse"],
                                                                  "text": "checked the fuses"}]) == [
        TriedAction(CHECKED, frozenset({"fuse"}), "checked the fuses")]


def test_the_penalty_is_a_validated_setting():
    from dtdialog.setup.engine_config import DemotionConfig, EngineConfig
    from parsers.errors import ConfigError

    assert EngineConfig().demotions.already_tried_penalty == 0.5
    with pytest.raises(ConfigError):
        DemotionConfig(already_tried_penalty=1.5)


def test_tried_that_remembers_the_rejected_answers_recommendation(tmp_path):
    manager = _world(tmp_path, max_failures=5)
    sid = manager.start_session()
    first = manager.handle(session_id=sid, text=QUESTION)
    second = manager.handle(session_id=sid, text="already tried that")
    record = manager.session(sid)
    remembered = [t for t in record.tried if t["text"].startswith("tried ")]
    assert remembered and "remembered as already tried" in " ".join(second.trace["notes"])
    rec_terms = set(remembered[0]["objects"])
    first_terms = NORMALIZER.terms_of_text(text_of_answer(first.answer_id))
    assert rec_terms <= first_terms  # it is the rejected answer's own recommendation
    # "no" carries no such pointer: nothing is remembered from it
    other = _world(tmp_path / "other", max_failures=5)
    sid2 = other.start_session()
    other.handle(session_id=sid2, text=QUESTION)
    other.handle(session_id=sid2, text="no")
    assert other.session(sid2).tried == []


def test_tried_that_with_a_report_keeps_the_report(tmp_path):
    manager = _world(tmp_path, max_failures=5)
    sid = manager.start_session()
    manager.handle(session_id=sid, text=QUESTION)
    result = manager.handle(session_id=sid, text="tried that, replaced the alternator belt yesterday")
    tried = manager.session(sid).tried
    assert any(t["verb_class"] == REPLACED and "belt" in t["objects"] for t in tried)
    step = result.trace["steps"][-1]
    assert "belt#1" in {c["id"] for c in step["candidates"]}  # retrieved for the reply's words
    assert "replaced the alternator belt" in step["already_tried"]["belt#1"] and result.answer_id != "belt#1"


def text_of_answer(answer_id: str) -> str:
    return ANSWERS[answer_id]


def test_the_reason_says_already_once():
    """'I replaced the thermostat already' was explained as 'you already replaced the thermostat already'."""
    action = next(a for a in reported_in_clause("I replaced the thermostat already", NORMALIZER))
    assert action.explain() == "you already replaced the thermostat"
    assert TriedAction("checked", frozenset({"fuse"}), "checked the fuses").explain() == "you already checked the fuses"


@pytest.mark.parametrize(("text", "told"), [
    ("Steering wheel shakes at 60 mph. Had the tires balanced twice.", True),
    ("got my car scanned at AutoZone and it said P0300", True),
    ("I had it diagnosed at the dealer", True),
    ("I got the codes read for free", True),
    ("I already did that", True),
    ("I got a used car and it shakes", False),
    ("I've had the car for two years", False),
    ("My car had a weird noise when I started it", False),
    ("I have a 2012 Civic that overheated yesterday", False),
    # found by trying the chat: "swapped it but still smells" was asked what had been checked or replaced
    ("found the cabin filter, it was filthy. swapped it but still smells", True),
    ("topped it off last week", True),
    ("I looked at it and it seems fine", False),
    ("the noise changed when it warmed up", False),
])
def test_work_told_with_the_causative_says_what_was_done(text, told):
    assert says_work_done(text) is told


def test_a_new_part_is_quoted_as_the_part_alone():
    # found by trying the chat: "new brake pads squeal every time I stop" was told back as "you already did: fitted a
    # new brake pads squeal every time", and the squeal and the time were read as parts fitted
    for text, quoted, objects in [
        ("new brake pads squeal every time", "fitted new brake pads", {"brake", "pad", "brake pad"}),
        ("the new battery dies overnight", "fitted a new battery", {"batteri"}),
        ("a new starter makes the same click", "fitted a new starter", {"starter"}),
        ("new gas cap and still the light", "fitted a new gas cap", None),
    ]:
        (action,) = reported_in_clause(text, NORMALIZER)
        assert action.verb_class == REPLACED and action.text == quoted, text
        assert objects is None or action.objects == objects, text


def test_it_in_a_report_is_the_part_the_opening_is_about():
    # found by trying the chat: "my battery is dead every morning" then "I had it tested at the parts store and it is
    # fine" read a test of the parts store, so the options still held "have the battery load-tested"
    from dtdialog.understanding.tried import subject_objects
    from parsers.base import get_parser

    rules = get_parser("rules")
    subject = subject_objects(rules.parse("my battery is dead every morning, it is only a year old"), NORMALIZER)
    assert subject == {"batteri"}
    reply = rules.parse("I had it tested at the parts store and it is fine")
    read = {(a.verb_class, a.objects) for a in extract_tried(reply, NORMALIZER, antecedent=subject)}
    assert read == {(CHECKED, subject), (RULED_OUT, subject)}
    # with no part named before the opening's verb, "it" stays unread, as before
    assert subject_objects(rules.parse("my car won't start, it just clicks"), NORMALIZER) == frozenset()
    assert subject_objects(rules.parse("my brakes squeal when I stop"), NORMALIZER) == {"brake"}
