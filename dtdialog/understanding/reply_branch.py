"""Which way a customer's reply goes: how it answers the bot's yes/no question, and whether it reports anything.

A logged answer was written for the reply before it: "Then the fan motor and its wiring are fine" follows "it does
come on with the AC". Given to a customer who answered the same question the other way ("the fan doesn't come on at
all"), or who asked back instead of reporting ("where would the oil be dripping from?"), it is confidently wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from dtdialog.understanding.opening_facts import TROUBLE_CODE, negated_split
from dtdialog.understanding.opposites import opposed
from dtdialog.understanding.tried import done_class
from index.vocabulary import SENTENCE_BREAK, content_words, stem, words_of

#: The auxiliaries, by family: a short answer echoes the family its question opens on ("Did it ...?" - "It did", "it
#: didn't"; "ca" and "wo" are what "can't" and "won't" leave without their "n't").
_AUXILIARY_FAMILIES = ({"do", "does", "did"}, {"is", "are", "was", "were", "am"}, {"can", "could", "ca"},
                       {"has", "have", "had"}, {"will", "would", "wo"})
#: Words that open a yes/no question ("Does the fan come on ...?"); a wh-question has no yes or no.
_POLAR_OPENERS = frozenset().union(*_AUXILIARY_FAMILIES) - {"ca", "wo"}
#: A short answer opens on a pronoun and the question's auxiliary ("It did at first", "it doesn't"): yes, or no with
#: a negator right after it, whatever words the rest shares with the question.
_ANSWER_SUBJECTS = frozenset({"it", "i", "they", "we", "she", "he", "there", "that", "both", "one"})
#: Words that may stand before the question's verb ("And does it ...", "So is the light ...").
_LEAD_INS = frozenset({"and", "so", "also", "then", "now", "next", "finally", "first"})
_YES = frozenset({"yes", "yeah", "yep", "yup", "correct", "sure", "affirmative", "indeed"})
_NO = frozenset({"no", "nope", "nah", "negative"})
_NEGATORS = frozenset({"not", "no", "never", "nothing", "none", "neither", "nor", "without", "cannot"})
#: An answer that opens on the finding of the reply before it ("That confirms one of the tires ...", "That means the
#: fan motor is fine"): given after any other reply, it confirms what the customer never found.
_REFERS_BACK = re.compile(r"^(?:that|this)\s+(?:confirms|means|points|explains|fits|pattern|rules|tells|shows|suggests|"
                          r"narrows|proves|indicates|result|reading)\b")
#: An answer that opens on a consequence of the reply before it ("Then replace the valve cover gasket ..."): it follows
#: only a reply that took the logged reply's branch (``branch_agrees``), as one opening on its finding does.
_CONSEQUENCE = re.compile(r"^(?:then|in that case|if so)\b")
#: Where a reply's clauses part: punctuation, and "but" or "while" between two statements.
_CLAUSE = re.compile(r"[,;:.!?]+|\s(?:but|while|though|although|whereas)\s")
#: The situation a question or a reply's clause is about: what follows "when", "with", "during", ...
_SITUATION = re.compile(r"\b(?:when|whenever|while|if|during|with)\s+(.*)")
#: Stems of a situation that only points back at the symptom ("when it happens"): it names no situation of its own.
_POINTING_BACK = frozenset({"happen", "occur"})


@dataclass(frozen=True)
class Branch:
    """Why a logged answer does not follow the customer's reply: ``kind`` is ``polarity``, ``no_report``, ``finding``,
    ``code`` or ``unanswered``."""

    kind: str
    logged: str

    def explain(self) -> str:
        """Return the reason in the customer's terms, quoting the logged reply it was written for."""
        quoted = " ".join(self.logged.split()[:14])
        if self.kind == "polarity":
            return f'it follows a reply that answered the question the other way: "{quoted}"'
        if self.kind == "finding":
            return f'it follows up a finding you have not reported: "{quoted}"'
        if self.kind == "code":
            return f'it follows a reply that gave another code: "{quoted}"'
        if self.kind == "unanswered":
            return f'it follows an answer to the last question that you have not given: "{quoted}"'
        return f'it follows a reply that reported something you did not: "{quoted}"'


def is_negator(word: str) -> bool:
    """Return True for a word that says no ("not", "never", "without", any "...n't"), as ``words_of`` gives it."""
    return word in _NEGATORS or word.endswith("n't")


def polar_question(answer: str) -> str | None:
    """Return the answer's closing yes/no question ("Does the fan come on with the AC?"), or None.

    A wh-question ("Where does the oil appear?") or a choice ("only when braking, or also while cruising?") has no
    yes or no, so it is None."""
    sentences = [s for s in SENTENCE_BREAK.split(answer.strip()) if s]
    last = sentences[-1] if sentences else ""
    return last if last.rstrip().endswith("?") and _polar(last) else None


#: A yes/no question about how the advice worked out ("Does the slipping improve after you top it up?", "Does the
#: clutch engage after that?"): a yes says the problem is fixed, not which branch of a diagnosis was taken. A test
#: asked with "when" ("Does the fogging go away when you use fresh air?") is a diagnosis.
_OUTCOME = re.compile(r"\bafter (?:that|this|doing|you|replacing|changing|cleaning|tightening|swapping|topping|the)\b|"
                      r"\b(?:improve[sd]?|fix(?:es|ed)?|help(?:s|ed)?|better|solve[sd]?|cure[sd]?)\b", re.IGNORECASE)


def asks_outcome(question: str) -> bool:
    """Return True when a yes/no question asks whether the advice worked, not what the customer observes."""
    return bool(_OUTCOME.search(question))


def asks_yes_no(text: str) -> bool:
    """Return True when a customer's message holds a yes/no question ("Is the transmission going out?"); one that
    opens with its auxiliary counts without the question mark ("is it safe to drive like this")."""
    return any(_polar(s) for s in SENTENCE_BREAK.split(text.strip()) if s.strip())


def _polar(sentence: str) -> bool:
    words = words_of(sentence)
    while words and words[0] in _LEAD_INS:
        words = words[1:]
    return bool(words) and words[0] in _POLAR_OPENERS and " or " not in f" {sentence.lower()} "


def reply_polarity(reply: str, question: str, terms: Callable[[str], frozenset[str]] | None = None) -> int:
    """Return +1 when ``reply`` answers the yes/no ``question`` yes, -1 when no, 0 when it does not say.

    A leading "yes" or "no" decides. Otherwise the clause of the reply that shares most words with the question
    (content stems, plus ``terms``: the engine's entity terms, so "AC" meets "air conditioning") answers it, and a
    negator in that clause makes it a no. A reply sharing no word with the question does not say.

    Read this way a plain statement is a yes, though some mean no ("One tab has come off" to "Are both tabs
    attached?"): requiring an echo of the question's auxiliary ("it does come on") would leave most plain yeses
    unread, and an unread reply lets a follow-up written for the other branch through, which is worse than holding a
    right one back (``python -m eval.reply_branch`` measures the reader against judged replies)."""
    words = words_of(reply)
    if words and words[0] in _YES:
        return 1
    if words and words[0] in _NO and (len(words) == 1 or reply.split()[0].rstrip().endswith((",", ".", "!"))):
        return -1
    if len(words) > 1 and words[0] in _ANSWER_SUBJECTS and _same_auxiliary(words[1], question):
        # "It did at first but not anymore" to "Did it fire briefly on starting fluid?": the short answer decides
        return -1 if is_negator(words[1]) or words[2:3] in (["not"], ["never"]) else 1
    asked = _keys(question, terms)
    situation = _situation(question, terms)
    best, polarity = 0, 0
    for clause in _CLAUSE.split(reply.lower()):
        shared = len(_keys(clause, terms) & asked)
        told = _situation(clause, terms)
        if situation and told and not told & situation:
            # "the fan doesn't spin when it gets hot" to "Does the fan come on when you turn on the AC?": it tells
            # another situation than the one asked about, so it says neither yes nor no to it
            continue
        if shared > best:
            negated = any(map(is_negator, words_of(clause)))
            best, polarity = shared, (-1 if negated else 1)
    return polarity


def _situation(text: str, terms: Callable[[str], frozenset[str]] | None) -> frozenset[str]:
    """Return the keys of the situation ``text`` names after "when", "with", "during", ... (empty: none, or one that
    only points back at the symptom, "when it happens")."""
    found = _SITUATION.search(text.lower())
    keys = _keys(found.group(1), terms) if found else frozenset()
    return frozenset() if keys <= _POINTING_BACK else keys


def _same_auxiliary(word: str, question: str) -> bool:
    """Return True when ``word`` ("did", "doesn't") echoes the auxiliary ``question`` opens on: "I can smell gas" to
    "Did it fire ...?" is a statement of its own, not a short answer."""
    asked = next((w for w in words_of(question) if w not in _LEAD_INS), "")
    base = word[:-3] if word.endswith("n't") else word
    return any(asked in family and base in family for family in _AUXILIARY_FAMILIES)


def refers_back(answer: str) -> bool:
    """Return True when ``answer`` opens on the finding the reply before it reported ("That confirms ...")."""
    return _REFERS_BACK.match(answer.strip().lower()) is not None


def reports(text: str) -> bool:
    """Return True when ``text`` states something: a sentence that is not a question and has a content word."""
    return any(not s.rstrip().endswith("?") and content_words(words_of(s))
               for s in SENTENCE_BREAK.split(text.strip()) if s.strip())


def branch_clash(reply: str, logged: str, answer_before: str,
                 terms: Callable[[str], frozenset[str]] | None = None, *, answer_after: str = "") -> Branch | None:
    """Return why the answer written after ``logged`` does not follow ``reply``, or None when it may.

    Both replies answer ``answer_before`` (the bot's last answer). They clash when its closing yes/no question is
    answered both ways, when they report opposite values (``opposites``: "low" against "full"), when ``reply`` only
    asks while ``logged`` reported something, or when ``answer_after`` (the answer written after ``logged``) opens on
    a finding ``reply`` does not report ("That confirms ...": a yes is not enough, ``reports_finding``) or on a
    consequence of a reply ``reply`` is not ("Then replace ...": neither the same yes or no nor the same finding,
    ``branch_agrees``)."""
    if not reply.strip() or not logged.strip():
        return None
    if reports(logged) and not reports(reply):
        return Branch("no_report", logged)
    # two replies that give different trouble codes ("P0302") report different faults
    said_codes, logged_codes = _codes(reply), _codes(logged)
    if said_codes and logged_codes and not said_codes & logged_codes:
        return Branch("code", logged)  # "swap the cylinder 3 coil", written after P0303, is no answer to P0302
    if opposed(frozenset(words_of(logged)), frozenset(negated_split(reply)[1]), replies=True) is not None:
        return Branch("polarity", logged)  # "The level is slightly low" against "I checked it and it's full"
    question = polar_question(answer_before)
    if question is not None:
        said, written_for = reply_polarity(reply, question, terms), reply_polarity(logged, question, terms)
        if said and written_for and said != written_for:
            return Branch("polarity", logged)
        if written_for and not said and not states_condition(answer_after) and not reports_finding(reply, logged, terms):
            # "also my brakes squeak" to "Does your engine have a bleeder screw?": the answer after "I found a small
            # screw on the thermostat housing" ("Open that bleeder screw ...") follows a reply not given
            return Branch("unanswered", logged)
    if refers_back(answer_after) and not reports_finding(reply, logged, terms):
        return Branch("finding", logged)
    if follows_on(answer_after) and not branch_agrees(reply, logged, answer_before, terms):
        return Branch("finding", logged)  # "no leaks on the ground" is not "fresh oil along the valve cover"
    return None


def _codes(text: str) -> frozenset[str]:
    return frozenset(code.upper() for code in TROUBLE_CODE.findall(text))


def states_condition(answer: str) -> bool:
    """Return True when ``answer`` opens on the condition it holds under ("If both hoses are hot, ..."): it says
    which reply it was written for, so it may follow any."""
    return answer.strip().lower().startswith(("if ", "when ", "unless "))


def follows_on(answer: str) -> bool:
    """Return True when ``answer`` opens on a consequence of the reply before it ("Then replace ...")."""
    return _CONSEQUENCE.match(answer.strip().lower()) is not None


#: A reply with at least this share of the logged reply's words (content stems and entity terms) says what it said.
AGREE_SHARE = 0.5


def branch_agrees(reply: str, logged: str, answer_before: str,
                  terms: Callable[[str], frozenset[str]] | None = None) -> bool:
    """Return True when ``reply`` takes the logged reply's branch: the same yes or no to ``answer_before``'s closing
    question, or most of the logged reply's words ("The outer pad on the front left is only about 2 mm thick" for
    "The outer pad on the front left looks like it's only about 2 mm thick")."""
    if not reply.strip() or not logged.strip():
        return False
    question = polar_question(answer_before)
    if question is not None:
        said, written_for = reply_polarity(reply, question, terms), reply_polarity(logged, question, terms)
        if said and written_for:
            return said == written_for
    return reports_finding(reply, logged, terms)


def reports_finding(reply: str, logged: str, terms: Callable[[str], frozenset[str]] | None = None) -> bool:
    """Return True when ``reply`` holds most of the logged reply's words: it reports what that reply found. A yes to
    the same question is not enough for an answer that opens on the finding ("That confirms ..."): "tire pressures are
    all at 35" reads as a yes to "Can you swap the front tires?"."""
    wanted = _keys(logged, terms)
    return bool(wanted) and len(_keys(reply, terms) & wanted) >= AGREE_SHARE * len(wanted)


def _keys(text: str, terms: Callable[[str], frozenset[str]] | None) -> frozenset[str]:
    words = content_words(words_of(text))
    # a done verb also counts by its class: "swapped it" reports what "I replaced it" did
    keys = {stem(w) for w in words} | {c for c in map(done_class, words) if c}
    return frozenset(keys | (terms(text) if terms is not None else frozenset()))
