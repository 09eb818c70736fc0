"""The customer's "why this answer" on real engine turns: the part of their message the answer takes up, quoted whole in
their own words, and what it leaves out because they already did it; never an id, a score or a ranker feature."""

from __future__ import annotations

import re

from engine_helpers import BRAKE_Q, PAPER_C1, PAPER_Q, car_world, text_of

from dtdialog.dialogue.customer_why import customer_why, needs_history

#: what a customer must never read: an answer id ("nostart#3"), a score ("0.82"), braces, a feature name
AGENT_ONLY = re.compile(r"\S#\d|\d\.\d|[{}\[\]]|_|\bscore\b|\bagreement\b|\branker\b")


def assert_plain(why: str) -> None:
    assert not AGENT_ONLY.search(why), why


def test_the_paper_question_names_the_problem_and_what_was_already_done(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    result = manager.handle(session_id=manager.start_session(), text=text_of(PAPER_Q))
    assert result.kind == "answer"
    why = customer_why(result.trace)
    assert why is not None and why.startswith('This answers "but I still could not start my car"'), why
    tried = [t["text"] for t in result.trace["steps"][0]["tried"]]
    assert {"checked the spark plugs", "replaced the battery"} <= set(tried)
    assert why.endswith("it leaves out what you already did: " + ", ".join(tried) + "."), why
    assert_plain(why)


def test_the_quoted_part_is_whole_clauses_of_the_customer(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    result = manager.handle(session_id=manager.start_session(), text=text_of(BRAKE_Q))
    why = customer_why(result.trace)
    assert why is not None and '"but the brakes still squeal when I stop"' in why, why
    assert why.endswith("what you already did: replaced the brake pads.")
    quoted = re.search(r'"([^"]+)"', why).group(1)
    assert quoted in text_of(BRAKE_Q)  # their own words, a whole clause
    assert_plain(why)


def test_a_followup_says_what_the_customer_just_added(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    sid = manager.start_session()
    manager.handle(session_id=sid, text=text_of(PAPER_Q))
    second = manager.handle(session_id=sid, text=text_of(PAPER_C1))
    assert second.kind == "answer"
    why = customer_why(second.trace)
    assert why is not None and 'now that you said "It did at first but not anymore"' in why, why
    assert "What should I do" not in why  # the customer's question to the bot is not what they told it
    assert "replaced the battery" in why
    assert_plain(why)


def test_no_reason_for_a_reply_that_is_not_an_answer_and_a_picked_option_is_explained_from_history(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=1.0, clarify_ratio=0.0)
    sid = manager.start_session()
    offer = manager.handle(session_id=sid, text=text_of(PAPER_Q))
    assert offer.kind == "clarify" and customer_why(offer.trace) is None
    picked = manager.handle(session_id=sid, text="1")
    assert picked.kind == "answer" and needs_history(picked.trace) and not needs_history(offer.trace)
    assert customer_why(picked.trace) is None  # ranked on the turn that offered it: nothing here to say why
    why = customer_why(picked.trace, history=[offer.trace])
    assert why is not None and '"but I still could not start my car"' in why and "replaced the battery" in why
    assert_plain(why)


def test_an_answer_that_repeats_a_tried_action_does_not_claim_to_leave_it_out(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    trace = manager.handle(session_id=manager.start_session(), text=text_of(PAPER_Q)).trace
    answer_id = trace["decision"]["answer_id"]
    trace["steps"][0]["already_tried"] = {answer_id: "you already replaced the battery"}
    why = customer_why(trace)
    assert why is not None and "leaves out" not in why and "but I still could not start my car" in why


def test_what_was_ruled_out_is_quoted_apart_from_what_was_done(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    trace = manager.handle(session_id=manager.start_session(), text=text_of(BRAKE_Q)).trace
    trace["steps"][0]["tried"].append({"verb_class": "ruled-out", "objects": ["rotor"], "text": "the rotors are fine"})
    why = customer_why(trace)
    assert why is not None and why.endswith(
        'it leaves out what you already did (replaced the brake pads) and what you ruled out ("the rotors are fine").')
    trace["steps"][0]["tried"] = trace["steps"][0]["tried"][-1:]
    assert customer_why(trace).endswith('it leaves out what you ruled out: "the rotors are fine".')


def test_a_long_part_is_quoted_up_to_a_whole_sentence(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    trace = manager.handle(session_id=manager.start_session(), text=text_of(BRAKE_Q)).trace
    long = "The brakes still squeal when I stop at a light. " + "It happens every morning on the way to work. " * 6
    trace["parts"][0]["clauses"] = ["I replaced the brake pads,", long.strip()]
    why = customer_why(trace)
    quoted = re.search(r'"([^"]+)"', why).group(1)
    assert quoted.startswith("The brakes still squeal when I stop at a light. It happens") and quoted.endswith(" …")
    assert quoted.endswith("on the way to work …") and len(quoted) <= 170, quoted  # cut after a sentence


def test_a_blank_tried_report_is_skipped(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    trace = manager.handle(session_id=manager.start_session(), text=text_of(BRAKE_Q)).trace
    trace["steps"][0]["tried"] = [{"verb_class": "checked", "objects": ["pad"], "text": " , "}]
    assert customer_why(trace) == 'This answers "I replaced the brake pads, but the brakes still squeal when I stop".'


def test_a_part_found_fine_that_the_answer_is_about_is_not_said_to_be_left_out(tmp_path):
    """"Transmission slips ... Fluid level is fine." got "Top it up ..." and the why said it left out "fluid level is
    fine": an answer whose main clause is about a part the customer found fine still suspects it."""
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    result = manager.handle(session_id=manager.start_session(),
                            text="My brakes squeal when I stop, and the pads are fine.")
    step = result.trace["steps"][0]
    assert result.kind == "answer" and any(t["verb_class"] == "ruled-out" for t in step["tried"]), step["tried"]
    assert result.answer_id in step["mentions_tried"], (result.answer_id, step["mentions_tried"])
    assert "leaves out" not in customer_why(result.trace)
    step["mentions_tried"] = {}  # without the mark, the same why claims it
    assert "the pads are fine" in customer_why(result.trace)


def test_the_problem_stays_quoted_and_a_report_goes_with_what_is_joined_on_to_it(tmp_path):
    """Found by trying the chat: "oil leaking near the oil filter, I lose about half a quart every couple weeks.
    already changed the filter and made sure its tight" was quoted as "I lose about half a quart every couple weeks.
    and made sure its tight": the problem's clause shares "the filter" with the report and was taken for it, and the
    clause joined on to the report stayed with its "and"."""
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    trace = manager.handle(session_id=manager.start_session(), text=text_of(BRAKE_Q)).trace
    trace["parts"][0]["clauses"] = ["oil leaking near the oil filter,", "I lose about half a quart every couple weeks.",
                                    "already changed the filter", "and made sure its tight"]
    trace["steps"][0]["tried"] = [{"verb_class": "replaced", "objects": ["filter"], "text": "changed the filter"}]
    why = customer_why(trace)
    assert why.startswith('This answers "oil leaking near the oil filter, I lose about half a quart every couple weeks"')
    assert "tight" not in why
