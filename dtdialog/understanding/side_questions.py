"""A customer's question about the repair itself, asked mid-dialogue: is it safe to drive, what does it cost, is it
covered by the warranty, where is the part, how long does it take, how hard is the job.

Asked under an answer, "is it safe to drive?" was read as one more detail of the problem: the bot abstained or offered
three guesses ("Check the transaxle fluid level" under a grinding brake), though the answer on screen said "I would
not drive it". Such a question is first ranked as the next step, as any reply is (a corpus with an answer for it gives
that answer); when no answer is sure, ``told_in`` finds the sentence of the answers already given that tells it, and
otherwise the bot says plainly that its answers do not tell it.

Only a short message that asks (a "?", or a question word first) is read so: "it's not safe to drive anymore because
the brakes pull" describes the problem.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from index.vocabulary import SENTENCE_BREAK, is_content_word, words_of

SAFETY, COST, WARRANTY, PLACE, DURATION, DIFFICULTY = "safety", "cost", "warranty", "place", "duration", "difficulty"

#: What the question asks, by the words asking it, in the order they are tried.
_ASKS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (SAFETY, re.compile(r"^(?:is|are) (?:it|this|that|they)(?: still)? (?:safe|dangerous|unsafe)\b|"
                        r"\b(?:safe|dangerous|okay|ok|alright|fine)\b[^.?!]*\bdriv|"
                        r"\b(?:can|could|should|may) i (?:still |keep )?(?:driv|use it)|\bdriv\w* it\b[^.?!]*\b(?:safe|ok)")),
    # "how much" alone asks a quantity too: "how much oil should I add?"
    (COST, re.compile(r"\bhow much\b[^.?!]*\b(?:cost|charge|pay|run me|(?:would|will|is) (?:it|that|this)(?: be)?)\b|"
                      r"\bhow much (?:to|for)\b|\bcosts?\b|\bprice\b|\bexpensive\b|\bcheap\b")),
    (WARRANTY, re.compile(r"\bwarrant(?:y|ies)\b|\brecalls?\b|\bcovered\b")),
    (DURATION, re.compile(r"\bhow long\b[^.?!]*\b(?:take|takes|last|repair|fix|job)\b")),
    (PLACE, re.compile(r"\bwhere(?:'s| is| are| do i find| can i find| would i find| exactly)\b")),
    # whether the customer can do the job: "how hard is that job?", "can I do it myself?", "do I need a mechanic?"
    (DIFFICULTY, re.compile(r"\bhow (?:hard|difficult|easy|complicated|tricky)\b|\bhow big (?:a|of a) (?:job|deal|repair)\b|"
                            r"\bdiy\b|"
                            r"\b(?:can|could|should) i (?:do|fix|replace|change|swap) (?:it|this|that|them)"
                            r"(?: \w+)?(?: myself| at home)\b|\b(?:need|take it to) (?:a |the )?(?:mechanic|shop|"
                            r"professional|pro|dealer)\b")),
)
#: The words of an answer's sentence that tell it.
_TELLS: dict[str, re.Pattern[str]] = {
    SAFETY: re.compile(r"\b(?:safe|unsafe|safety|dangerous|(?:don't|do not|not|never|stop) (?:drive|driving)|"
                       r"tow(?:ed|ing)?|drive it (?:gently|carefully|short))\b", re.I),
    COST: re.compile(r"\$\s?\d|\b(?:cost|costs|price|prices|expensive|cheap|labou?r)\b", re.I),
    WARRANTY: re.compile(r"\b(?:warrant(?:y|ies)|recalls?|service bulletins?|TSBs?|covered)\b", re.I),
    # the time a job takes, not any time ("turn off the AC a few minutes before you arrive")
    DURATION: re.compile(r"\b(?:takes?|took|job|labou?r)\b[^.;]*\b(?:\d+|an?|one|two|few|couple of) (?:hours?|minutes?|days?)"
                         r"\b|\b(?:\d+|an?|one|two|few|couple of) (?:hours?|minutes?|days?) (?:of (?:work|labou?r)|job)\b",
                         re.I),
    DIFFICULTY: re.compile(r"\b(?:simple|easy|straightforward|difficult|hard|tricky|involved|big) (?:job|fix|repair|"
                           r"one|to do)\b|\b(?:diy|yourself|professional|a shop|special tools?|requires? removing|"
                           r"(?:needs?|requires?) (?:a |the )?(?:lift|scan tool|press))\b", re.I),
    PLACE: re.compile(r"\b(?:located|under|behind|beside|next to|near|inside|on top of|below|above|"
                      r"in the (?:engine bay|trunk|dash|footwell|kick panel))\b", re.I),
}
_ASKING = re.compile(r"\?\s*$|^(?:is|are|can|could|should|may|will|would|how|where|what|when|do|does)\b")
#: Question words that name nothing the answer must share ("where is the fuse box" must share "fuse box").
_ASKING_WORDS = frozenset("""where where's is are the a an my it it's this that do does i find can could would exactly
located
""".split())
#: The words of a safety question that ask whether, not what: "is it still safe", "is that ok".
_SAFETY_WORDS = frozenset("safe unsafe dangerous okay ok alright fine still keep use now".split())
#: Messages longer than this describe rather than ask.
MAX_WORDS = 10


def side_question(text: str) -> str | None:
    """Return what a short question about the repair asks (``SAFETY``, ``COST``, ``WARRANTY``, ``DURATION``,
    ``PLACE``, ``DIFFICULTY``), or None."""
    lowered = " ".join(text.lower().replace("\u2019", "'").split())
    if not lowered or len(lowered.split()) > MAX_WORDS or not _ASKING.search(lowered):
        return None
    return next((kind for kind, asks in _ASKS if asks.search(lowered)), None)


def told_in(kind: str, question: str, answers: Sequence[str]) -> str | None:
    """Return the first sentence of ``answers`` (the latest first) that tells what ``question`` asks, or None.

    A place must be the place of what was asked: the sentence also names the question's own words. Safety asked of
    something other than driving ("is it safe to tap the starter?") must be told of it: the sentence shares a word.
    """
    asked = set(words_of(question)) - _ASKING_WORDS
    # "is it safe to tap the starter with a hammer?" asks about tapping, not driving: a sentence on driving is no answer
    doing = {w for w in asked - _SAFETY_WORDS if is_content_word(w)} if kind == SAFETY else set()
    if any(w.startswith("driv") for w in asked):
        doing = set()
    for answer in answers:
        for sentence in SENTENCE_BREAK.split(answer.strip()):
            if not _TELLS[kind].search(sentence):
                continue
            if doing and not doing & set(words_of(sentence)):
                continue
            if kind != PLACE or (asked and asked <= set(words_of(sentence))):
                return sentence.strip()
    return None
