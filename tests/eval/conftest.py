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


@pytest.fixture
def toy_file(tmp_path):
    """The toy set as a team's own dialogue file (``--data FILE --format jsonl``): Q, A1 [, C1, A2] per dialogue."""
    import json

    texts = {a.id: a.text for a in POOL}
    lines = []
    for d in DIALOGUES:
        turns = [{"role": "Q", "text": d.question}]
        for i, answer_id in enumerate(d.answer_ids):
            if i:
                turns.append({"role": "C", "text": d.followups[i - 1]})
            turns.append({"role": "A", "text": texts[answer_id]})
        lines.append(json.dumps({"id": d.id, "turns": turns}))
    path = tmp_path / "toy_dialogues.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
