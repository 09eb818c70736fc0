"""Values that exclude each other: "rapid clicking with dim lights" is not what a customer with one click and bright
dash lights has.

``resources/presupposition_triggers.json`` lists ``opposite_values``: pairs of word groups that describe the same
evidence in ways that cannot both hold (dim / bright, rapid / single, steady / flashing, loud / faint). They are
English words, not car parts: a group is matched on the lower-cased words as written.
"""

from __future__ import annotations

from collections.abc import Collection

from dtdialog.understanding.opening_facts import trigger_words


def opposite_values() -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    """Return the pairs of word groups that exclude each other (read once, with the other trigger words)."""
    return trigger_words().opposites


def opposed(words: Collection[str], said: Collection[str], *, replies: bool = False) -> str | None:
    """Return a word of ``words`` whose opposite the customer ``said`` (and never the word's own group), else None.

    ``words`` that hold both sides ("cold or hot") state neither. ``replies``: ``words`` are another reply to the same
    answer, so the pairs read only between replies count too ("low" / "full")."""
    mine, theirs = set(words), set(said)
    pairs = opposite_values() + (trigger_words().reply_opposites if replies else ())
    for a, b in pairs:
        for side, other in ((a, b), (b, a)):
            if mine & side and not mine & other and theirs & other and not theirs & side:
                return sorted(mine & side)[0]
    return None
