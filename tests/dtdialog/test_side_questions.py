"""Questions about the repair itself, asked mid-dialogue: "is it safe to drive?", "how much would that cost?".

Before: under an answer that said "I would not drive it to work all week", "is it safe to drive?" was read as one more
detail of the problem and got "I'm not sure ... What have you already checked?", and "how much would that cost at a
shop?" got three guesses ("Check the transaxle fluid level and condition first") under a grinding brake.
"""

from __future__ import annotations

import json

import pytest

from dtdialog.cli import main
from dtdialog.dialogue import memory
from dtdialog.dialogue.session import SessionRecord
from dtdialog.understanding import intents
from dtdialog.understanding.side_questions import (
    COST,
    DIFFICULTY,
    DURATION,
    PLACE,
    SAFETY,
    WARRANTY,
    side_question,
    told_in,
)

GRINDING = ("Grinding means the pads are worn through. That greatly reduces braking power. I would not drive it to work "
            "all week; get it repaired as soon as possible.")


def test_what_a_short_question_about_the_repair_asks():
    for text, kind in (("is it safe to drive?", SAFETY), ("Can I still drive it?", SAFETY), ("is it dangerous?", SAFETY),
                       ("is it ok to drive like this", SAFETY), ("how much would that cost at a shop?", COST),
                       ("how much is it to fix?", COST), ("is that expensive?", COST),
                       ("how much to fix a heater core?", COST), ("is that covered by warranty?", WARRANTY),
                       ("how long does the job take?", DURATION), ("where is the fuse box?", PLACE),
                       ("how hard is that job?", DIFFICULTY), ("can I do it myself?", DIFFICULTY),
                       ("is this a DIY job?", DIFFICULTY), ("do I need a mechanic for that?", DIFFICULTY),
                       ("how big a job is that?", DIFFICULTY)):
        assert side_question(text) == kind, text
    for text in ("how much oil should I add?", "how big is the hose?", "the brakes pull and it's not safe to drive anymore, the pedal is soft "
                 "and it squeals", "it is safe now", "where I live it is cold", "my fuse box is melted"):
        assert side_question(text) is None, text


def test_it_is_its_own_intent_even_with_still():
    assert intents.classify("is it still safe to drive?").kind == intents.SIDE_QUESTION
    assert intents.classify("still the same").kind == intents.REJECT


def test_the_sentence_of_an_answer_given_that_tells_it():
    assert told_in(SAFETY, "is it safe to drive?", [GRINDING]) == (
        "I would not drive it to work all week; get it repaired as soon as possible.")
    assert told_in(COST, "how much would that cost?", [GRINDING]) is None
    assert told_in(COST, "how much?", ["Pads cost about $60 an axle.", GRINDING]) == "Pads cost about $60 an axle."
    bulletin = "Some manufacturers have service bulletins that call for a fluid change."
    assert told_in(WARRANTY, "is that covered by warranty?", [GRINDING, bulletin]) == bulletin
    # the time a job takes, not any time an answer names
    drying = "Turn off the AC a few minutes before you reach your destination, so the evaporator dries out."
    assert told_in(DURATION, "how long does that take?", [drying]) is None
    assert told_in(DURATION, "how long?", ["The job takes about two hours on most cars."]) == (
        "The job takes about two hours on most cars.")
    # found by trying the chat: "how hard is that job?" under the housing-gasket answer asked "When does it happen?"
    gasket = ("Then the housing gasket is leaking. On some engines this job requires removing the intake manifold, so "
              "check the procedure first.")
    assert told_in(DIFFICULTY, "how hard is that job?", [gasket]) == (
        "On some engines this job requires removing the intake manifold, so check the procedure first.")
    assert told_in(DIFFICULTY, "can I do it myself?", [GRINDING]) is None
    # a place must be the place of what was asked
    relay = "The fan relay is located in the fuse box under the hood."
    assert told_in(PLACE, "where is the fuse box?", [relay]) == relay
    assert told_in(PLACE, "where is the crank sensor?", [relay]) is None


def test_a_step_mark_puts_the_step_back():
    tried = [{"text": "replaced the relay"}]
    record = SessionRecord(id="s", step=1, step_followups=["the fan spins"], followups=["the fan spins"],
                           context_id="a#1", tried=[dict(t) for t in tried])
    mark = memory.step_mark(record)
    record.followups.append("how long does it take to replace a fan motor?")
    record.step, record.step_followups, record.context_id = 2, ["how long does it take?"], "b#1"
    record.tried.append({"text": "replace a fan motor"})
    memory.back_to(record, mark)
    assert (record.step, record.step_followups, record.followups, record.context_id, record.tried) == (
        1, ["the fan spins"], ["the fan spins"], "a#1", tried)


@pytest.mark.slow
@pytest.mark.dense
def test_a_customer_asks_about_the_repair_under_an_answer(builtin_learned_index, tmp_path, capsys, monkeypatch):
    index, _ = builtin_learned_index
    monkeypatch.setenv("DTDIALOG_RANKER", "learned")
    script = tmp_path / "script.txt"
    script.write_text("\n".join([
        "My 2011 Camry makes a grinding noise from the front when I brake, it started two days ago.",
        "is it safe to drive?", "how much would that cost at a shop?", "no, that didn't help"]) + "\n", encoding="utf-8")
    assert main(["chat", "--script", str(script), "--index", str(index), "--sessions", str(tmp_path / "s.sqlite"),
                 "--quiet", "--json"]) == 0
    turns = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert turns[0]["kind"] == "answer" and "would not drive" in turns[0]["reply"], turns[0]["reply"][:80]
    assert turns[1]["kind"] == "side_answer" and "would not drive" in turns[1]["reply"], turns[1]["reply"]
    assert turns[2]["kind"] == "side_answer" and "prices" in turns[2]["reply"], turns[2]["reply"]
    # the questions left the step where it was: the rejection is of the grinding answer, on its own part
    assert turns[1]["state"] == turns[2]["state"] == "AWAITING_FEEDBACK"
    assert turns[3]["kind"] != "side_answer" and turns[3]["answer_id"] != turns[0]["answer_id"]


def test_a_safety_question_the_answers_do_not_tell_is_not_read_as_about_driving():
    """Found by trying the chat: "is it safe to tap the starter with a hammer?" got "My answers don't say whether it
    is safe to drive like this", and under an answer that said "I would not drive it", that sentence would have been
    its answer: safety asked of something else is told only by a sentence about it, and the untold reply (also the
    one for any side question of no known kind) does not put driving in the customer's mouth."""
    from dtdialog.setup.profile import builtin_profile

    replies = builtin_profile().replies()
    question = "is it safe to tap the starter with a hammer?"
    assert side_question(question) == SAFETY and told_in(SAFETY, question, [GRINDING]) is None
    assert "drive" not in replies.side_untold_text(SAFETY) and "human" in replies.side_untold_text(SAFETY)
    # driving, said or not, is still told by the sentence on driving
    for asked in ("is it safe?", "is it safe to drive on the highway?", "Can I still drive it?"):
        assert told_in(SAFETY, asked, [GRINDING]) == "I would not drive it to work all week; get it repaired as soon as possible."
