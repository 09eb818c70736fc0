"""Values that exclude each other: "rapid clicking with dim lights" is not what a customer with one click and bright
dash lights has.

``resources/presupposition_triggers.json`` lists ``opposite_values``: pairs of word groups that describe the same
evidence in ways that cannot both hold (dim / bright, rapid / single, steady / flashing, loud / faint). They are
English words, not car parts: a group is matched on the lower-cased words as written.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from functools import lru_cache
from pathlib import Path

TRIGGERS_PATH = Path(__file__).resolve().parent.parent / "resources" / "presupposition_triggers.json"


@lru_cache(maxsize=1)
def opposite_values() -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    """Return the pairs of word groups that exclude each other."""
    data = json.loads(TRIGGERS_PATH.read_text(encoding="utf-8"))
    return tuple((frozenset(a), frozenset(b)) for a, b in data.get("opposite_values", ()))


def opposed(words: Collection[str], said: Collection[str]) -> str | None:
    """Return a word of ``words`` whose opposite the customer ``said`` (and never the word's own group), else None.

    ``words`` that hold both sides ("cold or hot") state neither."""
    mine, theirs = set(words), set(said)
    for a, b in opposite_values():
        for side, other in ((a, b), (b, a)):
            if mine & side and not mine & other and theirs & other and not theirs & side:
                return sorted(mine & side)[0]
    return None
