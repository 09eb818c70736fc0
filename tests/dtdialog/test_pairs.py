"""Two of a kind (``dtdialog.understanding.pairs``): what "both N" refers back to, and what names two."""

from __future__ import annotations

import pytest

from dtdialog.understanding.pairs import pair_phrase, paired_nouns


@pytest.mark.parametrize(("opening", "expected"), [
    ("Both fluids can be red, but their location helps.", ("both fluids", "fluid")),
    ("Neither of the front brake hoses is the problem.", ("neither of the front brake hoses", "hose")),
    ("Both readings are normal for a warm engine.", ("both readings", "read")),
    # not a reference back: another first word, "either ... or", a side of one thing, no noun
    ("The fluids can both be red.", None),
    ("Either the pump or the relay has failed.", None),
    ("Both ends of the hose should be clamped.", None),
    ("Both are common.", None),
    ("", None),
])
def test_the_phrase_and_its_head(opening, expected):
    assert pair_phrase(opening) == expected


def test_what_names_two():
    assert "fluid" in paired_nouns(["Is it transmission fluid or power steering fluid?"])  # said twice
    assert "tire" in paired_nouns(["My front and rear tires wear fast."])  # joined, plural
    assert "hose" in paired_nouns(["Both hoses are cold."]) and "wiper" in paired_nouns(["a pair of wipers"])
    assert "wiper" in paired_nouns(["I replaced the wiper.", "The wiper still streaks."])  # across messages
    # one of them named once, and two different parts joined in the singular, are no pair
    assert paired_nouns(["How do I check my transmission fluid?"]) & {"fluid", "transmiss"} == set()
    assert "alternator" not in paired_nouns(["My battery and alternator are new."])
    assert paired_nouns([]) == frozenset() and paired_nouns([""]) == frozenset()
