"""Whether a message asks how to do something, or whether something is advisable, without reporting a problem.

"How do I test my car battery?" or "Is it necessary to replace the oil filter every oil change?" describes no
symptom, so "When does it happen?" is the wrong question to ask when no answer is sure: the abstention asks what
the customer is planning or where they got stuck instead (``dtdialog.dialogue.abstain.GOAL``). A message that
also reports a problem ("it won't start, how do I check the fuel pump?") stays a problem report.

The request openers and problem words are English grammar and kinds of trouble; the domain's own symptom verbs
("squeal", "leak", "stall") and states ("spongy", "sticky") come from the symptom vocabulary, so a car customer's
"how do I stop the squeal?" or "the pedal feels spongy, what should I check?" is a problem report.
"""

from __future__ import annotations

import re

from dtdialog.understanding.reply_branch import is_negator
from dtdialog.understanding.symptom_conditions import symptom_states, symptom_verbs
from index.vocabulary import stem, words_of

_REQUEST = re.compile(
    r"\b(?:how\s+(?:do|can|should|would|could)\s+(?:i|we|you|one)|how\s+to|"
    r"what(?:'s|\s+is)\s+the\s+(?:best|right|proper|easiest|correct|cheapest|safest)\s+way|"
    r"(?:can|could|should|may)\s+(?:i|we)|"
    r"is\s+it\s+(?:safe|ok|okay|possible|bad|normal|necessary|worth|advisable|better|fine|legal)|"
    r"(?:is|are)\s+(?:\w+\s+){1,3}?(?:bad|safe|ok|okay|normal|necessary|harmful|worth)\s+(?:for|to)|"
    r"(?:do|would)\s+(?:i|you|we)\s+(?:need|have)\s+to|is\s+there\s+(?:a|any)\s+way|"
    r"(?:what|which)\s+(?:\w+\s+)?(?:should|do|would)\s+(?:i|you)\s+(?:use|buy|get|recommend))\b", re.I)
#: words that report trouble in any domain; a negation ("won't", "not working", ``reply_branch.is_negator``) does too
_TROUBLE = frozenset({"problem", "problems", "issue", "issues", "error", "errors", "fail", "fails", "failed",
                      "failing", "failure", "broke", "broken", "stuck", "stopped", "died", "dead", "keeps", "noise",
                      "noises", "warning", "wrong", "damaged", "worse"})


def asks_for_guidance(text: str) -> bool:
    """Return True when ``text`` asks how to do something or whether it is advisable and reports no problem."""
    return bool(_REQUEST.search(text)) and not reports_trouble(text)


def reports_trouble(text: str) -> bool:
    """Return True when ``text`` says something is wrong: a negation, a word of trouble, a symptom verb or state."""
    words = words_of(text.replace("\u2019", "'"))
    if any(w in _TROUBLE or is_negator(w) for w in words):
        return True
    symptoms = symptom_verbs() | symptom_states()
    return any(stem(w) in symptoms for w in words)
