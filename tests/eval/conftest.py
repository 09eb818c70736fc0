"""A hand-made evaluation set: four car-repair answers, three single-step and one two-step dialogue."""

import pytest

from eval.datasets import EvalDialogue, EvalSet, PoolAnswer

POOL = (
    PoolAnswer("brakes#1", "Replace the brake pads, and resurface the rotors if they are warped or scored.", "brakes", 1),
    PoolAnswer("battery#1", "Check the battery voltage and clean the corroded battery terminals before you replace "
               "the starter.", "battery", 1),
    PoolAnswer("battery#3", "Then the starter solenoid is the likely culprit: tap the starter while a helper turns "
               "the key.", "battery", 3),
    PoolAnswer("oil#1", "Change the engine oil and the oil filter every 5000 miles, or sooner when you tow.", "oil", 1),
    PoolAnswer("tires#1", "Rotate the tires every six months and keep the tire pressure at the door-jamb value.",
               "tires", 1),
)

DIALOGUES = (
    EvalDialogue("brakes", "My brakes squeal and the pedal vibrates. Should I replace the brake pads or the rotors?",
                 ("brakes#1",)),
    EvalDialogue("battery", "The car will not start although the battery terminals were corroded and I cleaned "
                 "them. What should I check?", ("battery#1", "battery#3"),
                 ("I did that, the battery voltage is fine but it only clicks when I turn the key. Is it the starter?",)),
    EvalDialogue("oil", "How often should I change the engine oil and the oil filter?", ("oil#1",)),
    EvalDialogue("tires", "How often should the tires be rotated, and what tire pressure should I keep?",
                 ("tires#1",)),
)


@pytest.fixture
def toy_pool() -> tuple[PoolAnswer, ...]:
    return POOL


@pytest.fixture
def toy_dialogues() -> tuple[EvalDialogue, ...]:
    return DIALOGUES


@pytest.fixture
def toy_set() -> EvalSet:
    return EvalSet(name="toy", dialogues=DIALOGUES, pool=POOL, description="hand-made toy set")
