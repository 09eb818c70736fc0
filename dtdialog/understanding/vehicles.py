"""The makes and models a text names: "my 2014 Focus" names a Ford Focus, "On a Civic ..." a Honda Civic.

The names are world knowledge kept as data (``resources/vehicle_names.json``: ``vehicles``, each make with models
that name it, and ``everyday_vehicle_names``, names that are also everyday words). The presupposition rule
reads an answer's opening with them (``names_in(..., as_names=True)``) and the conversation leniently
(``vehicles_named``).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

NAMES_PATH = Path(__file__).resolve().parent.parent / "resources" / "vehicle_names.json"
#: words before a name that make it the writer's own car ("on my Civic"), told as an example
_WRITERS = frozenset({"my", "our"})


@lru_cache(maxsize=1)
def _names() -> tuple[dict[str, str], frozenset[str], re.Pattern[str]]:
    """Return (make or model -> its make, everyday names, the pattern that finds any name)."""
    data = json.loads(NAMES_PATH.read_text(encoding="utf-8"))
    makes = {name: make for make, models in data["vehicles"].items() for name in (make, *models)}
    names = sorted(makes, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w-])(" + "|".join(re.escape(n) for n in names) + r")(?![\w-])", re.I)
    return makes, frozenset(data["everyday_vehicle_names"]), pattern


@lru_cache(maxsize=4096)
def names_in(text: str, *, as_names: bool = False) -> tuple[str, ...]:
    """Return the makes and models ``text`` names as written, lowercased, in order.

    ``as_names``: read as an answer's claim about the customer's car: an everyday word ("Focus on the pads") counts
    only capitalised and not first in its sentence, and the writer's own car ("on my Civic") not at all; a customer's
    "my focus" names one however written."""
    _, everyday, pattern = _names()
    found: list[str] = []
    for match in pattern.finditer(text):
        name = match.group(1).lower()
        before = text[:match.start()].rstrip()
        if as_names and name in everyday and (not before or before[-1] in ".!?" or not match.group(1)[0].isupper()):
            continue
        if as_names and _WRITERS.intersection(before.lower().split()[-2:]):
            continue
        found.append(name)
    return tuple(found)


def vehicles_named(text: str) -> frozenset[str]:
    """Return the makes and models ``text`` names, lowercased, each model with its make."""
    makes = _names()[0]
    return frozenset(n for name in names_in(text) for n in (name, makes[name]))
