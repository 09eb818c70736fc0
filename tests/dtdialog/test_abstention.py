"""Calibrated confidence and abstention end to end: through ``DialogueManager``, ``dtdialog chat`` and the API.

The failure reproduced: every question got a confident answer, even when the index held nothing about it.
With the shipped calibrator the engine reports how sure it is and, below ``abstain_below``, asks for the
missing detail and then hands off instead of answering.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from engine_helpers import (
    ANSWERS,
    BRAKE_Q,
    CONSTRAINT_Q,
    PAPER_C1,
    PAPER_Q,
    TableParser,
    make_index,
    text_of,
)

from dtdialog.dialogue.abstain import GOAL, TOLD, TRIED
from dtdialog.dialogue.manager import ABSTAIN, ANSWER, CLARIFY, HANDOFF, DialogueManager
from dtdialog.dialogue.replies import Replies
from dtdialog.dialogue.session import AWAITING_CHOICE, AWAITING_DETAIL, HANDED_OFF
from dtdialog.dialogue.session_store import SessionStore
from dtdialog.selection.abstention import CONTEXT, NAMED, PART, SYMPTOM, missing_detail
from dtdialog.selection.confidence import load_calibrator
from dtdialog.selection.selector import AnswerSelector
from dtdialog.setup.engine_config import EngineConfig
from parsers.tree import EDU


def _world(tmp_path: Path, answers: dict, **config) -> DialogueManager:
    parser = TableParser([PAPER_Q, PAPER_C1, BRAKE_Q, CONSTRAINT_Q])
    cfg = EngineConfig.from_dict(config)
    selector = AnswerSelector(index=make_index(tmp_path / "answers.sqlite", answers), parser=parser, config=cfg)
    return DialogueManager(selector=selector, store=SessionStore(tmp_path / "sessions.sqlite"), config=cfg,
                           calibrator=load_calibrator("rules"))


def test_answer_turns_carry_a_confidence_in_0_1(tmp_path):
    manager = _world(tmp_path, ANSWERS, abstain_below=0.0)
    sid = manager.start_session()
    result = manager.handle(session_id=sid, text=text_of(PAPER_Q))
    assert result.kind == ANSWER
    assert result.confidence is not None and 0.0 <= result.confidence <= 1.0
    assert result.trace["decision"]["confidence"] == result.confidence
    assert result.to_dict()["confidence"] == result.confidence


def test_an_unsure_step_asks_for_a_detail_offers_a_person_then_hands_off_with_the_transcript(tmp_path):
    # abstain_below=1 makes every ranked answer "too unsure": the mechanism, independent of today's calibrator
    manager = _world(tmp_path, ANSWERS, abstain_below=1.0, options_when_unsure=False)
    sid = manager.start_session()
    first = manager.handle(session_id=sid, text=text_of(BRAKE_Q))
    assert first.kind == ABSTAIN, first.reply
    assert first.answer_id is None and first.state == AWAITING_DETAIL
    assert 0.0 <= first.confidence < 1.0
    # the question says what was replaced, when it happens and what is heard: nothing generic is asked, a person is
    # offered and any detail not mentioned invited
    assert first.trace["decision"]["missing_detail"] == TOLD and first.reply == Replies().abstain_told
    assert "human" in first.reply
    second = manager.handle(session_id=sid, text="It happens every morning when I back out of the garage")
    assert second.kind == HANDOFF and second.state == HANDED_OFF
    transcript = second.trace["decision"]["transcript"]
    assert transcript[0]["text"] == text_of(BRAKE_Q) and any(m["text"] == first.reply for m in transcript)


def test_when_still_unsure_the_closest_answers_are_offered_before_the_hand_off(tmp_path):
    """Before: the second unsure step handed off, though the right answer was often among the closest ones. Now the
    customer picks among them, gets the one picked, and a "none of these" hands off with a true reason."""
    manager = _world(tmp_path, ANSWERS, abstain_below=1.0)
    sid = manager.start_session()
    assert manager.handle(session_id=sid, text=text_of(BRAKE_Q)).kind == ABSTAIN
    offer = manager.handle(session_id=sid, text="It happens every morning when I back out of the garage")
    assert offer.kind == CLARIFY and offer.state == AWAITING_CHOICE, offer.reply
    assert offer.reply.startswith(Replies.unsure_options) and 2 <= len(offer.options) <= 3
    assert offer.trace["decision"]["offered_because"] == "unsure"
    assert "closest answers are offered" in " ".join(offer.trace["notes"])
    picked = manager.handle(session_id=sid, text="1")
    assert picked.kind == ANSWER and picked.answer_id == offer.options[0].answer_id

    sid = manager.start_session()
    manager.handle(session_id=sid, text=text_of(BRAKE_Q))
    manager.handle(session_id=sid, text="It happens every morning when I back out of the garage")
    none = manager.handle(session_id=sid, text="none of these")
    assert none.kind == HANDOFF and Replies.handoff_none_fit in none.reply


def test_without_a_calibrator_the_engine_never_abstains(tmp_path):
    without_brakes = {k: v for k, v in ANSWERS.items() if not k.startswith("brakes")}
    manager = _world(tmp_path, without_brakes)
    manager.calibrator = None
    result = manager.handle(session_id=manager.start_session(), text=text_of(BRAKE_Q))
    assert result.kind != ABSTAIN and result.confidence is None


class _Terms:
    @staticmethod
    def terms_of_text(text: str) -> frozenset[str]:
        return frozenset(w.strip(".,").lower() for w in text.split() if len(w) > 2)


def _edu(text, lemmas, entities):
    return EDU(index=0, text=text, start=0, end=len(text), sentence=0, lemmas=tuple(lemmas), entities=tuple(entities))


def test_missing_detail_is_derived_from_the_question_and_the_offered_answers():
    known = {"brakes", "squeal", "battery"}
    # a thing the answers never mention -> in other words: never "which part?" of a customer who just named one
    assert missing_detail([_edu("my flux capacitor hums", ["flux", "capacitor", "hum"], ["my flux capacitor"])],
                          answer_terms=known, normalizer=_Terms) == NAMED
    # no thing named at all -> which part or system
    assert missing_detail([_edu("it is", ["it", "be"], [])], answer_terms=known, normalizer=_Terms) == PART
    # a known part and nothing about what it does -> what happens
    assert missing_detail([_edu("the brakes", ["brakes"], ["the brakes"])], answer_terms=known,
                          normalizer=_Terms) == SYMPTOM
    # both there -> when, and what was tried
    assert missing_detail([_edu("the brakes squeal", ["brakes", "squeal"], ["the brakes"])], answer_terms=known,
                          normalizer=_Terms) == CONTEXT


def test_a_guidance_request_is_told_apart_from_a_problem_report():
    """Real openings of the shared sets (mechanics titles, Reddit posts, Twitter first turns)."""
    from dtdialog.understanding.requests import asks_for_guidance

    asking = ["How do I test my car battery?", "Is it necessary to replace an oil filter every oil change?",
              "Is idling bad for your engine?", "How to measure transmission fluid levels?",
              "Do I need to take special care of my new motorcycle in this particular scenario?",
              "how can I annotate my screen from iPhone?", "Is there a way to see which ad worked best?"]
    reporting = ["My car won't start, how do I check the fuel pump?", "How do I stop the squeal from my brakes?",
                 "Can I drive a car with only water and no coolant if it has a leak?", "My brakes squeal.",
                 "The AC is not cold anymore, should I recharge it?", "What causes brakes to pulsate after new pads?",
                 "How can I fix this error on my account?",
                 # found by trying the chat: a state of a part ("soft", "sinks") reports the problem the check is for
                 "My brake pedal feels soft and sinks a bit, what should I check?",
                 "One of my front brake calipers is sticky, should I also put in a new rotor?",
                 "What do I use to lubricate my door hinges? They are creaking when I open them."]
    assert [t for t in asking if not asks_for_guidance(t)] == []
    assert [t for t in reporting if asks_for_guidance(t)] == []


@pytest.mark.slow
@pytest.mark.parametrize(("messages", "asked"), [
    # found by trying the chat: both were asked "When does it happen, and what have you already checked or replaced?"
    (["Should I use synthetic oil in my 2005 Corolla with 180k miles?"], GOAL),
    (["Is it necessary to replace the oil filter every oil change?"], GOAL),
    # a reported problem keeps the context question, in the opening or in a later reply
    (["My brakes squeal when I stop, how do I fix it?"], None),
    (["My brake pedal feels soft and sinks a bit, what should I check?"], None),
])
def test_a_request_for_guidance_is_asked_what_the_customer_is_planning(builtin_manager, messages, asked):
    session = builtin_manager.start_session()
    for text in messages:
        result = builtin_manager.handle(session_id=session, text=text)
    assert result.kind == ABSTAIN, (result.kind, result.reply[:80])
    detail = result.trace["decision"]["missing_detail"]
    assert (detail == GOAL) == (asked == GOAL), detail
    if asked == GOAL:
        assert "planning" in result.reply and "When does it happen" not in result.reply, result.reply
        assert "which car" not in result.reply.lower()  # the Corolla was named: never ask for it


@pytest.fixture
def corpus_without_brakes(tmp_path):
    from data.builtin import builtin_corpus_dir

    out = tmp_path / "corpus"
    out.mkdir()
    for path in Path(builtin_corpus_dir()).glob("*.jsonl"):
        if path.name != "brakes.jsonl":
            shutil.copy(path, out / path.name)
    return out


@pytest.mark.slow
def test_chat_abstains_on_a_brake_question_when_no_brake_answer_is_indexed(corpus_without_brakes, tmp_path, capsys,
                                                                           monkeypatch):
    import dtdialog.understanding.scope
    from dtdialog.cli import main

    monkeypatch.setenv("DTDIALOG_RANKER", "rules")
    # the calibrator's path alone: with no brake answer indexed, the out-of-scope gate (learned from this index)
    # would refuse the brake question before ranking (test below), and nothing would be left to abstain on
    monkeypatch.setattr(dtdialog.understanding.scope.ScopeGate, "check", lambda self, text, **_: dtdialog.understanding.scope.ScopeVerdict(None))
    script = tmp_path / "script.txt"
    script.write_text("My brakes squeal loudly every time I stop at a light, and the pedal feels soft.\n"
                      "It started after the pads were replaced last week.\n", encoding="utf-8")
    traces = tmp_path / "traces.jsonl"
    code = main(["chat", "--script", str(script), "--corpus", str(corpus_without_brakes), "--format", "jsonl",
                 "--index", str(tmp_path / "answers.sqlite"), "--sessions", str(tmp_path / "s.sqlite"),
                 "--trace-json", str(traces), "--explain", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    decisions = [json.loads(line)["decision"] for line in traces.read_text().splitlines()]
    assert decisions[0]["kind"] == ABSTAIN, out
    assert decisions[0]["confidence"] < EngineConfig().abstention.abstain_below
    assert "confidence" in out and "I'm not sure" in out and "human" in out
    # the added detail does not turn the missing answer into a confident wrong one
    assert decisions[1]["kind"] != ANSWER, out


@pytest.mark.slow
def test_the_scope_gate_refuses_a_question_about_what_the_index_does_not_cover(corpus_without_brakes, tmp_path,
                                                                              monkeypatch):
    """The gate learns its domain from the index: without any brake answer, a brake question is off-domain."""
    from dtdialog.cli import main

    monkeypatch.setenv("DTDIALOG_RANKER", "rules")
    script = tmp_path / "script.txt"
    script.write_text("My brakes squeal loudly every time I stop at a light, and the pedal feels soft.\n", encoding="utf-8")
    traces = tmp_path / "traces.jsonl"
    assert main(["chat", "--script", str(script), "--corpus", str(corpus_without_brakes), "--format", "jsonl",
                 "--index", str(tmp_path / "answers.sqlite"), "--sessions", str(tmp_path / "s.sqlite"),
                 "--trace-json", str(traces), "--quiet"]) == 0
    decision = json.loads(traces.read_text().splitlines()[0])["decision"]
    assert decision["kind"] == "out_of_scope" and decision["reason"] == "domain"


@pytest.mark.slow
def test_a_leading_answer_that_needs_an_unreported_light_makes_the_lights_the_question(builtin_manager):
    """Found by trying the chat: "it just clicks once" was asked what had been tried, while the two leading answers
    (a single click with bright dash lights; rapid clicking with dim lights) wait only on what the lights do."""
    result = builtin_manager.handle(session_id=builtin_manager.start_session(),
                                    text="My car won't start, it just clicks once when I turn the key.")
    assert result.kind == ABSTAIN, result.reply[:80]
    assert result.trace["decision"]["missing_detail"] == "light"
    assert "dash lights stay bright or go dim" in result.reply


@pytest.mark.slow
@pytest.mark.parametrize(("opening", "reply"), [
    # "I already did that, the fan runs": the advice it points at ("see whether the fan starts spinning") names no
    # action the tried reader knows, so nothing was remembered, yet the customer had said what they did
    ("My car overheats in traffic but is fine on the highway.", "I already did that, the fan runs"),
    # a shop job told with the causative: balancing is no action the tried reader demotes by, yet it was said
    ("Steering wheel shakes at 60 mph. Had the tires balanced twice.", "no, that didn't help"),
])
def test_a_customer_who_said_what_was_done_is_never_asked_it(builtin_manager, opening, reply):
    """Found by trying the chat: both were answered "What have you already checked or replaced?"."""
    session = builtin_manager.start_session()
    first = builtin_manager.handle(session_id=session, text=opening)
    assert first.kind == ANSWER, first.reply[:80]
    result = builtin_manager.handle(session_id=session, text=reply)
    assert result.kind == ABSTAIN, result.reply[:80]
    assert result.trace["decision"]["missing_detail"] not in (TRIED, "context"), result.reply
    assert "checked or replaced" not in result.reply


@pytest.mark.slow
def test_a_reply_that_reports_the_check_gets_the_next_step(builtin_manager):
    """Q, A1, C1, A2 as the paper has it: a reply that says what the check found, though the symptom is "still
    there", is C1 and gets the answer written for it, not the next-best answer to the opening."""
    session = builtin_manager.start_session()
    first = builtin_manager.handle(session_id=session,
                                   text="engine ticks at idle and gets faster when i rev. im overdue for an oil change")
    assert first.kind == ANSWER and "dipstick" in first.reply, first.reply[:80]
    second = builtin_manager.handle(
        session_id=session, text="checked it, was a quart low, topped up, ticking is a bit quieter but still there")
    assert second.kind == ANSWER, second.reply[:80]
    assert second.reply.startswith("Change the oil and filter")


@pytest.mark.slow
def test_a_constraint_that_leaves_one_of_the_last_options_asks_about_it(builtin_manager):
    """Found by trying the chat: under three last-resort options for a single click, "i dont have a multimeter or any
    tools" ruled two out and the third, "Then start with fuel pressure ... Connect a fuel pressure gauge", was
    delivered as if picked: an answer the customer never chose, past the confidence rule."""
    session = builtin_manager.start_session()
    builtin_manager.handle(session_id=session, text="my car wont start, just clicks once when i turn the key")
    offered = builtin_manager.handle(session_id=session, text="dash lights stay bright")
    assert offered.kind == CLARIFY, offered.reply[:80]
    result = builtin_manager.handle(session_id=session, text="i dont have a multimeter or any tools")
    assert result.kind == CLARIFY and not result.answer_id, result.reply[:120]
    assert len([o for o in result.options if o.answer_id]) == 1 and "only this one is left" in result.reply


@pytest.mark.slow
def test_a_long_message_gets_no_question_that_makes_the_customer_repeat_it(builtin_manager):
    """Read by hand on 60 held-out forum posts: the generic follow-up question fitted 16; the rest asked for what the
    post had said ("What have you already checked?" of a post listing its checks) or did not fit it ("When does it
    happen?" of a how-to)."""
    text = ("The driver's window on my 2011 Ford Focus goes down fine but comes back up very slowly and sometimes "
            "stops halfway, so I have to help it by pulling on the glass. It started a few weeks ago when the weather "
            "turned cold. The switch on the passenger side does the same thing, so I do not think it is the switch. "
            "It is a daily driver and I park it outside, and I would rather not leave it open overnight.")
    result = builtin_manager.handle(session_id=builtin_manager.start_session(), text=text)
    assert result.kind == ABSTAIN, result.reply[:80]
    assert result.trace["decision"]["missing_detail"] == TOLD
    assert "repeat" in result.reply and "human" in result.reply
    assert not any(q in result.reply for q in ("When does it happen", "checked or replaced", "What else do you"))


@pytest.mark.slow
def test_a_customer_who_said_when_what_they_tried_and_what_they_notice_is_asked_nothing_generic(builtin_manager):
    """Found by trying the chat: "a grinding noise when I brake ... I replaced the front pads" was asked "What else do
    you notice when it happens - a noise, a smell, a warning light - ...?". With when, what was tried and the kind of
    evidence all said, the what-else question asks them again: nothing generic is asked."""
    import dataclasses

    text = ("My 2012 Honda Accord makes a grinding noise when I brake, especially at low speed. I replaced the front "
            "pads two months ago.")
    # the logged opening it nearly repeats (a grind after a brake job) lifts the answer; without it the bot is unsure
    assert builtin_manager.handle(session_id=builtin_manager.start_session(), text=text).kind == ANSWER
    base = builtin_manager.config
    off = dataclasses.replace(base, abstention=dataclasses.replace(base.abstention, logged_opening_at=1.0))
    try:
        builtin_manager.config = builtin_manager.selector.config = off
        result = builtin_manager.handle(session_id=builtin_manager.start_session(), text=text)
    finally:
        builtin_manager.config = builtin_manager.selector.config = base
    assert result.kind == ABSTAIN, result.reply[:80]
    assert result.trace["decision"]["missing_detail"] == TOLD, result.reply
    assert "What else do you notice" not in result.reply and "human" in result.reply


@pytest.mark.slow
def test_a_customer_who_told_a_lot_is_still_asked_for_evidence_a_leading_answer_needs(builtin_manager, monkeypatch):
    monkeypatch.setattr(builtin_manager.config.abstention, "told_words", 5)
    result = builtin_manager.handle(session_id=builtin_manager.start_session(),
                                    text="My car won't start, it just clicks once when I turn the key.")
    assert result.kind == ABSTAIN and result.trace["decision"]["missing_detail"] == "light"


@pytest.mark.slow
@pytest.mark.parametrize(("text", "detail", "asked"), [
    ("my car is making a weird noise", "describe_noise+when", "What does it sound like"),
    ("my car makes a noise when I turn", "describe_noise", "What does it sound like"),
    ("there's a strange smell in my car", "describe_smell+when", "What does it smell like"),
    # found by trying the chat: asked "Which light or message is it" of a customer who had said which
    ("The check engine light is on.", "describe_named_light+when", "Does it stay on, or does it flash?"),
])
def test_a_customer_who_named_the_kind_of_symptom_is_asked_what_it_is_like(builtin_manager, text, detail, asked):
    """Found by trying the chat: "my car is making a weird noise" was asked "What exactly happens - a noise, a warning
    light, it won't start, a leak?"."""
    result = builtin_manager.handle(session_id=builtin_manager.start_session(), text=text)
    assert result.kind == ABSTAIN and result.trace["decision"]["missing_detail"] == detail, result.reply
    assert asked in result.reply and "a warning light, it won't start" not in result.reply
    assert ("when does it happen" in result.reply) == detail.endswith("+when")


@pytest.mark.slow
def test_a_vague_opening_that_names_its_kind_is_asked_what_it_is_like(builtin_manager):
    result = builtin_manager.handle(session_id=builtin_manager.start_session(), text="my car shakes")
    assert result.kind == "ask_detail" and "Where do you feel it" in result.reply
    assert "a noise, a warning light" not in result.reply


def test_the_named_kind_is_read_from_bare_words_and_the_question_asks_about_it():
    from dtdialog.dialogue.abstain import named_kind

    assert named_kind(["My car is making a weird noise"]) == "noise"
    assert named_kind(["the steering wheel shakes at 60"]) == "vibration"
    assert named_kind(["it squeals when I brake"]) is None  # a described noise: nothing left to ask about its kind
    from dtdialog.dialogue.abstain import names_which_light
    from dtdialog.understanding.entities import EntityNormalizer

    vocabulary = EntityNormalizer()
    assert names_which_light(["The check engine light is on."], vocabulary)
    assert names_which_light(["the oil light flickers at idle"], vocabulary)
    assert not names_which_light(["a warning light came on"], vocabulary)
    assert not names_which_light(["my dash lights go dim"], vocabulary)
    replies = Replies()
    assert replies.describe_question("describe_named_light") == replies.abstain_describe_named_light
    assert replies.describe_question("describe_light") == replies.abstain_describe_light
    assert replies.describe_question("describe_light+when").endswith(replies.abstain_describe_when)
    assert replies.abstain_describe_light in replies.abstain_text("describe_light")


@pytest.mark.slow
def test_the_bots_own_question_is_asked_again_once_and_its_answer_then_follows(builtin_manager, monkeypatch):
    """Found by trying the chat: "it's the front left I think" to "Can you feel play in the link?" got the answer
    written for "The left sway bar link has obvious play". The question is asked once more, not a third time however
    many unsure steps the settings allow, and "yes" to it gets the logged next answer."""
    monkeypatch.setattr(builtin_manager.config.dialogue, "max_failures", 5)
    opening = "There's a clunk from the front end when I go over speed bumps"
    for replies, last in ((["it's the front left I think", "yes, the link has some play"], "answer"),
                          (["it's the front left I think", "not sure"], None)):
        session = builtin_manager.start_session()
        assert builtin_manager.handle(session_id=session, text=opening).kind == ANSWER
        again = builtin_manager.handle(session_id=session, text=replies[0])
        assert again.kind == ABSTAIN and "Can you feel play in the link?" in again.reply, again.reply
        after = builtin_manager.handle(session_id=session, text=replies[1])
        if last is not None:
            assert after.kind == last and "Replace both sway bar end links" in after.reply, after.reply
        else:
            assert "Can you feel play in the link?" not in after.reply, after.reply


@pytest.fixture(scope="module")
def builtin_manager(builtin_learned_index, tmp_path_factory):
    """Return the dialogue manager ``dtdialog chat`` builds over the built-in corpus (learned ranker); each test
    starts its own session."""
    from dtdialog.setup.assembly import EngineSpec, build_engine

    path, parser = builtin_learned_index
    sessions = tmp_path_factory.mktemp("abstain") / "s.sqlite"
    engine = build_engine(EngineSpec(index_path=str(path), sessions_path=str(sessions)), parser=parser, progress=False)
    yield engine.manager
    engine.close()


def test_an_opening_joined_to_its_detail_is_not_asked_again_for_being_brief(builtin_manager):
    """Found by trying the chat: "my car" was asked for more, "the brakes grind" joined it, and the joined five words
    were asked for a detail again as a brief opening (``abstention.brief_words``): the customer was asked once."""
    session = builtin_manager.start_session()
    assert builtin_manager.handle(session_id=session, text="my car").kind == "ask_detail"
    result = builtin_manager.handle(session_id=session, text="the brakes grind")
    assert not any("a brief opening" in note for note in result.trace["notes"]), result.trace["notes"]
    assert result.kind == ANSWER, result.reply


def test_none_of_these_asks_for_what_is_missing_not_for_what_was_said(builtin_manager):
    """Found by trying the chat: "My brakes squeal when I stop, I already replaced the pads" got two options, and "no,
    that didn't help" got "what exactly happens (the symptom), and which part or system is involved?": both said.
    (It now gets its answer at once; "none of these" to that answer takes the same path as to options.)"""
    session = builtin_manager.start_session()
    shown = builtin_manager.handle(session_id=session, text="My brakes squeal when I stop, I already replaced the pads")
    assert shown.kind == ANSWER, shown.reply[:80]
    result = builtin_manager.handle(session_id=session, text="none of these")
    assert result.kind == "fallback" and result.state == "AWAITING_DETAIL", result.reply
    detail = result.trace["decision"]["missing_detail"]
    assert detail not in ("symptom", "part") and result.reply == builtin_manager.replies.none_fit_text(detail)
    assert "which part" not in result.reply and "what exactly happens" not in result.reply.lower()


def test_the_none_fit_reply_for_each_missing_detail():
    from dtdialog.dialogue.replies import DEFAULT_REPLIES as r

    assert r.none_fit_text("symptom") == r.none_fit_text("part") == r.none_fit_detail
    assert r.none_fit_text("told") == r.none_fit_told and "?" not in r.none_fit_told
    assert r.none_fit_text("when") == r.none_fit_ask.format(question=r.abstain_when)
    assert r.none_fit_text("describe_noise") == r.none_fit_ask.format(question=r.abstain_describe_noise)
    assert r.abstain_text("tried") == r.abstain.format(question=r.detail_question("tried"))


@pytest.mark.slow
def test_the_last_options_after_an_answer_take_up_the_customers_reply(builtin_manager):
    """Found by trying the chat: after the cooling-fan answer, "no the fan doesn't come on at all" and "I checked the
    fuse and it's fine" got three options about sealer, the radiator cap and air in the hose: the question again, not
    the customer. Options that take up nothing the replies added are not offered; with none left, a person."""
    session = builtin_manager.start_session()
    first = builtin_manager.handle(
        session_id=session, text="My car overheats in traffic but is fine on the highway. I topped up the coolant last week.")
    assert first.kind == ANSWER and "fan" in first.reply
    builtin_manager.handle(session_id=session, text="no the fan doesn't come on at all")
    last = builtin_manager.handle(session_id=session, text="I checked the fuse and it's fine")
    notes = " ".join(last.trace["notes"])
    assert "take up nothing the customer's reply added" in notes and "fan" in notes, notes
    assert last.kind == HANDOFF and not last.options, last.reply
    assert builtin_manager.replies.handoff_unsure in last.reply


def test_a_described_noise_counts_as_what_the_customer_notices():
    """"What else do you notice - a noise, ...?" was asked of a customer who had said their brakes squeal: a word of a
    kind of evidence reports it as much as its name does."""
    from dtdialog.dialogue.abstain import reports_evidence

    assert reports_evidence(["My brakes squeal when I stop"]) and reports_evidence(["it squeals all the time"])
    assert reports_evidence(["the brakes grind"]) and reports_evidence(["a weird noise"])
    assert reports_evidence(["the check engine light came on"]) and reports_evidence(["the wheel shakes at 60"])
    assert not reports_evidence(["My car overheats in traffic, I topped up the coolant"])


def test_the_closest_answers_offered_never_go_against_the_customer():
    """Found by trying the chat: "The serpentine belt has almost certainly broken" was offered as one of the closest
    answers to a customer who had said the belt looks fine; an answer a stage demoted for what the customer said is
    no option, and the trace says so."""
    from dtdialog.dialogue.steps import Steps
    from dtdialog.dialogue.trace import TurnTrace
    from dtdialog.selection.agreement import AgreementResult
    from dtdialog.selection.scoring import OBJECTIONS, RankedCandidate
    from index.base import AnswerDocument

    def cand(doc_id: str, **features: float) -> RankedCandidate:
        doc = AnswerDocument(id=doc_id, dialogue_id=doc_id.split("#")[0], position=1, text=doc_id)
        return RankedCandidate(document=doc, retrieval_score=1.0, score=1.0, features=dict(features),
                               agreement=AgreementResult(verdict=True, score=1.0, addressed=1, required=1))

    trace = TurnTrace(session_id="s", turn=1, user_text="the belt looks fine", state_before="AWAITING_DETAIL")
    ranked = [cand("a#1", dense=0.5), *(cand(f"{name}#1", **{name: 1.0}) for name in OBJECTIONS), cand("b#1")]
    assert [d.id for d in Steps.closest(ranked, trace)] == ["a#1", "b#1"]
    assert f"{len(OBJECTIONS)} closest answer(s) go against what the customer said" in " ".join(trace.data["notes"])
    assert [d.id for d in Steps.closest(ranked[:1], trace)] == ["a#1"] and len(trace.data["notes"]) == 1
