"""An opening yes or no answers the logged question, not the customer's: "Transmission slips ... Fluid level is fine."
got "Not necessarily yet. Low fluid is ...", the answer to "Is the transmission going out?"."""

from __future__ import annotations

from dtdialog.understanding.reply_branch import asks_yes_no
from dtdialog.understanding.unasked_response import unasked_response, without_unasked_response

SLIPS = "Transmission slips when shifting from 2nd to 3rd, only after it warms up. Fluid level is fine."


def test_yes_no_questions_are_found_with_or_without_the_mark():
    assert asks_yes_no("It slips when warm. Is the transmission going out?")
    assert asks_yes_no("is it safe to drive like this")
    assert not asks_yes_no(SLIPS)
    assert not asks_yes_no("What should I check next?")
    assert not asks_yes_no("Should I replace the pads, or the rotors too?")  # a choice, not a yes or no


def test_an_unasked_yes_or_no_is_left_out_and_the_rest_kept_whole():
    assert without_unasked_response("Not necessarily yet. Low fluid is a common cause.", [SLIPS]) == \
        "Low fluid is a common cause."
    assert without_unasked_response("Yes, you will want to flush it.", [SLIPS]) == "You will want to flush it."
    # found by trying the chat: the "but" that answered the response goes with it
    assert without_unasked_response("Usually not, but after running dry the lines are full of air.", [SLIPS]) == \
        "After running dry the lines are full of air."
    assert without_unasked_response("No, and the pump is fine.", [SLIPS]) == "The pump is fine."
    assert without_unasked_response("No. But check the pump.", [SLIPS]) == "Check the pump."
    assert unasked_response("No, it's not safe to drive.", [SLIPS, "is it safe to drive like this"]) is None
    # "No spark on any cylinder ..." opens a statement, not a response; an answer that is only "Yes." stays
    assert without_unasked_response("No spark on any cylinder, and no light at all.", [SLIPS]).startswith("No spark")
    assert without_unasked_response("Yes.", [SLIPS]) == "Yes."


def test_a_hedged_verdict_of_its_own_is_a_response_too():
    # found by trying the chat: "the parking brake does not hold the car on a hill" got "Not always. When the lever
    # travel increases ...", the answer to "Do I need new parking brake cables?"
    for verdict in ("Not always.", "Yes, probably.", "Usually, yes.", "Very possibly.", "It could contribute.",
                    "Yes, it's possible.", "Probably not permanently.", "Yes, they could."):
        assert without_unasked_response(f"{verdict} Check the cable adjustment.", [SLIPS]) == \
            "Check the cable adjustment.", verdict
    # a hedge that opens a claim is no verdict: it stays
    assert without_unasked_response("Usually, the pump fails first.", [SLIPS]) == "Usually, the pump fails first."
    assert without_unasked_response("Probably the thermostat. Check it cold.", [SLIPS]).startswith("Probably the")
    assert unasked_response("Not always. Check the cable.", [SLIPS, "Do I need new cables?"]) is None
