"""Values that exclude each other (``dtdialog.understanding.opposites``)."""

from __future__ import annotations

from dtdialog.understanding.opposites import opposed, opposite_values


def test_the_groups_load_as_pairs():
    pairs = opposite_values()
    assert pairs and all(a and b and not a & b for a, b in pairs)


def test_a_value_opposes_only_what_the_customer_said_of_the_other_side():
    subject = "rapid clicking with dim lights".split()
    assert opposed(subject, {"the", "dash", "lights", "stay", "bright"}) == "dim"
    assert opposed(subject, {"it", "clicks", "once"}) == "rapid"
    # nothing said of either side, both sides said, or both sides in the subject: no clash
    assert opposed(subject, {"it", "clicks"}) is None
    assert opposed(subject, {"bright", "then", "dim"}) is None
    assert opposed("a steady or flashing light".split(), {"flashing"}) is None


def test_low_and_full_oppose_only_between_replies():
    """In an opening, "a spongy, low pedal" meets "the reservoir is full" (another thing); two replies to the same
    answer speak of the same level."""
    assert opposed({"low"}, {"the", "reservoir", "is", "full"}) is None
    assert opposed({"low"}, {"it's", "full"}, replies=True) == "low"
