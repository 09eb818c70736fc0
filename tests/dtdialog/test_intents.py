"""User-turn intents, input hygiene, and constraint extraction."""

from __future__ import annotations

import pytest

from dtdialog.understanding import intents
from dtdialog.understanding.constraints import AFFORD, CANNOT, LACKS, extract_constraints
from dtdialog.understanding.entities import EntityNormalizer


@pytest.mark.parametrize("text,kind", [
    ("yes", intents.CONCLUDE), ("Thanks!", intents.CONCLUDE), ("that fixed it, thank you", intents.CONCLUDE),
    ("Yes thanks, it works now", intents.CONCLUDE),
    ("no", intents.REJECT), ("that didn't help", intents.REJECT), ("No, it still won't start", intents.REJECT),
    ("I already tried that", intents.REJECT),
    ("new question", intents.RESET), ("Let's start over", intents.RESET),
    ("can I talk to a human?", intents.HANDOFF), ("agent please", intents.HANDOFF),
    ("representative", intents.HANDOFF),
    ("2", intents.CHOICE), ("option 3", intents.CHOICE),
    ("none of these", intents.NONE_OF_THESE), ("neither", intents.NONE_OF_THESE),
    ("I can't remove the engine", intents.CONSTRAINT), ("no special tools", intents.CONSTRAINT),
    ("It did at first but not anymore. What should I do?", intents.FOLLOWUP),
    ("The check engine light never comes on", intents.FOLLOWUP),
    ("thanks but it still stalls", intents.REJECT),
])
def test_classify(text, kind):
    assert intents.classify(text).kind == kind


def test_reject_with_new_detail_has_content():
    assert intents.classify("no, the fuel gauge now reads empty").has_content
    assert not intents.classify("that didn't help").has_content


@pytest.mark.parametrize("text", [
    "checked it, was a quart low, topped up, ticking is a bit quieter but still there",
    "I replaced the PCV valve and it was stuck closed. The smoke is less, but still there at startup.",
    "Opening the door didn't help. They only went off when I disconnected the battery.",
])
def test_a_longer_reply_that_tells_a_result_is_a_followup_not_a_rejection(text):
    """Found by trying the chat: the logged C1 of a ticking engine ("was a quart low, topped up, ticking is quieter but
    still there") was read as "no, that didn't help": the answer was set aside with what it said remembered as tried,
    and its logged next answer ("Change the oil and filter ...") demoted as a repeat. 13 such customer turns of the
    built-in dialogues were read so."""
    assert intents.classify(text).kind == intents.FOLLOWUP
    # the same words with nothing new stay a rejection
    assert intents.classify("I already tried that and it didn't help at all, still the same").kind == intents.REJECT


@pytest.mark.parametrize("raw,clean,problem", [
    ("", "", intents.EMPTY), ("   \t  ", "", intents.EMPTY), ("\x00\x07", "", intents.EMPTY),
    ("my car\x1b[31m won't\x00 start", "my car [31m won't start", None),
    ("x" * 5000, "", intents.TOO_LONG),
])
def test_sanitize(raw, clean, problem):
    assert intents.sanitize(raw, max_chars=4000) == (clean, problem)


def test_the_turn_limit_is_stated_once_and_stays_under_the_parser_ceiling():
    from dtdialog.setup.engine_config import DialogueLimits, EngineConfig
    from parsers.errors import ConfigError
    from parsers.text_input import MAX_CHARS

    limit = intents.MAX_TURN_CHARS
    assert EngineConfig().dialogue.max_input_chars == limit < MAX_CHARS
    assert intents.sanitize("a" * limit, max_chars=limit) == ("a" * limit, None)
    assert intents.sanitize("a" * (limit + 1), max_chars=limit) == ("", intents.TOO_LONG)
    assert DialogueLimits(max_input_chars=MAX_CHARS).max_input_chars == MAX_CHARS
    with pytest.raises(ConfigError, match="max_input_chars"):
        DialogueLimits(max_input_chars=MAX_CHARS + 1)


def test_extract_constraints_kinds_and_words():
    found = extract_constraints("I can't remove the engine and I don't have a scan tool. Also no special tools.")
    assert [(c.kind, c.words) for c in found] == [
        (CANNOT, ("remove", "engine")), (LACKS, ("scan", "tool")), (LACKS, ("special", "tools"))]


def test_what_follows_or_after_a_lack_is_lacked_too_and_a_time_is_no_object():
    """Found by trying the chat: "i dont have a multimeter or any tools" ruled out the meter answers and left one that
    needs a fuel pressure gauge; "I can't afford a rebuild right now" became the words rebuild and right."""
    assert [(c.kind, c.words) for c in extract_constraints("i dont have a multimeter or any tools")] == [
        (LACKS, ("multimeter",)), (LACKS, ("tools",))]
    assert [(c.kind, c.words) for c in extract_constraints("I can't afford a rebuild right now, anything cheaper?")] == [
        (AFFORD, ("rebuild",))]
    # "or" opens another lacked thing only with a determiner; "and" does not carry the lack
    assert [c.words for c in extract_constraints("I don't have a multimeter or I would check it")] == [("multimeter",)]
    assert [c.words for c in extract_constraints("I don't have a multimeter and the car won't start")] == [
        ("multimeter",)]


def test_symptoms_are_not_constraints():
    assert extract_constraints("there is no fuel pressure and no spark") == []


def test_constraint_violation_needs_every_term():
    norm = EntityNormalizer(synonyms={}, use_builtin=False)
    (engine,) = extract_constraints("I cannot remove the engine")
    assert engine.violated_by(norm.terms_of_text("You will have to remove the engine to reach it"), norm)
    assert engine.violated_by(norm.terms_of_text("Removing the engine is the only way"), norm)
    assert not engine.violated_by(norm.terms_of_text("Remove the air filter housing"), norm)


def test_a_part_the_customer_cannot_afford_rules_out_buying_it_not_every_mention():
    """Before: "I can't afford a new clutch" became the words afford, new, clutch, which no answer says together."""
    norm = EntityNormalizer(synonyms={}, use_builtin=False)
    found = [extract_constraints(t) for t in ("I can't afford a new clutch", "I don't want to spend money on a clutch",
                                              "we cannot afford to replace the clutch")]
    assert all([(c.kind, c.words) for c in f] == [(AFFORD, ("clutch",))] for f in found), found
    clutch = found[0][0]
    for buys in ("Replace the clutch with a new kit.", "At that point the clutch needs replacing.",
                 "Buy a clutch kit with the flywheel."):
        assert clutch.violated_by(norm.terms_of_text(buys), norm), buys
    for spares in ("Adjust the clutch cable free play first.", "A new battery will not fix this.",
                   "Bleed the clutch hydraulics."):
        assert not clutch.violated_by(norm.terms_of_text(spares), norm), spares
    assert extract_constraints("I can't afford it") == []  # names nothing to rule out


def test_no_tools_at_all_rules_out_an_answer_that_needs_any_hand_equipment():
    """Before: "I don't have any tools" after "Can you turn the wheel by hand when the car is jacked up?" left that
    answer standing: only an answer saying "tools" broke the constraint."""
    norm = EntityNormalizer(synonyms={}, use_builtin=False)
    (none,) = extract_constraints("i don't have any tools")
    for needs in ("Can you turn the right front wheel by hand when the car is jacked up?",
                  "Put a multimeter across the battery posts.", "Loosen the bolt with a wrench."):
        assert none.violated_by(norm.terms_of_text(needs), norm), needs
    for free in ("Check the temperature gauge while it idles.", "Replace the bulb in its socket.",
                 "Have a shop check the calipers."):
        assert not none.violated_by(norm.terms_of_text(free), norm), free
    (scan,) = extract_constraints("i don't have a scan tool")  # a named tool still needs its own words
    assert not scan.violated_by(norm.terms_of_text("Loosen the bolt with a wrench."), norm)


def test_no_meter_rules_out_every_electrical_reading():
    """Found by trying the chat: "I don't have a multimeter" after "Check the voltage across the battery terminals with
    the engine running" left that answer standing (it never says "multimeter"), and the bot asked what had been
    tried."""
    norm = EntityNormalizer(synonyms={}, use_builtin=False)
    for said in ("I don't have a multimeter", "i have no voltmeter", "without a meter"):
        (meter,) = extract_constraints(said)
        for needs in ("Check the voltage across the battery terminals with the engine running. What does it read?",
                      "It should read about 12.6 volts after sitting overnight.", "Measure the resistance of the coil."):
            assert meter.violated_by(norm.terms_of_text(needs), norm), (said, needs)
        for free in ("Replace the drive belt if it is cracked.", "Have a parts store test the alternator."):
            assert not meter.violated_by(norm.terms_of_text(free), norm), (said, free)


def test_only_thanks_a_goodbye_or_a_fix_closes_under_options():
    for text in ("thanks", "ok thanks", "bye", "cheers", "that fixed it"):
        assert intents.closes(text), text
    # a word that only holds a goodbye's letters ("empty" holds "ty") closes nothing
    for text in ("ok", "yes", "yes, it's empty", "sure", "okay party"):
        assert not intents.closes(text), text


def test_asking_for_another_suggestion_turns_the_answer_down():
    """Before: "what else should I check?" under an answer got "Tell me what happened when you tried that"."""
    for text in ("what else should I check?", "what else could it be?", "any other ideas?", "ok what now"):
        intent = intents.classify(text)
        assert intent.kind == intents.REJECT and not intent.has_content, text
    # a longer message that asks is a description
    assert intents.classify("what else can cause a misfire on cylinder one when the coil is good and the plugs are "
                            "new").kind == intents.FOLLOWUP


def test_fillers_and_bare_numbers_carry_no_content():
    for text in ("hmm", "uh ok so", "well"):
        intent = intents.classify(text)
        assert intent.kind == intents.FOLLOWUP and not intent.has_content, text
    assert intents.classify("2").kind == intents.CHOICE and not intents.classify("2").has_content
    assert intents.classify("the fan spins").has_content
    assert intents.classify("It did at first but not anymore. What should I do?").has_content


# --- clarification people can use (issue 13, item 6) ----------------------------------------------
@pytest.mark.parametrize("text", ["no", "nope", "No.", "didn't help", "that didn't help", "No, that didn't help",
                                  "neither", "neither of them", "none of these", "no, none of these", "No, neither",
                                  "None of them fit", "nothing fits", "neither one"])
def test_every_way_of_saying_none_fits_reaches_the_none_of_these_row(text):
    from dtdialog.dialogue import transitions
    from dtdialog.dialogue.session import AWAITING_CHOICE

    intent = intents.classify(text)
    assert intent.kind in (intents.NONE_OF_THESE, intents.REJECT) and not intent.has_content, text
    assert transitions.handler_for(AWAITING_CHOICE, intent.kind) == "choose_none", text


def test_a_reply_that_names_an_option_is_not_none_of_these():
    for text in ("the clutch one", "no spark at all", "nothing happens when I turn the key"):
        assert intents.classify(text).kind not in (intents.NONE_OF_THESE, intents.REJECT), text


def test_thanks_alone_is_no_report_that_it_is_fixed():
    """"ok I'll get it checked, thanks" was answered "Glad that sorted it out!"."""
    from dtdialog.understanding.intents import says_fixed

    assert says_fixed("thanks, that fixed it") and says_fixed("it works now, thank you") and says_fixed("solved!")
    assert not says_fixed("ok I'll get it checked, thanks") and not says_fixed("thanks")
    assert not says_fixed("thanks, but it still hasn't worked")


def test_the_symptom_reported_gone_concludes():
    """"I replaced the battery and now it starts fine" under options got the options again."""
    from dtdialog.understanding.intents import CONCLUDE, classify, says_fixed

    for text in ("I replaced the battery and now it starts fine", "it starts fine now", "now it runs great"):
        assert classify(text).kind == CONCLUDE and says_fixed(text), text
    for text in ("It starts fine now in the morning but stalls at idle", "now it starts but stalls"):
        assert classify(text).kind != CONCLUDE, text


def test_a_problem_reported_fixed_concludes():
    """"it's fixed now, the fan relay was bad" was taken as a detail and answered with options."""
    from dtdialog.understanding.intents import CONCLUDE, classify, says_fixed

    for text in ("it's fixed now, the fan relay was bad", "It is fixed.", "all sorted now, thanks"):
        assert classify(text).kind == CONCLUDE and says_fixed(text), text
    for text in ("it's not fixed", "is it fixed if the light goes off?", "it's fixed but now it squeals"):
        assert classify(text).kind != CONCLUDE, text


# --- a customer with nothing more to tell ------------------------------------------------------------
@pytest.mark.parametrize("text", ["I don't have more details", "I dont have more details", "i don't know", "no idea",
                                  "not sure", "dunno", "idk", "that's all I know", "nothing else to add",
                                  "I have no other details", "no more info", "sorry, I don't know", "can't tell"])
def test_saying_there_is_nothing_more_to_tell_adds_nothing_to_search_with(text):
    intent = intents.classify(text)
    assert intent.kind == intents.NO_INFO and not intent.has_content, text


def test_having_no_more_details_rules_out_answers_that_only_ask_for_them():
    intent = intents.classify("I don't have more details")
    assert [(c.kind, c.words) for c in intent.constraints] == [(LACKS, ("details",))]


@pytest.mark.parametrize("text", ["not sure, it might be the belt", "I don't know what the code means",
                                  "I don't have a multimeter", "no more noise since the new pads"])
def test_a_reply_that_tells_something_is_not_nothing_to_tell(text):
    assert intents.classify(text).kind != intents.NO_INFO, text



@pytest.mark.parametrize("text,says", [("yes", 1), ("Yeah it does", 1), ("yep", 1), ("no", -1), ("nope", -1),
                                       ("No, it didn't", -1), ("no it doesn't", -1), ("yes thanks", 0),
                                       ("no, that didn't help", 0), ("yes the fan spins", 0), ("thanks", 0)])
def test_a_bare_yes_or_no_is_told_apart_from_thanks_and_rejections(text, says):
    # what it answers is the dispatcher's to decide: a yes or no to the bot's own question is a reply, not a goodbye
    assert intents.bare_yes_no(text) == says


def test_a_question_about_how_the_advice_worked_is_told_from_a_diagnostic_one():
    from dtdialog.understanding.reply_branch import asks_outcome

    assert asks_outcome("Does the slipping improve after you bring the level to the full mark?")
    assert asks_outcome("Does the clutch engage after that?")
    for question in ("Does the fan come on when you turn on the air conditioning?",
                     "Did it fire briefly on starting fluid?", "Does the fogging go away when you use fresh air?",
                     "Does it stop when you press the brake?"):
        assert not asks_outcome(question), question
