"""The follow-up detector on parsed sentences of the kinds met in real support logs (the engine's rule parser).

Later answers open by reacting to or continuing the other side's last turn ("Then ...", "That confirms ...",
"I see!", "Since you already ..."); first answers of mechanics and customer-care logs open with a plain statement,
a presentational "This is ..." or a greeting, and must keep standing alone.
"""

from __future__ import annotations

import pytest

from index.position import detect_position

LATER_ANSWERS = [
    "Then check the main fuses and fusible links first, because a short to ground at the starter terminal can blow "
    "the high-current fuse.",
    "That confirms the alternator is not charging, so test the belt tension next.",
    "That points at ECM power rather than the injectors themselves.",
    "In that case the master cylinder is leaking internally.",
    "If that didn't work, replace the ignition relay.",
    "Since you already replaced the battery, the alternator is the next suspect.",
    "I see! Does it happen with any specific kind of media file?",
    "Thanks for the info! Does the application freeze when you import?",
    "No problem, glad it works now.",
    "Ah, then the driver is not loaded at all.",
    "And make sure the ground strap is tight.",
]
FIRST_ANSWERS = [
    "This is a myth: synthetic oil does not make an engine leak.",
    "This is not a serious issue, and you can keep driving for now.",
    "These are some general guidelines when working with electricity on a car.",
    "Great question! You can set the audience for each video.",
    "A single click with bright dash lights usually means the starter solenoid is engaging.",
    "After a starter job, the most common mistakes are a loose trigger wire or a missing ground strap.",
    "Since the engine cranks, the starter side is doing its job.",
    "It sounds like the starter solenoid is sticking.",
    "That sounds like a vacuum leak to me, since the brake pedal got hard at the same time.",
    "That's a great question, and we'll be happy to help.",
    "Set these test conditions: engine at 1800 rpm, fan speed on low, windows up.",
    "Thanks for reaching out, we're sorry to hear about the delay.",
]


@pytest.mark.parametrize("text", LATER_ANSWERS)
def test_a_later_answer_points_back(rules_parser, text):
    position = detect_position(rules_parser.parse(text))
    assert not position.stands_alone and position.reason, text


@pytest.mark.parametrize("text", FIRST_ANSWERS)
def test_a_first_answer_stands_alone(rules_parser, text):
    position = detect_position(rules_parser.parse(text))
    assert position.stands_alone, (text, position.reason)
