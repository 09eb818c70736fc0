"""An answer that opens by answering a yes/no question the customer never asked ("Not necessarily yet.").

A logged opening answered its own dialogue's question ("Is the transmission going out?"). Delivered to a customer who
only described the problem, that first word answers nothing they said, so it is left out of the text they read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from dtdialog.understanding.reply_branch import asks_yes_no

#: A bare response: a yes or no word, at most one softener, then the clause or sentence ends.
_RESPONSE = re.compile(
    r"^\s*(?:yes|yeah|yep|no|nope|not necessarily|not really|not yet|probably not|usually not|not usually|"
    r"definitely not|absolutely not|absolutely|definitely|of course|correct)(?:\s+(?:yet|really|necessarily|at all))?"
    r"\s*(?P<end>[.!?,;:])\s*", re.IGNORECASE)
#: A hedged verdict that is a whole sentence ("Not always.", "Yes, probably.", "Usually, yes.", "It could
#: contribute."): only as a sentence of its own, since "Usually, the pump fails first" opens a claim.
_HEDGED = re.compile(
    r"^\s*(?:(?:yes|yeah|yep|no|nope)\s*,?\s*)?"
    r"(?:not always|not necessarily|not usually|probably not|usually not|possibly|very possibly|quite possibly|"
    r"probably|very likely|quite likely|most likely|likely|usually|often|sometimes|it(?:'s| is) possible|"
    r"(?:it|they) (?:could|can|might|may)(?: well)?(?: contribute)?)"
    r"(?:\s*,?\s*(?:yes|no))?(?:\s+(?:yet|really|necessarily|at all|permanently))?\s*(?P<end>[.!?])\s*",
    re.IGNORECASE)


def _response(text: str) -> re.Match[str] | None:
    return _HEDGED.match(text) or _RESPONSE.match(text)  # the longer first: "Yes, probably." whole


#: a conjunction that joined the rest of the sentence to the response
_JOINED = re.compile(r"^(?:but|and|so|though|although)\b,?\s*", re.IGNORECASE)


def is_bare_response(sentence: str) -> bool:
    """Return True for a sentence that is only a yes or no ("No.", "Not necessarily yet."): it claims nothing itself."""
    found = _response(sentence)
    return found is not None and not sentence[found.end():].strip()


def unasked_response(answer: str, customer: Iterable[str]) -> str | None:
    """Return the answer's opening yes or no when none of the ``customer``'s messages asked a yes/no question."""
    found = _response(answer)
    if found is None or not answer[found.end():].strip() or any(asks_yes_no(t) for t in customer if t):
        return None
    return answer[:found.end()].strip()


def without_unasked_response(answer: str, customer: Iterable[str]) -> str:
    """Return ``answer`` without an opening yes or no nobody asked for; the rest starts with a capital."""
    said = unasked_response(answer, customer)
    if said is None:
        return answer
    rest = answer.lstrip()[len(said):].lstrip()
    rest = _JOINED.sub("", rest, count=1)  # "Usually not, but after running dry ...": the "but" went with the "not"
    return rest[:1].upper() + rest[1:]
