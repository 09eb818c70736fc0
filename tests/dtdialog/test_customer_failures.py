"""The failures a customer met (issue 13), replayed end to end with ``dtdialog chat --script --json`` on the
built-in corpus under both rankers: off-topic and contradicting first answers.

The other failures have their own end-to-end tests: gibberish, greetings and other languages
(``test_scope_chat.py``), follow-ups served first (``test_position_chat.py``), advice to redo what the customer
did (``test_tried_paper.py``), clarification in circles (``test_clarify_chat.py``).
"""

from __future__ import annotations

import json

import pytest

from dtdialog.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.dense]


def _chat(index, tmp_path, capsys, monkeypatch, ranker: str, lines: list[str]) -> list[dict]:
    monkeypatch.setenv("DTDIALOG_RANKER", ranker)
    script = tmp_path / "script.txt"
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["chat", "--script", str(script), "--index", str(index), "--sessions", str(tmp_path / "s.sqlite"),
                 "--quiet", "--json"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


@pytest.mark.parametrize("ranker", ["learned", "rules"])
def test_a_squeal_when_stopping_never_gets_the_answer_for_a_squeal_that_stops_when_braking(
        builtin_learned_index, tmp_path, capsys, monkeypatch, ranker):
    """Before: "A squeal that is present while driving and stops when you press the brakes" at 93%."""
    index, _ = builtin_learned_index
    for question in ("My brakes squeal when I stop.", "My brakes squeal every time I come to a stop at a light."):
        [turn] = _chat(index, tmp_path, capsys, monkeypatch, ranker, [question])
        assert turn["answer_id"] != "brakes-001#1", (ranker, question)
        assert "stops when you press the brakes" not in turn["reply"]


@pytest.mark.parametrize("ranker", ["learned", "rules"])
def test_a_problem_the_corpus_does_not_cover_is_not_answered_with_another_fault(
        builtin_learned_index, tmp_path, capsys, monkeypatch, ranker):
    """Before: "My headlight keeps burning out" got an answer about EVAP code P0442. The corpus has no headlight
    dialogue: the bot asks for a detail or hands off; it does not answer."""
    index, _ = builtin_learned_index
    [turn] = _chat(index, tmp_path, capsys, monkeypatch, ranker, [
        "My headlight keeps burning out. I replaced the bulb twice this month and it goes again within a week."])
    assert turn["kind"] in ("abstain", "handoff", "out_of_scope"), turn
    assert "P0442" not in turn["reply"] and "EVAP" not in turn["reply"]


def test_the_first_none_of_these_asks_for_a_detail_before_any_hand_off(
        builtin_learned_index, tmp_path, capsys, monkeypatch, ranker="learned"):
    """Before: options, then "no, that didn't help", then the hand-off at once: the one other candidate was unsure,
    and its abstention counted a second failure for the one reply."""
    index, _ = builtin_learned_index
    opening = ("Hi there, thanks for your help in advance. My 2010 Camry makes a whining noise that rises with engine "
               "speed, and the battery light flickers at night. I replaced the serpentine belt last month. Thanks!")
    turns = _chat(index, tmp_path, capsys, monkeypatch, ranker, [opening, "no, that didn't help"])
    if turns[0]["kind"] != "clarify":
        pytest.skip(f"the {ranker} ranker no longer offers options on this opening")
    assert turns[1]["kind"] != "handoff", turns[1]["reply"]


@pytest.mark.parametrize("ranker", ["learned", "rules"])
def test_the_reply_to_the_bots_question_is_the_first_reply_of_the_step(
        builtin_learned_index, tmp_path, capsys, monkeypatch, ranker):
    """Before: "the fan does not come on at all" demoted "Then the fan motor and its wiring are fine"; the bot asked
    "When does it happen, and what have you already checked?", the customer said "I replaced the fan relay, still
    nothing" (an answer to that, read as a yes to the fan question), and the demoted answer was delivered."""
    index, _ = builtin_learned_index
    turns = _chat(index, tmp_path, capsys, monkeypatch, ranker, [
        "My 2012 Civic overheats in traffic but is fine on the highway. Coolant is full.",
        "I checked and the fan does not come on at all", "I replaced the fan relay, still nothing"])
    assert turns[0]["kind"] == "answer" and "fan come on" in turns[0]["reply"], turns[0]["reply"][:80]
    assert all("the fan motor and its wiring are fine" not in t["reply"] for t in turns[1:])


def test_a_check_the_customer_cannot_do_hands_off_instead_of_guessing_again(
        builtin_learned_index, tmp_path, capsys, monkeypatch, ranker="learned"):
    """Before: after "Can you turn the right front wheel by hand when the car is jacked up?", "I don't have any tools"
    got three guesses at 1% ("First, check that the clutch pedal has some free play")."""
    index, _ = builtin_learned_index
    turns = _chat(index, tmp_path, capsys, monkeypatch, ranker, [
        "My car pulls to the right when I brake. It started last week.", "I already did that",
        "it's a 2015 Ford Focus, the pull is strong and there's a burning smell after driving", "I don't have any tools"])
    needs_a_jack = [k for k, t in enumerate(turns[:-1]) if t["kind"] == "answer" and "jacked up" in t["reply"]]
    assert needs_a_jack == [2], [t["kind"] for t in turns]
    assert turns[-1]["kind"] == "handoff", turns[-1]["reply"]
    assert "can't do or don't have" in turns[-1]["reply"]


def test_the_detail_question_never_asks_when_it_happens_after_in_traffic(
        builtin_learned_index, tmp_path, capsys, monkeypatch, ranker="learned"):
    """Before: "My temperature gauge climbs in traffic ..." was asked "When does it happen?". It now gets the cooling-fan
    answer (the logged opening it repeats lifts the confidence); without that evidence the bot is unsure, and asks."""
    import dtdialog.ranking.logged_questions as logged

    index, _ = builtin_learned_index
    question = ["My temperature gauge climbs in traffic on my 2009 Corolla"]
    [turn] = _chat(index, tmp_path, capsys, monkeypatch, ranker, question)
    assert turn["kind"] == "answer" and "fan" in turn["reply"], turn["reply"][:80]
    monkeypatch.setattr(logged, "logged_questions_for", lambda *a, **k: None)
    [turn] = _chat(index, tmp_path, capsys, monkeypatch, ranker, question)
    assert turn["kind"] == "abstain", turn["reply"][:80]
    assert "When does it happen" not in turn["reply"] and "What have you already" in turn["reply"], turn["reply"]


def test_an_answer_for_another_make_is_never_given(builtin_learned_index, tmp_path, capsys, monkeypatch,
                                                    ranker="learned"):
    """Before: the owner of a 2014 Focus got "Nissan has issued bulletins and software updates for CVT shudder on that
    generation" after saying "I can't afford a new clutch"."""
    index, _ = builtin_learned_index
    turns = _chat(index, tmp_path, capsys, monkeypatch, ranker, [
        "My 2014 Focus automatic shudders when accelerating from a stop. The dealer did a software update already.",
        "is that covered by warranty?", "I can't afford a new clutch"])
    assert turns[1]["kind"] == "side_answer" and "service bulletins" in turns[1]["reply"], turns[1]["reply"]
    assert all("Nissan" not in t["reply"] for t in turns), [t["reply"][:60] for t in turns]


def test_the_same_closest_answers_are_never_offered_twice_in_a_row(builtin_learned_index, tmp_path, capsys,
                                                                    monkeypatch, ranker="learned"):
    """Before: the customer answered the closest answers with a finding ("the drain stopped when I pulled the radio
    fuse") and got the very same list again, word for word."""
    index, _ = builtin_learned_index
    turns = _chat(index, tmp_path, capsys, monkeypatch, ranker, [
        "My battery died twice this week. I replaced it, but the new one died too, although the alternator tested "
        "fine.", "the drain test showed 400 milliamps after the car sat for an hour",
        "I pulled fuses and the drain stopped when I pulled the radio fuse"])
    assert turns[1]["kind"] == "clarify", turns[1]["reply"][:80]
    assert turns[2]["reply"] != turns[1]["reply"]


def test_options_the_customer_passed_over_are_not_offered_again_in_another_order(
        builtin_learned_index, tmp_path, capsys, monkeypatch, ranker="learned"):
    """Before: a customer who answered the closest answers with a finding ("I tested the battery at a parts store and
    it passed") got two of the same three options again, reordered: the word-for-word check let them through."""
    index, _ = builtin_learned_index
    turns = _chat(index, tmp_path, capsys, monkeypatch, ranker, [
        "my headlights are dim and flicker at idle, brighter when I rev. 2008 Silverado", "what should I test first?",
        "I tested the battery at a parts store and it passed"])
    offers = [{o["answer_id"] for o in t["options"] if o["answer_id"]} for t in turns if t["kind"] == "clarify"]
    assert offers, [t["kind"] for t in turns]
    assert all(not (a & b) for a, b in zip(offers, offers[1:])), offers
    assert turns[-1]["kind"] in ("clarify", "handoff"), turns[-1]["kind"]


def test_a_reply_that_names_the_part_is_never_asked_which_part(builtin_learned_index, tmp_path, capsys, monkeypatch,
                                                              ranker="learned"):
    """Before: "the fan doesn't come on at all", under an answer about the cooling fan, was asked "Which part or system
    is it about?": the detail question read the opening ("the car overheats") and not the reply."""
    index, _ = builtin_learned_index
    turns = _chat(index, tmp_path, capsys, monkeypatch, ranker, [
        "the car overheats", "only in traffic, fine on the highway", "the fan doesn't come on at all"])
    assert turns[1]["kind"] == "answer" and "fan" in turns[1]["reply"], turns[1]["kind"]
    assert turns[2]["kind"] == "abstain", turns[2]["kind"]
    assert "Which part or system" not in turns[2]["reply"], turns[2]["reply"]


def test_a_constraint_no_option_breaks_says_so_instead_of_echoing_the_list(builtin_learned_index, tmp_path, capsys,
                                                                          monkeypatch, ranker="learned"):
    """Before: "I don't have a multimeter" while options were on offer got 'Noted: "I don't have a multimeter".' and
    the very same list, which reads as if the bot had not understood."""
    index, _ = builtin_learned_index
    turns = _chat(index, tmp_path, capsys, monkeypatch, ranker, [
        "Battery keeps dying overnight. New battery, alternator tested fine at the shop.",
        "how do I do a parasitic draw test?", "I don't have a multimeter"])
    assert [t["kind"] for t in turns[1:]] == ["clarify", "clarify"], [t["kind"] for t in turns]
    before, after = ({o["answer_id"] for o in t["options"] if o["answer_id"]} for t in turns[1:])
    assert ("None of these needs that" in turns[2]["reply"]) == (before == after), turns[2]["reply"][:120]


def test_the_why_never_says_an_answer_leaves_out_what_it_tells_the_customer_to_do_again(
        builtin_learned_index, tmp_path, capsys, monkeypatch, ranker="learned"):
    """Before: to "I swapped the coil with cylinder 2 and the misfire stayed on cylinder 3", an answer saying "To find
    out which, swap the cylinder 3 coil with the coil from cylinder 1" came with "it leaves out what you already did:
    swapped the coil"; the parser puts that advice in a satellite, where the demotion does not read (reading the
    purpose clause as a satellite was tried and reverted: docs/parsers.md)."""
    index, _ = builtin_learned_index
    turns = _chat(index, tmp_path, capsys, monkeypatch, ranker, [
        "Engine misfires on cylinder 3, code P0303. I swapped the coil with cylinder 2 and the misfire stayed on "
        "cylinder 3.", "the spark plug looks fine", "how do I check the injector?"])
    swaps = [t for t in turns if t["kind"] == "answer" and "swap the cylinder 3 coil" in t["reply"]]
    assert swaps, [t["kind"] for t in turns]
    assert all("swapped the coil" not in (t.get("why") or "") for t in swaps), [t.get("why") for t in swaps]


@pytest.mark.parametrize("ranker", ["learned", "rules"])
def test_a_how_to_question_never_gets_an_answer_that_compares_two_things_it_never_named(
        builtin_learned_index, tmp_path, capsys, monkeypatch, ranker):
    """Before: "How do I check my transmission fluid?" got "Both fluids can be red, but their location helps ...",
    written for a customer who asked whether a red drip was transmission or power steering fluid."""
    index, _ = builtin_learned_index
    [turn] = _chat(index, tmp_path, capsys, monkeypatch, ranker, ["How do I check my transmission fluid?"])
    assert turn.get("answer_id") != "transmission-009#1", ranker
    assert not turn["reply"].startswith("Both fluids")


@pytest.mark.parametrize("ranker", ["learned", "rules"])
def test_a_soft_pedal_never_gets_the_answer_for_a_pedal_gone_soft_after_caliper_work(
        builtin_learned_index, tmp_path, capsys, monkeypatch, ranker):
    """Before: "My brake pedal is spongy and goes almost to the floor." got "A spongy, low pedal after caliper work
    almost always means air is still in the lines" (the comma ended the diagnosed subject, so nothing was read)."""
    index, _ = builtin_learned_index
    [turn] = _chat(index, tmp_path, capsys, monkeypatch, ranker,
                   ["My brake pedal is spongy and goes almost to the floor."])
    assert turn.get("answer_id") != "brakes-004#1", ranker
    assert "caliper work" not in turn["reply"]


@pytest.mark.parametrize("ranker", ["learned", "rules"])
def test_a_shake_when_braking_never_gets_the_answer_for_a_shake_after_new_tires(
        builtin_learned_index, tmp_path, capsys, monkeypatch, ranker):
    """Before: "My car shakes when I brake from highway speed." got "A shake that appears in a narrow speed range and
    starts after new tires is usually an imbalance" ("is usually" was no diagnosis, and its subject was too long)."""
    index, _ = builtin_learned_index
    [turn] = _chat(index, tmp_path, capsys, monkeypatch, ranker, ["My car shakes when I brake from highway speed."])
    assert "after new tires" not in turn["reply"], ranker


def test_one_click_and_bright_lights_never_lead_with_the_answer_for_rapid_clicking_and_dim_lights(
        builtin_learned_index, tmp_path, capsys, monkeypatch, ranker="learned"):
    """Before: the bot asked what had been tried, then, told "The dash lights stay bright.", offered "Rapid clicking
    with dim lights is the classic sign of ..." first. Now it asks what the lights do, and the single-click answer
    leads (answered, or first of the options)."""
    index, _ = builtin_learned_index
    turns = _chat(index, tmp_path, capsys, monkeypatch, ranker, [
        "My car won't start, it just clicks once when I turn the key.", "The dash lights stay bright."])
    assert "bright or go dim" in turns[0]["reply"], turns[0]["reply"]
    second = turns[1]
    shown = [second["answer_id"]] if second["answer_id"] else [o["answer_id"] for o in second["options"]]
    assert shown[0] == "no_start-001#1", second
    assert "no_start-002#1" not in shown


@pytest.mark.parametrize("ranker", ["learned", "rules"])
def test_a_customer_who_gave_a_code_never_gets_the_answer_for_another_code(
        builtin_learned_index, tmp_path, capsys, monkeypatch, ranker):
    """Before: "My check engine light is on, code P0420. What does it mean?" got "... P0442 means a very small leak"."""
    index, _ = builtin_learned_index
    turns = _chat(index, tmp_path, capsys, monkeypatch, ranker,
                  ["My check engine light is on, code P0420. What does it mean?", "no, that didn't help"])
    for turn in turns:
        shown = [turn["reply"], *(o["label"] for o in turn.get("options") or ())]
        assert not any(code in text for text in shown for code in ("P0442", "P0455", "P0300", "P0128")), turn


def test_a_detail_that_leaves_the_same_options_is_not_answered_with_the_same_list(
        builtin_learned_index, tmp_path, capsys, monkeypatch, ranker="learned"):
    """Before: options for a grinding brake, then "it's from the rear I think", then the same options under the same
    "A few different fixes match your description": the detail was taken, the step ranked again, and the very list on
    screen offered as if it were new. Now the bot says the detail does not tell them apart."""
    index, _ = builtin_learned_index
    turns = _chat(index, tmp_path, capsys, monkeypatch, ranker, [
        "My 2012 Honda Accord makes a grinding noise when I brake, especially at low speed. I replaced the front pads "
        "two months ago.", "I already did that, the pads are new", "it's from the rear I think"])
    offer, after = turns[1], turns[2]
    same = [o["answer_id"] for o in after["options"]] == [o["answer_id"] for o in offer["options"]]
    if offer["kind"] != "clarify" or not same:
        pytest.skip(f"the conversation no longer offers one list twice ({offer['kind']}, then {after['kind']})")
    assert after["kind"] == "clarify" and after["state"] == "AWAITING_CHOICE"
    assert after["reply"].split("\n")[0] != offer["reply"].split("\n")[0]
    assert "doesn't tell them apart" in after["reply"]
