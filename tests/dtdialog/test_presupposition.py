"""Facts an answer's opening takes for granted (``dtdialog.understanding.presupposition``) and the stage that demotes them."""

from __future__ import annotations

import pytest

from dtdialog.selection.agreement import AgreementResult
from dtdialog.selection.scoring import RankedCandidate
from dtdialog.selection.stages import StepRecord
from dtdialog.selection.stages.presupposition_stage import demote_presuppositions
from dtdialog.selection.stages.scoring_stage import Scored
from dtdialog.setup.engine_config import DemotionConfig, EngineConfig
from dtdialog.understanding.entities import EntityNormalizer
from dtdialog.understanding.opening_facts import opening_subject
from dtdialog.understanding.presupposition import (
    OBSERVATION,
    OTHER_CODE,
    PAIR,
    PRIOR_ACTION,
    PRIOR_JOB,
    READING,
    SYMPTOM,
    VEHICLE,
    common_ground,
    denied_evidence,
    find_presupposition,
    misfit,
    premise_clash,
)
from index.base import AnswerDocument
from parsers.errors import ConfigError

PAPER_Q = ("I have checked the spark plugs, replaced the battery, also replaced ignition coils and the solenoid, "
           "but I still could not start my car.")
STARTER_JOB = ("After a starter job, the most common mistakes are a loose or missing small trigger wire on the "
               "solenoid, a ground strap that was unbolted to gain access and never put back, or a blown fusible link.")
NORMALIZER = EntityNormalizer()


def _found(answer: str, *said: str):
    return find_presupposition(answer, common_ground(said, NORMALIZER), NORMALIZER)


def test_a_starter_job_is_presupposed_when_the_customer_never_mentioned_one():
    found = _found(STARTER_JOB, PAPER_Q)
    assert found is not None and found.fact.kind == PRIOR_JOB and found.missing == {"starter"}
    assert 'a prior job you never mentioned: "a starter job"' in found.explain()


def test_the_solenoid_does_not_state_a_starter_job_but_the_starter_does():
    # the synonym list makes "solenoid" the "starter solenoid": a part of a longer term is not the starter itself
    assert _found(STARTER_JOB, "I replaced the solenoid and it still does nothing.") is not None
    assert _found(STARTER_JOB, "I replaced the starter myself yesterday and now the car does nothing.") is None
    assert _found(STARTER_JOB, "My car won't start.", "I put a new starter motor in last week.") is None


def test_a_done_action_after_since_is_judged_against_what_was_said():
    answer = "Since you replaced the fuel pump, check its relay and the inertia switch next."
    found = _found(answer, "My car cranks but won't start.")
    assert found is not None and found.fact.kind == PRIOR_ACTION and "pump" in found.missing
    assert _found(answer, "My car cranks but won't start even though I replaced the fuel pump.") is None
    # a hypothesis is not a given: "if you replaced" and a future "after you replace" presuppose nothing
    assert _found("If you replaced the fuel pump, check its relay.", "My car won't start.") is None
    assert _found("After you replace the fuel pump, check its relay.", "My car won't start.") is None


def test_a_when_clause_presupposes_the_fix_it_says_did_not_help_but_no_state():
    # found by trying the chat: "check engine light came on and the car runs rough at idle" was answered at 56% with
    # this answer, written for someone who had fitted new plugs and coils
    answer = ("When new plugs and coils didn't help and the engine runs smoothly above idle, a vacuum leak is the most "
              "likely cause.")
    found = _found(answer, "check engine light came on and the car runs rough at idle")
    assert found is not None and found.fact.kind == PRIOR_ACTION
    # the clause after "and the engine" is another statement: the fact is the plugs and coils, not the engine or idle
    assert {"plug", "coil"} <= found.missing and not {"engin", "idl"} & found.missing
    assert _found(answer, "Rough idle at stoplights. I already replaced the spark plugs and the ignition coils.") is None
    assert _found("When the AC is on, the condenser dumps its heat into the radiator.", "My car overheats.") is None


def test_a_word_negated_only_inside_a_longer_term_is_not_denied():
    # "no check engine light" denies that light, not every engine: "a warm engine" was read as contradicted
    ground = common_ground(["It runs fine and there's no check engine light."], NORMALIZER)
    assert "check engin light" in ground.denied and "engin" not in ground.denied
    assert "nois" in common_ground(["there's no noise at all"], NORMALIZER).denied


def test_a_code_is_presupposed_unless_the_customer_reported_it():
    answer = "That P0420 code usually points at the catalytic converter, not the sensors."
    found = _found(answer, "My check engine light came on yesterday.")
    assert found is not None and found.fact.kind == OBSERVATION and found.missing == {"p0420"}
    assert _found(answer, "My check engine light is on and the scanner shows P0420.") is None
    # "the code you got" presupposes a code; a customer who read one states it in any words of the synonym list
    assert _found("The code you got means the catalyst is below threshold.", "My engine light is on.") is not None
    assert _found("The code you got means the catalyst is below threshold.", "I got a DTC on my scanner.") is None


def test_a_noise_is_presupposed_unless_the_customer_heard_that_noise():
    answer = "That clicking noise is the starter solenoid pulling in without enough current."
    assert _found(answer, "My car won't start in the morning.").fact.phrase == "that clicking noise"
    assert _found(answer, "My car won't start and there's a grinding noise.") is not None  # another noise
    assert _found(answer, "My car won't start, I just hear clicking when I turn the key.") is None
    # a bare kind of evidence is stated by any word of its kind: "a noise" reported a sound
    assert _found("The sound you are hearing is the heat shield rattling.", "My car makes a noise at idle.") is None
    assert _found("The sound you are hearing is the heat shield rattling.", "My car won't start.") is not None


def test_an_opening_diagnosis_of_a_symptom_nobody_reported():
    answer = "Rapid clicking with dim lights is the classic sign of a battery that is too weak to hold the solenoid."
    found = _found(answer, PAPER_Q)
    assert found is not None and found.fact.kind == SYMPTOM
    assert _found(answer, "It makes a rapid clicking noise when I turn the key and the dash lights go dim.") is None
    assert _found(answer, "It clicks rapidly and the lights dim when I turn the key.") is None


def test_each_kind_of_evidence_a_diagnosis_names_must_have_been_reported():
    # found by trying the chat: "How do I test my car battery?" got "A battery light while driving means the charging
    # system is not putting out enough voltage": "battery" was said, a warning light never was
    light = "A battery light while driving means the charging system is not putting out enough voltage."
    found = _found(light, "How do I test my car battery?")
    assert found is not None and found.fact.kind == SYMPTOM and "light" in found.missing
    assert _found(light, "My battery light comes on while driving.") is None
    # the lights are evidence of their own: a click was reported, dim lights were not
    clicking = "Rapid clicking with dim lights is the classic sign of a battery that is too weak to hold the solenoid."
    assert "light" in _found(clicking, "It makes a rapid clicking noise when I turn the key.").missing
    # the paper's question mentions no warning light, so "no check engine light at key-on" is not its case
    ecm = "No spark on any cylinder and no check engine light at key-on suggests the ECM is losing power."
    assert _found(ecm, PAPER_Q) is not None
    assert _found(ecm, "No spark at all, and the check engine light never comes on with the key on.") is None
    # a trouble code as written states that a code was read
    lean = "A lean code on only one bank points to something on that side of the engine."
    assert _found(lean, "The check engine light came on with P0174, lean on bank 2 only.") is None
    assert _found(lean, "It runs rough on bank 2 only.") is not None


FLASHING = ("A flashing check engine light means a severe misfire that's dumping unburned fuel into the exhaust, "
            "which can destroy the catalytic converter.")


def test_a_reading_is_presupposed_unless_the_customer_gave_that_number():
    """"14.3 volts is a good charging voltage" followed the bot's "Do you know the voltage with the engine running?"
    to a customer who answered with a fuse-pull test: it echoes a reading another customer gave."""
    opening = "14.3 volts is a good charging voltage, so the alternator is fine."
    found = _found(opening, "I did the fuse pull test and the drain stopped when I pulled the radio fuse")
    assert found is not None and found.fact.kind == READING and found.fact.phrase == "14.3 volts"
    assert _found(opening, "I measured 14.3V with the engine running") is None
    assert _found(opening, "it reads 14,3 volts") is None
    assert _found("A 200 rpm change at steady speed is typical.", "The rpm goes up and down by about 200") is None
    assert _found("A 200 rpm change at steady speed is typical.", "It surges on the highway").fact.kind == READING
    # a number elsewhere is no reading the answer is about
    assert _found("Charge it to 12.6 volts before testing.", "my battery is dead") is None


def test_a_vehicle_is_presupposed_when_the_customer_named_another():
    """After "I can't afford a new clutch", the owner of a 2014 Focus got "Nissan has issued bulletins and software
    updates for CVT shudder on that generation"."""
    nissan = "Nissan has issued bulletins and software updates for CVT shudder on that generation."
    found = _found(nissan, "My 2014 Focus automatic shudders when accelerating from a stop.")
    assert found is not None and found.fact.kind == VEHICLE and found.fact.phrase == "nissan"
    assert _found(nissan, "My 2013 nissan sentra shudders from a stop") is None  # the make, however written
    assert _found("On a Civic the fan relay sits under the hood.", "My Honda shudders").fact.kind == VEHICLE
    assert _found("Honda's fix is a new relay.", "my 2009 civic overheats") is None  # a model names its make
    # not about the customer's car: no car named by them, the writer's own car, an everyday word
    assert _found("The W12 engine produced by VW uses both mechanical and electric water pumps.",
                  "What are the two water pumps on a W12 for?") is None
    assert _found("I had a similar problem removing the exhaust manifold on my Civic.", "an old Chevy 350") is None
    assert _found("Focus on the pads first, then the calipers.", "My Camry squeals") is None


#: found by trying the chat: given to "How do I check my transmission fluid?", a customer who named one fluid
BOTH_FLUIDS = ("Both fluids can be red, but their location helps. Transmission fluid usually drips under the middle "
               "of the car, while power steering fluid drips near the front.")


def test_both_refers_back_to_two_things_the_conversation_must_have_named():
    found = _found(BOTH_FLUIDS, "How do I check my transmission fluid?")
    assert found is not None and found.fact.kind == PAIR and found.missing == {"fluid"}
    assert 'a second one you never mentioned: "both fluids"' in found.explain()
    # named twice, joined ("front and rear"), or counted: the two are in the conversation
    assert _found(BOTH_FLUIDS, "Is this red puddle transmission fluid or power steering fluid?") is None
    assert _found("Both hoses should be hot once the thermostat opens.", "The upper and lower hoses feel cold.") is None
    assert _found("Neither tire needs replacing yet.", "I have two tires with uneven wear.") is None
    assert _found("Both tires are worn.", "My front tire is worn.").fact.kind == PAIR
    # sides of one thing and a turn of phrase refer back to nothing
    assert _found("Both sides of the rotor should look the same.", "My brakes pulse.") is None


#: found by trying the chat: given to "My brake pedal is spongy and goes almost to the floor."
CALIPER = ("A spongy, low pedal after caliper work almost always means air is still in the lines. Bleed again "
           "starting with the wheel farthest from the master cylinder.")


def test_a_job_after_after_inside_a_diagnosed_subject_must_have_been_said():
    # the comma between the adjectives keeps the subject whole ("a spongy" alone held no diagnosis)
    found = _found(CALIPER, "My brake pedal is spongy and goes almost to the floor.")
    assert found is not None and found.fact.kind == PRIOR_JOB and found.fact.phrase == "caliper work"
    assert _found(CALIPER, "I replaced both front calipers and now the pedal is spongy and low.") is None
    # an event told in other words is not judged, only a job on a part
    assert _found("A clunk after hitting a pothole usually means a broken sway bar link.",
                  "There is a clunk from the front since I scraped over a high curb.") is None


#: found by trying the chat: given to "My car shakes when I brake from highway speed."
NEW_TIRES = ("A shake that appears in a narrow speed range and starts after new tires is usually an imbalance, not a "
             "suspension problem.")


def test_a_hedged_copula_diagnoses_and_a_long_subject_is_read_for_the_work_it_states_as_done():
    # "is usually" diagnoses like "means": the symptom must have been reported
    found = _found("A tinny rattle at a specific rpm is usually a loose heat shield.", "My brakes squeal.")
    assert found is not None and found.fact.kind == SYMPTOM
    assert _found("A tinny rattle at a specific rpm is usually a loose heat shield.", "I hear a rattle at 2000 rpm.") is None
    # 15 words name no single symptom, but "after new tires" states work done that the customer never mentioned
    found = _found(NEW_TIRES, "My car shakes when I brake from highway speed.")
    assert found is not None and found.fact.kind == PRIOR_ACTION and found.missing == {"tire"}
    assert _found(NEW_TIRES, "Since I got new tires my car shakes at 65 mph.") is None


def test_a_diagnosed_value_whose_opposite_the_customer_said_is_a_contradiction():
    """Found by trying the chat: after "it just clicks once" and "the dash lights stay bright", the rapid-clicking
    answer still led the single-click one."""
    rapid = "Rapid clicking with dim lights is the classic sign of a weak battery."
    said = ("My car won't start, it just clicks once when I turn the key.", "The dash lights stay bright.")
    found = misfit(rapid, common_ground(said, NORMALIZER), NORMALIZER)
    assert found is not None and found.contradicted and found.missing in ({"rapid"}, {"dim"})
    assert "you said is not the case" in found.explain()
    single = "A single loud click with bright dash lights usually means the solenoid engages but the motor does not."
    assert misfit(single, common_ground(said, NORMALIZER), NORMALIZER) is None
    # a customer who said it under a negation ("not bright") said neither side; the bot's words deny nothing
    assert misfit(rapid, common_ground(["It clicks, the lights are not bright."], NORMALIZER), NORMALIZER) is None


def test_a_verdict_of_normal_diagnoses_its_subject_unless_it_is_a_generality():
    """Found by trying the chat: "A spark at the last connection is normal ..." (a jump-start answer) was offered for
    dim headlights; "X is normal / harmless" takes X as the customer's symptom, as "X means" does."""
    spark = "A spark at the last connection is normal if it was made to the ground point, but reversed cables blow fuses."
    found = _found(spark, "My headlights are dim and flicker at idle.")
    assert found is not None and found.fact.kind == SYMPTOM and "spark" in found.fact.phrase
    assert _found(spark, "I jumped my neighbor's car and there was a spark at the last clamp.") is None
    # a quantified subject states a generality: any customer may be told it
    assert _found("Some corrosion is normal over time, but crust that comes back means venting.",
                  "There is white crust on my battery terminals.") is None


def test_a_clear_odorless_fluid_is_not_the_red_sweet_one_the_customer_saw():
    """Found by trying the chat: "Clear, odorless water dripping under the passenger side ... is normal" was offered
    to a customer with a pinkish red, sweet-smelling puddle (its subject runs past the comma after one adjective)."""
    water = ("Clear, odorless water dripping under the passenger side after using the air conditioning is normal. "
             "The evaporator drains there.")
    said = ("A small puddle under the front passenger side, kind of pinkish red and slippery.", "it smells sweet")
    found = misfit(water, common_ground(said, NORMALIZER), NORMALIZER)
    assert found is not None and found.contradicted
    assert misfit(water, common_ground(["Water drips under the passenger side after I use the AC, it's clear."],
                                       NORMALIZER), NORMALIZER) is None
    # one word and a comma open a clause, not a noun phrase, when a determiner follows
    assert opening_subject("yes, the starter is usually bad") is None


def test_a_symptom_stated_under_a_negation_contradicts_a_customer_who_has_it():
    """Found by trying the chat: "My check engine light is on, code P0420" was answered "No spark on any cylinder and
    no check engine light at key-on suggests the ECM ... is losing power"."""
    answer = "No spark on any cylinder and no check engine light at key-on suggests the ECM is losing power."
    found = _found(answer, "My check engine light is on, code P0420")
    assert found is not None and found.contradicted and "check engin light" in found.missing
    assert _found(answer, "It cranks but won't start, there is no spark and the check engine light never comes on.") \
        is None
    # "no check engine light" says nothing of the headlights: a bare kind of evidence is no contradiction
    headlights = _found(answer, "It cranks, no spark, and my headlights are on.")
    assert headlights is None or not headlights.contradicted


def test_an_answer_about_another_trouble_code_is_for_another_fault():
    """Found by trying the chat: "code P0420. What does it mean?" got "... P0442 means a very small leak ..."."""
    answer = ("It won't harm the engine, but you'll fail an emissions inspection. P0442 means a very small leak, often "
              "from a cracked EVAP hose.")
    found = misfit(answer, common_ground(["My check engine light is on, code P0420. What does it mean?"], NORMALIZER),
                   NORMALIZER)
    assert found is not None and found.fact.kind == OTHER_CODE and found.contradicted
    assert found.explain() == 'it is about another code than the one you gave: "P0442"'
    # the customer's own code among others, a customer who gave no code, a code only the bot said: no clash
    both = answer + " A P0420 with it points at the catalyst."
    assert misfit(both, common_ground(["It set code p0420."], NORMALIZER), NORMALIZER) is None
    assert misfit(answer, common_ground(["My check engine light is on."], NORMALIZER), NORMALIZER) is None
    ground = common_ground(["It came back.", "Read it: P0420 is the catalyst."], NORMALIZER, customer=["It came back."])
    assert misfit(answer, ground, NORMALIZER) is None


def test_a_named_kind_of_evidence_is_that_one_and_a_word_made_on_a_kind_reports_it():
    """Found by trying the chat: "My headlights are dim and flicker at idle" got "A flickering oil light at hot idle
    could be a faulty sender ..." ("could be" diagnosed nothing, and any word of the subject stated it)."""
    oil = "A flickering oil light at hot idle could be a faulty sender or real low oil pressure."
    found = _found(oil, "My headlights are dim and flicker at idle.")
    assert found is not None and found.fact.kind == SYMPTOM and found.missing == {"oil pressur light"}
    assert found.fact.evidence == ""  # a light was reported: the headlights; no light to ask about
    assert _found(oil, "My oil light flickers at idle when the engine is hot.") is None
    # "headlights" reports a light: the kind is stated, the diagnosis is judged on its other words as before
    assert _found("Rapid clicking with dim lights is the classic sign of a weak battery.",
                  "It clicks and my headlights go dim when I turn the key.") is None


def test_a_bare_yes_or_no_is_no_opening_the_claim_after_it_is():
    """"No. A sidewall bulge means the internal cords have broken ..." answered a post about a gouge in a tire: the
    rule read the opening "No." and found nothing taken for granted."""
    from dtdialog.understanding.presupposition import opening_sentence

    bulge = "No. A sidewall bulge means the internal cords have broken, and only the rubber holds the air. Replace it."
    assert opening_sentence(None, bulge).startswith("A sidewall bulge means")
    opening = opening_sentence(None, bulge)
    assert _found(opening, "I noticed a gouge in my tire, is it dangerous to drive on?").fact.kind == SYMPTOM
    assert _found(opening, "There is a bulge on my sidewall. Can I drive on it?") is None
    assert opening_sentence(None, "No.") == "No."


def test_a_symptom_the_customer_denied_is_a_contradiction_not_common_ground():
    # found by trying the chat: "it's steady, not flashing" was answered with the flashing-light answer
    found = _found(FLASHING, "The check engine light came on after I filled up with gas.", "it's steady, not flashing")
    assert found is not None and found.contradicted and found.missing == {"flash"}
    assert 'you said is not the case: "a flashing check engine light means"' in found.explain()
    assert _found(FLASHING, "My check engine light is flashing and the car shakes.") is None
    # said both ways, the customer's "it is flashing now" stands
    assert _found(FLASHING, "It was not flashing at first.", "Now the check engine light is flashing.") is None


def test_a_denial_agrees_with_a_symptom_stated_under_a_negation_and_a_bare_no_denies_nothing():
    no_start = "A car that won't start after sitting for weeks usually means a flat battery."
    assert _found(no_start, "My car won't start, it sat for three weeks.") is None
    assert common_ground(["no, the light is flashing now"], NORMALIZER).denied == frozenset()
    assert common_ground(["there is no smoke but it smells of fuel"], NORMALIZER).denied == {"smoke"}


CONDENSATION = ("Probably not. White vapor on cold mornings that clears after a few minutes is usually just "
                "condensation. Since your coolant isn't dropping, condensation is the likely cause.")


def test_a_premise_that_says_the_opposite_of_the_customer_anywhere_in_the_answer():
    # found by trying the chat: a customer whose coolant keeps dropping was told "since your coolant isn't dropping"
    ground = common_ground(["White smoke from the exhaust and the coolant level keeps dropping.", "yes it smells sweet"],
                           NORMALIZER)
    found = premise_clash(CONDENSATION, ground, NORMALIZER)
    assert found is not None and found.contradicted and found.missing == {"drop"}
    assert found.explain() == 'it assumes the opposite of what you said: "since your coolant isn\'t dropping"'
    # nothing said either way, or the same thing said: no clash
    assert premise_clash(CONDENSATION, common_ground(["White smoke on cold mornings."], NORMALIZER), NORMALIZER) is None
    assert premise_clash(CONDENSATION, common_ground(["White smoke, and the coolant is not dropping."], NORMALIZER),
                         NORMALIZER) is None
    # an affirmed premise is not judged against a denial: "starting fluid" is no "start" the customer denied
    fluid = "Then start with fuel pressure, because starting fluid only proves the ignition works."
    assert premise_clash(fluid, common_ground(["I replaced the coils, but I still could not start my car."],
                                              NORMALIZER), NORMALIZER) is None


def test_only_the_customer_denies_the_bots_if_it_doesnt_does_not():
    said = ["My fan runs all the time.", "If the fan doesn't come on, check the fuse first."]
    assert common_ground(said, NORMALIZER, customer=said[:1]).denied == frozenset()
    assert "fan" in common_ground(said, NORMALIZER, customer=said[:1]).affirmed


def test_evidence_the_customer_said_is_absent_is_a_contradiction():
    # found by trying the chat: "no visible leaks, no white smoke" got "Losing coolant with no external leak,
    # sweet-smelling white smoke and overheating under load are all consistent with a head gasket leak"
    said = "Coolant keeps disappearing, about a cup a week, no visible leaks, no white smoke. 2011 Outback."
    ground = common_ground([said], NORMALIZER)
    gasket = ("Losing coolant with no external leak, sweet-smelling white smoke and overheating under load are all "
              "consistent with a head gasket leak.")
    found = denied_evidence(gasket, ground, NORMALIZER)
    assert found is not None and found.contradicted and "white smoke" in found.explain()
    assert misfit(gasket, ground, NORMALIZER) is not None  # the stage and eval.presupposition read it too
    # another colour is another observation; a supposition asks; a kind of evidence never denied is no clash
    for fits in ("Blue smoke at startup usually means worn valve seals.",
                 "If you see white smoke from the exhaust, the head gasket is the likely cause.",
                 "An internal leak into the cylinders is the usual cause of losing coolant with no drips."):
        assert denied_evidence(fits, ground, NORMALIZER) is None, fits
    assert denied_evidence(gasket, common_ground(["It loses coolant and there is white smoke."], NORMALIZER),
                           NORMALIZER) is None


def test_a_symptom_restricted_by_only_needs_its_restriction_said():
    # found by trying the chat: "grinding noise when I turn left" got the AC compressor's grinding
    answer = "A grinding noise only with the AC on usually means the compressor's internal parts are worn."
    found = _found(answer, "My car makes a grinding noise when I turn left.")
    assert found is not None and found.fact.kind == SYMPTOM and "air condit" in found.missing  # "AC", by synonym
    assert _found(answer, "There is a grinding noise whenever the AC is on.") is None
    # without "only", any of the symptom's terms states it, as before
    assert _found("A grinding noise with the AC on usually means a worn clutch.", "It makes a grinding noise.") is None


def test_a_symptom_set_apart_by_a_participle_needs_the_participle_said():
    # found by trying the chat: to "check engine light is on with code P0420, the car runs fine" the bot delivered
    # "A flashing check engine light means a severe misfire"
    answer = "A flashing check engine light means a severe misfire that is dumping fuel into the exhaust."
    found = _found(answer, "My check engine light is on with code P0420. The car runs fine otherwise.")
    assert found is not None and found.fact.kind == SYMPTOM and "flash" in found.missing
    assert _found(answer, "The check engine light started flashing on the highway.") is None
    assert _found("A grinding noise with the AC on usually means a worn clutch.", "It makes a grinding noise.") is None
    # a gerund that is the symptom itself is no participle; but it names one noise, which must be said itself: a
    # squeal is not a grinding (found in the README's conversation: a customer who had replaced the pads got "the pads
    # are worn through")
    grinding = "Grinding after a long period of squealing almost always means the pads are worn through."
    found = _found(grinding, "My brakes squeal when I stop.")
    assert found is not None and found.missing == {"grind"}
    assert _found(grinding, "My brakes grind when I stop, they squealed for months.") is None
    # only a word of a kind of evidence is read so: other heads are the answer's words for the customer's ("Excessive
    # body roll" for "leans in corners"), and a bare kind is stated by any word of it
    assert _found("Excessive body roll without noise often means the sway bar isn't working.",
                  "My car leans a lot more in corners than it used to. There are no clunks or noises.") is None
    assert _found("Noise that started right after a brake job often means something was disturbed.",
                  "It squeals since the brake job.") is None


def test_the_papers_answer_presupposes_nothing_the_rule_judges():
    """A state given as a premise ("Since the engine cranks") is not judged: "could not start" often stands for it."""
    answer = ("Since the engine cranks, the starter side is doing its job, so the question is whether the engine is "
              "getting both spark and fuel.")
    assert _found(answer, PAPER_Q) is None


def test_what_the_bot_already_said_is_common_ground():
    answer = "Since the starting fluid worked, the fuel supply is the weak link."
    assert _found("That P0420 code means the catalyst is weak.", "It came back.",
                  "Read the code with a scanner: a P0420 is the catalyst.") is None
    assert _found(answer, "It fired briefly.") is None  # no done action nor job: nothing to judge


def test_the_bot_states_a_job_only_by_advising_it():
    """Found by trying the chat: after "Check the coolant level first", "An erratic gauge and a heater that goes cold
    after a coolant change are classic signs of trapped air" was given to a customer who changed no coolant. A job is
    the customer's history; the bot's words state one only when they advise that work."""
    erratic = ("An erratic gauge and a heater that goes cold after a coolant change are classic signs of trapped air, "
               "because an air pocket gives false readings.")
    said = ["my heater blows cold air", "Check the coolant level first, and feel both heater hoses. Are both hot?",
            "yes the engine gets to normal temperature"]
    customer = [said[0], said[2]]
    ground = common_ground(said, NORMALIZER, customer=customer)
    found = find_presupposition(erratic, ground, NORMALIZER)
    assert found is not None and found.fact.kind == PRIOR_JOB
    advised = [said[0], "Drain and refill the coolant, then bleed the system.", "ok I did it"]
    assert find_presupposition(erratic, common_ground(advised, NORMALIZER, customer=[advised[0], advised[2]]),
                               NORMALIZER) is None
    # with no line between the customer's words and the bot's, every text states as before
    assert find_presupposition(erratic, common_ground(said, NORMALIZER), NORMALIZER) is None


def test_a_generic_trouble_code_states_the_fault_it_names():
    """Found by trying the chat: "code P0302" got "A single-cylinder misfire is usually ..." taken out as a symptom never
    mentioned. The generic OBD-II codes of a misfire (P0300-P0312), the catalyst (P0420, P0430) and the EVAP system
    name their fault as plainly as its words (``data/car_synonyms.json``)."""
    misfire = "A single-cylinder misfire is usually a bad ignition coil, a worn spark plug, or a clogged injector."
    assert _found(misfire, "engine light on, car shakes at idle, code P0302") is None
    found = _found(misfire, "engine light on, car shakes at idle")
    assert found is not None and found.fact.kind == SYMPTOM
    assert NORMALIZER.terms_of_text("P0420") & NORMALIZER.terms_of_text("a worn catalytic converter")
    assert NORMALIZER.terms_of_text("P0455") & NORMALIZER.terms_of_text("a leak in the EVAP system")


def _cand(doc_id: str, text: str, score: float) -> RankedCandidate:
    doc = AnswerDocument(id=doc_id, dialogue_id=doc_id.split("#")[0], position=1, text=text)
    return RankedCandidate(document=doc, retrieval_score=1.0, score=score,
                           agreement=AgreementResult(verdict=True, score=1.0, addressed=1, required=1))


class _Tools:
    normalizer = NORMALIZER

    @staticmethod
    def analyze(doc):  # the opening is read from the text when no tree is at hand
        return type("Analysis", (), {"tree": None})()


def test_the_stage_demotes_by_the_penalty_records_why_and_zero_turns_it_off():
    kept = [_cand("job#1", STARTER_JOB, 1.2), _cand("paper#1", "Check for spark and fuel first.", 0.7)]
    record = StepRecord()
    out = demote_presuppositions(Scored(kept=kept), [PAPER_Q], penalty=0.5, tools=_Tools(), record=record)
    assert [c.document.id for c in out.kept] == ["paper#1", "job#1"]
    assert out.kept[1].score == pytest.approx(0.6) and out.kept[1].features["presupposition"] == 1.0
    assert record.to_dict()["presupposition"] == {"job#1": 'it presupposes a prior job you never mentioned: '
                                                            '"a starter job"'}
    kept = [_cand("job#1", STARTER_JOB, 1.2), _cand("paper#1", "Check for spark and fuel first.", 0.7)]
    off = demote_presuppositions(Scored(kept=kept), [PAPER_Q], penalty=0.0, tools=_Tools(), record=StepRecord())
    assert [c.document.id for c in off.kept] == ["job#1", "paper#1"] and off.kept[0].score == 1.2


def test_the_default_penalty_takes_the_answer_out_and_the_trace_says_why():
    """At 1 the answer is neither given nor offered: at score 0 it would still be an option, and its model logit
    would make the runner-up look doubtful to the calibrator."""
    from dtdialog.selection.stages.choose import choose

    kept = [_cand("job#1", STARTER_JOB, 1.2), _cand("paper#1", "Check for spark and fuel first.", 0.7)]
    record = StepRecord()
    penalty = DemotionConfig().presupposition_penalty
    out = demote_presuppositions(Scored(kept=list(kept)), [PAPER_Q], penalty=penalty, tools=_Tools(), record=record)
    assert [c.document.id for c in out.kept] == ["paper#1"]
    assert out.dropped == {"job#1": 'it presupposes a prior job you never mentioned: "a starter job"'}
    choice = choose(kept, out, record=record)
    assert [c.document.id for c in choice.kept] == ["paper#1"] and [c.document.id for c in choice.rejected] == ["job#1"]
    assert record.rejected_reasons["job#1"] == out.dropped["job#1"]


@pytest.mark.parametrize("bad", [-0.1, 1.5, True, "0.5"])
def test_the_penalty_is_validated(bad):
    with pytest.raises(ConfigError, match="presupposition_penalty"):
        DemotionConfig(presupposition_penalty=bad)
    assert DemotionConfig(presupposition_penalty=0).presupposition_penalty == 0.0
    assert EngineConfig.from_dict({"presupposition_penalty": 1}).demotions.presupposition_penalty == 1.0


def test_a_leading_answer_taken_out_for_unreported_evidence_records_the_kind_to_ask_for():
    single = "A single loud click with bright dash lights usually means the starter solenoid is engaging."
    rapid = "Rapid clicking with dim lights is the classic sign of a weak battery."
    kept = [_cand("single#1", single, 1.3), _cand("rapid#1", rapid, 1.2), _cand("job#1", STARTER_JOB, 1.1),
            _cand("x#1", "Check the fuses.", 1.0), _cand("late#1", single.replace("single", "lone"), 0.9)]
    record = StepRecord()
    said = ["My car won't start, it just clicks once when I turn the key."]
    demote_presuppositions(Scored(kept=kept), said, penalty=1.0, tools=_Tools(), record=record)
    # the light is what the two leading answers need; the starter job is no evidence; the fifth answer did not lead
    assert record.unreported_evidence == {"single#1": "light", "rapid#1": "light"}
    assert record.to_dict()["unreported_evidence"] == record.unreported_evidence
    record = StepRecord()
    demote_presuppositions(Scored(kept=kept), [*said, "The dash lights stay bright."], penalty=1.0, tools=_Tools(),
                           record=record)
    assert record.unreported_evidence == {}


def test_work_a_generality_comes_after_is_taken_as_done():
    """Found by trying the chat: "the brake pedal feels soft" got, at 75%, the last answer of a caliper job's dialogue
    ("A little softness after a caliper change can also come from ..."); a quantifier makes its subject no symptom of
    the customer's, but the job it follows is still taken for granted."""
    softness = ("A little softness after a caliper change can also come from a caliper piston that was not fully "
                "extended, so pump the pedal a dozen times with the engine running.")
    found = _found(softness, "the brake pedal feels soft and I have to push it further than before")
    assert found is not None and found.fact.kind == PRIOR_JOB and found.fact.phrase == "a caliper change"
    assert _found(softness, "I replaced a caliper yesterday and now the pedal feels soft") is None
    # a generality with no work in it is still no symptom of the customer's
    assert _found("Some corrosion is normal over time, but crust that comes back means venting.", "my battery") is None

