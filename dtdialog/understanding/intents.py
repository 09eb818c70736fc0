"""What a user turn means for the session: conclude, reject, reset, hand off, choose, ask about the repair, or
follow up.

Rules are deliberately conservative: only short, unambiguous replies conclude or reject, so a
follow-up that merely contains "not" ("It did at first but not anymore") stays a follow-up C_i.
Keyword intents read short replies only: a longer message is a description, whatever courtesy words
("thanks in advance", "okay so") or mentions ("not human ones") it contains; "reset" and "restart" ask for a
new conversation only as the whole message ("reset the check engine light" is a car question). Only an explicit request
for a person, or a reset phrase that opens the message, still counts in a longer one; a longer message
that opens a conversation (``opening=True``) is always a problem description.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dtdialog.dialogue.kinds import IntentKind
from dtdialog.understanding.constraints import Constraint, extract_constraints
from dtdialog.understanding.side_questions import side_question
from index.vocabulary import entity_words, is_entity_word

#: The engine's limit on one user turn, in characters: longer turns are answered with a prompt, never parsed.
#: The HTTP API refuses longer turns itself (so it never accepts one the engine refuses); it stays below the
#: parser's own ceiling (``parsers.text_input.MAX_CHARS``), the limit of every other text.
MAX_TURN_CHARS = 4_000

#: Each intent is also a name of this module (``intents.CONCLUDE``), the spelling the table and its tests read.
EMPTY = IntentKind.EMPTY
TOO_LONG = IntentKind.TOO_LONG
CONCLUDE = IntentKind.CONCLUDE
REJECT = IntentKind.REJECT
RESET = IntentKind.RESET
HANDOFF = IntentKind.HANDOFF
CHOICE = IntentKind.CHOICE
NONE_OF_THESE = IntentKind.NONE_OF_THESE
NO_INFO = IntentKind.NO_INFO
YES_NO = IntentKind.YES_NO
CONSTRAINT = IntentKind.CONSTRAINT
FOLLOWUP = IntentKind.FOLLOWUP
SIDE_QUESTION = IntentKind.SIDE_QUESTION
NEW_QUESTION = IntentKind.NEW_QUESTION

# lone surrogates too ("\ud800" in a JSON or YAML file, undecodable bytes read with surrogateescape): no encoder takes them
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\ufeff\ud800-\udfff]")
_HANDOFF = re.compile(r"\b(human|humans|agent|representative|rep|operator|real person|live person|someone real|"
                      r"(?:talk|speak|chat) (?:to|with) (?:a |an )?(?:person|someone|somebody|people)|customer service)\b")
#: A request for a person worded as one: it counts in a message of any length (a bare "human" only in a short one).
_HANDOFF_REQUEST = re.compile(r"\b(?:(?:can|could|may) i|i (?:want|need|would like|'d like)|let me|please)\s+"
                              r"(?:to\s+)?(?:talk|speak|chat|be put through)\s+(?:to|with)\s+(?:a |an |your )?"
                              r"(?:real |live )?(?:human|person|agent|representative|operator|someone|somebody)\b|"
                              r"\b(?:connect|transfer|put) me (?:through )?(?:to|with) (?:a |an )?(?:real |live )?"
                              r"(?:human|person|agent|representative|operator)\b")
RESET_PHRASE = re.compile(r"\b(new question|another question|different question|new problem|different problem|"
                          r"start over|start again|new topic)\b|^(?:please )?(?:restart|reset)(?: (?:the )?(?:chat|conversation))?"
                          r"(?: please)?[\s.!]*$")
_NUMBER = re.compile(r"^\s*(?:option|number|no\.?|#)?\s*(\d{1,2})\s*[.)!]?\s*$")
# "none of these" in its everyday forms; a leading "no," ("no, neither") says the same. The bare rejections
# ("no", "nope", "didn't help") are REJECT: while options are on offer the table reads them as none of these too.
_NONE = re.compile(r"^\s*(?:(?:no|nope|nah)\b[\s,.!-]*)?(?:none|none of (?:these|them|those|the above)|neither|"
                   r"neither (?:one|option)|neither of (?:these|them|those)|nothing of (?:these|that)|"
                   r"not (?:any|one) of (?:these|them|those)|nothing (?:fits|matches|applies)|none (?:fit|apply|match))\b")
#: The whole reply says the customer has nothing to tell: "I don't know", "no idea", "I don't have more details".
_NO_INFO = re.compile(
    r"^(?:(?:sorry|no|nope|um+|hm+|well|honestly|tbh)[\s,.!-]+)?"
    r"(?:i\s*(?:don't|dont|do not)\s+know(?: (?:that|what else|anything else|more))?|idk|dunno|no idea|no clue|"
    r"not sure|i'm not sure|im not sure|(?:i\s*)?(?:can't|cant|cannot)\s+(?:tell|say)|"
    r"i\s*(?:don't|dont|do not)\s+have\s+(?:any\s+)?(?:more|other|further|additional|extra)?\s*"
    r"(?:details?|info|information)|(?:i\s*have\s+|there (?:are|is)\s+)?no\s+(?:more|other|further|additional|extra)\s+"
    r"(?:details?|info|information)|that's all(?: i (?:know|have|can tell))?|"
    r"nothing (?:else|more)(?: to (?:add|say|tell))?)"
    r"(?:[\s,.!-]+(?:sorry|really|honestly))?[\s.!]*$")
_ACK = r"(?:yes|yep|yeah|yup|ok|okay|thanks|thank you|thx|ty|great|perfect|cheers|awesome|excellent|solved|fixed)"
_CONCLUDE_SHORT = re.compile(rf"^{_ACK}(?:[\s,.!]+(?:{_ACK}|so much|very much|a lot|it works?(?: now)?|"
                             r"that (?:fixed|solved|did) it|that helped|it helped|that worked|it worked))*[\s.!]*$")
_CONCLUDE_PHRASE = re.compile(r"\b(?:that|this|it|you) (?:fixed|solved|sorted|did) it\b|\bfixed it\b|"
                              # "it's fixed now, the fan relay was bad": the state, not the deed
                              r"\b(?:it's|it is|that's|that is|all|everything's|everything is) (?:fixed|solved|sorted)"
                              r"(?: now)?\b|"
                              r"\bproblem (?:is )?(?:solved|fixed|gone)\b|\bworks (?:fine |great |again )?now\b|"
                              r"\bit worked\b|\bthat worked\b|\bthat helped\b|\bruns (?:fine|great) now\b|"
                              # the symptom reported gone: "I replaced the battery and now it starts fine"
                              r"\bnow (?:it |the car |the engine |she )?(?:starts|runs|works|drives|idles|stops)"
                              r"(?: (?:fine|great|normally|perfectly|smoothly|again|ok|okay))\b|"
                              r"\b(?:starts|runs|works|drives|idles) (?:fine|great|normally|perfectly|smoothly) "
                              r"(?:now|again)\b")
_FIXED_WORD = re.compile(r"\b(?:fixed|solved|sorted|worked|works|helped)\b")


#: A whole reply that is only a yes or a no, with at most its echo ("yes it does", "no, it didn't").
_BARE_YES_NO = re.compile(
    r"^(?P<word>yes|yeah|yep|yup|no|nope|nah)(?:[\s,.!]+(?:it|they|he|she|i)?\s*(?:does|do|did|is|was|has|had|can|"
    r"will|doesn't|don't|didn't|isn't|wasn't|hasn't|can't|won't|does not|do not|did not|is not|was not))?[\s.!]*$")


def bare_yes_no(text: str) -> int:
    """Return +1 for a reply that is only a yes ("yes", "yeah it does"), -1 for only a no ("nope", "no it didn't"),
    0 for anything else ("yes thanks", "no, that didn't help")."""
    found = _BARE_YES_NO.match(text.lower().replace("\u2019", "'").strip())
    if found is None:
        return 0
    return 1 if found.group("word") in ("yes", "yeah", "yep", "yup") else -1


def says_fixed(text: str) -> bool:
    """Return True when a closing reply says the problem is fixed ("thanks, that fixed it"), not only thanks: "ok
    I'll get it checked, thanks" must not be told "Glad that sorted it out"."""
    lowered = text.lower()
    return bool(_CONCLUDE_PHRASE.search(lowered) or _FIXED_WORD.search(lowered)) and not _NEGATION.search(lowered)


def closes(text: str) -> bool:
    """Return True when a closing reply thanks or says the problem is fixed: a bare "ok" or "yes" does neither (to
    "does one of them match your situation?" it is no goodbye)."""
    return says_fixed(text) or bool(_THANKS.search(text.lower())) or bool(_BYE.search(text.lower()))


_BYE = re.compile(r"\b(?:bye|goodbye|cheers|ty|thx|solved|sorted)\b")
#: Thanks alone ends a conversation only in a short reply: "thanks in advance" closes a question, not a dialogue.
_THANKS = re.compile(r"\bthanks?\b|\bthank you\b")
_NEGATION = re.compile(r"\b(?:not|no|never|still|nothing|didn't|doesn't|won't|isn't|wasn't|don't|can't|cannot|but)\b")
_REJECT_SHORT = re.compile(r"^(?:no|nope|nah|negative|not really|no luck|wrong|not it|useless|no good)[\s.!]*$")
_REJECT_PHRASE = re.compile(
    r"\b(?:didn't|did not|doesn't|does not|hasn't|has not|won't|will not)\s+(?:help|work|fix|solve|change)\b|"
    r"\bnot (?:helpful|working|it|the problem|the issue|fixed|solved)\b|\bno (?:luck|help|change|difference)\b|"
    r"\bstill (?:the same|not|won't|doesn't|does it|does the same|broken|there|happening|no|can't|dead|have)\b|"
    r"\b(?:already|i've) (?:tried|done|checked|did) (?:that|this|it|those)\b|\btried that\b|\bthat's not it\b|"
    r"\bsame (?:problem|issue)\b")
#: "what else should I check?", "any other ideas?": a short reply asking for another suggestion turns this one down.
_ANOTHER = re.compile(r"^(?:(?:so|ok|okay|then|and|hmm),?\s+)?(?:what else|anything else|any other (?:ideas?|suggestions?|"
                      r"causes?)|other ideas?|what next|what now)\b")
#: "it still stalls": a short reply with "still" reports the same symptom, i.e. the answer did not help.
_STILL = re.compile(r"\bstill\b")
#: Replies of at most this many words are short: the only ones keyword intents read.
SHORT_WORDS = 8
#: Words that only express feedback; a reply made of nothing else carries no new information.
_FEEDBACK_WORDS = frozenset("""no nope nah help helped helpful work worked working fix fixed solve solved change
luck difference tried done checked already same problem issue still wrong useless good idea ideas suggestion
suggestions cause causes
""".split())
#: Hesitation and filler words: "hmm", "uh ok so" say nothing a search could use.
_FILLER_WORDS = frozenset("""hmm hm hmmm um umm uh uhm er erm huh eh ah oh okay ok so well anyway idk dunno lol
""".split())


@dataclass
class Intent:
    """One classified user turn: its kind, cleaned text, choice number, constraints, and whether it adds content."""

    kind: IntentKind
    text: str
    number: int | None = None
    constraints: list[Constraint] = field(default_factory=list)
    has_content: bool = False


def sanitize(text: str, *, max_chars: int) -> tuple[str, IntentKind | None]:
    """Return (clean text, problem): control characters become spaces, whitespace is collapsed.

    problem is ``"empty"``, ``"too_long"`` (more than ``max_chars`` characters; the text is then
    not processed at all) or None.
    """
    if not isinstance(text, str):
        return "", EMPTY
    if len(text) > max_chars:
        return "", TOO_LONG
    clean = " ".join(_CONTROL.sub(" ", text).split())
    if not clean:
        return "", EMPTY
    return clean, None


def content_words(text: str) -> list[str]:
    """Return the words of ``text`` that add information beyond feedback."""
    return [w for w in entity_words(text) if is_entity_word(w) and w not in _FEEDBACK_WORDS and w not in _FILLER_WORDS]


def is_short(text: str) -> bool:
    """Return True for a reply of at most ``SHORT_WORDS`` words: one that keyword intents may read."""
    return len(entity_words(text)) <= SHORT_WORDS


def classify(text: str, *, opening: bool = False) -> Intent:
    """Return the intent of a cleaned user turn (see module docstring for the precedence).

    ``opening``: no question is open, so a message longer than a short reply describes a problem (``FOLLOWUP``).
    """
    lowered = text.lower().replace("\u2019", "'").strip()
    constraints = extract_constraints(lowered)
    has_content = bool(content_words(lowered))
    if not lowered:
        return Intent(EMPTY, text)
    short = is_short(lowered)
    reset = RESET_PHRASE.search(lowered)
    if reset and (short or not lowered[:reset.start()].strip(" ,.!:-")):
        return Intent(RESET, text, constraints=constraints, has_content=has_content)
    if opening and not short:
        return Intent(FOLLOWUP, text, constraints=constraints, has_content=has_content)
    if _HANDOFF_REQUEST.search(lowered) or (short and _HANDOFF.search(lowered)):
        return Intent(HANDOFF, text, constraints=constraints, has_content=has_content)
    number = _NUMBER.match(lowered)
    if number:
        return Intent(CHOICE, text, number=int(number.group(1)))
    if _NONE.match(lowered):
        return Intent(NONE_OF_THESE, text)
    if _NO_INFO.match(lowered):  # "I don't have more details" rules out answers that only ask for them
        return Intent(NO_INFO, text, constraints=constraints)
    worked = _CONCLUDE_PHRASE.search(lowered) or (short and _THANKS.search(lowered))
    if _CONCLUDE_SHORT.match(lowered) or (worked and not _NEGATION.search(lowered)):
        return Intent(CONCLUDE, text, has_content=has_content)
    if side_question(lowered) is not None:  # before "still": "is it still safe to drive?" asks, it rejects nothing
        return Intent(SIDE_QUESTION, text, constraints=constraints, has_content=has_content)
    short_still = short and bool(_STILL.search(lowered))
    another = short and bool(_ANOTHER.match(lowered))
    rejects = _REJECT_SHORT.match(lowered) or _REJECT_PHRASE.search(lowered) or short_still or another
    # a longer reply that tells something new ("checked it, was a quart low, topped up, ticking is a bit quieter but
    # still there") is the follow-up C_i the next logged answer was written for, not a bare rejection
    if rejects and (short or not has_content):
        return Intent(REJECT, text, constraints=constraints, has_content=has_content)
    if constraints:
        constraint_words = {w for c in constraints for w in c.words}
        extra = [w for w in content_words(lowered) if w not in constraint_words]
        return Intent(CONSTRAINT, text, constraints=constraints, has_content=bool(extra))
    return Intent(FOLLOWUP, text, has_content=has_content)
