"""An answer logged for a sibling of the customer's part ("clutch pedal" to "brake pedal") is not for them."""

from __future__ import annotations

import pytest

from dtdialog.understanding.sibling_parts import compounds, customer_compounds, other_part

BRAKE = "My brake pedal goes almost to the floor before the car stops. I topped up the brake fluid last week."
CLUTCH = ("My clutch pedal sometimes stays on the floor after I press it. I noticed the brake fluid reservoir is a "
          "bit low. Is the clutch worn out?")


def _said(text: str) -> set[str]:
    return set(text.lower().replace(".", " ").split())


def test_compounds_are_the_noun_runs_of_noun_phrases_written_together():
    assert {("brake", "pedal"), ("brake", "fluid")} <= compounds(BRAKE)
    # the compound inside a longer one is read, the last pair of a longer one is not
    found = compounds("The oil pressure light came on. I checked the brake fluid reservoir.")
    assert {("oil pressure", "light"), ("brake", "fluid"), ("brake fluid", "reservoir")} <= found
    assert ("pressure", "light") not in found
    # a noun chunk across punctuation is no compound
    assert ("comment", "wheel") not in compounds("A second video is in the comments - wheel turned while parked.")


def test_an_answer_logged_for_a_sibling_part_is_found_and_one_for_the_customers_part_is_not():
    mine = customer_compounds([BRAKE])
    assert other_part(mine, _said(BRAKE), CLUTCH) == ("clutch pedal", "brake pedal")
    assert other_part(mine, _said(BRAKE), "My brake pedal feels spongy after I bled the brakes.") is None
    # a customer who named the other part too ("the clutch or the brake pedal") gets both
    said = "I am not sure if it is the clutch or the brake pedal that sticks."
    assert other_part(customer_compounds([said]), _said(said), CLUTCH) is None
    glow = "My diesel cranks but won't start when cold. Could the glow plugs be bad?"
    spark = "I replaced the spark plugs and it still misfires."
    assert other_part(customer_compounds([spark]), _said(spark), glow) == ("glow plug", "spark plug")


def test_a_head_that_names_no_part_or_any_light_is_not_read():
    highway = "It shakes at highway speed."
    assert other_part(customer_compounds([highway]), _said(highway), "The engine speed drops at idle.") is None
    warning = "A warning light came on while driving."
    assert other_part(customer_compounds([warning]), _said(warning), "The airbag light stays on.") is None


def test_the_words_inside_an_indicators_name_are_no_part():
    """Found on a held-out post: "I turned the car engine on" met "check engine" inside "check engine light" of a
    logged question, and three misfire answers were taken out as written for another engine."""
    found = compounds("My check engine light came on and the car shakes.")
    assert ("check engine", "light") in found and ("check", "engine") not in found
    said = "When I turned the car engine on, every coil I pulled made it stumble."
    logged = "My engine stumbles under load and the check engine light flashed once on the highway."
    assert other_part(customer_compounds([said]), _said(said), logged) is None


@pytest.mark.slow
def test_the_engine_leaves_out_a_clutch_answer_for_a_brake_pedal(builtin_learned_index, tmp_path):
    """Found by trying the chat: "My brake pedal goes almost to the floor ..." was answered from a clutch-pedal
    dialogue ("The pedal staying down is a hydraulic problem, not clutch wear ...") at 39%."""
    from dtdialog.setup.assembly import EngineSpec, build_engine

    path, parser = builtin_learned_index
    engine = build_engine(EngineSpec(index_path=str(path), sessions_path=str(tmp_path / "s.sqlite")), parser=parser,
                          progress=False)
    try:
        outcome = engine.selector.rank_outcome(question=BRAKE + " It's low again.", step=0, size=10)
        notes = outcome.to_dict()["presupposition"]
        assert "clutch pedal" in notes.get("transmission-013#1", ""), notes
        assert all(not c.document.id.startswith("transmission-013") for c in outcome.candidates[:3])
    finally:
        engine.close()
