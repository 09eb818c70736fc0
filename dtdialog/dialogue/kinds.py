"""The dialogue's closed vocabularies: session states, turn intents and reply kinds.

Each is a ``str`` enum whose values are what session records, traces, API JSON and conversation tests store, so a
member compares, hashes, prints and serialises as its plain value (``State.NEW == "NEW"``).
"""

from __future__ import annotations

from enum import Enum


class _Value(str, Enum):
    """A ``str`` enum that prints as its value (``str(State.NEW) == "NEW"``), as ``format`` and JSON already do."""

    def __str__(self) -> str:
        return str.__str__(self)


class State(_Value):
    """Where a session stands; ``dtdialog.dialogue.transitions.TABLE`` says which handler answers each intent in it."""

    NEW = "NEW"
    AWAITING_FEEDBACK = "AWAITING_FEEDBACK"
    AWAITING_CHOICE = "AWAITING_CHOICE"
    AWAITING_DETAIL = "AWAITING_DETAIL"
    CONCLUDED = "CONCLUDED"
    HANDED_OFF = "HANDED_OFF"


class IntentKind(_Value):
    """What a user turn means (``dtdialog.understanding.intents.classify``), or why it was not classified."""

    #: decided before classification (``intents.sanitize``): the turn gets a prompt
    EMPTY = "empty"
    TOO_LONG = "too_long"
    CONCLUDE = "conclude"
    REJECT = "reject"
    RESET = "reset"
    HANDOFF = "handoff"
    CHOICE = "choice"
    NONE_OF_THESE = "none_of_these"
    #: "I don't know", "no more details": the customer has nothing to tell (no detail, no result, no pick)
    NO_INFO = "no_info"
    CONSTRAINT = "constraint"
    FOLLOWUP = "followup"
    #: a short question about the repair itself: is it safe to drive, what does it cost, where is the part
    SIDE_QUESTION = "side_question"
    #: not a classification: a bare yes or no that answers the bot's own yes/no question on screen ("Does the fan come
    #: on with the AC?" - "yes"), decided by the dispatcher, which knows the question; ``classify`` reads it as
    #: conclude or reject
    YES_NO = "yes_no"
    #: not a classification: what the trace calls a turn that opens a question (no question was open), whatever
    #: ``classify`` made of its words - ``FOLLOWUP`` is only its default for text that is none of the above
    NEW_QUESTION = "new_question"


class ReplyKind(_Value):
    """What the bot's reply to a turn is (``TurnResult.kind``)."""

    ANSWER = "answer"
    CLARIFY = "clarify"
    FALLBACK = "fallback"
    #: calibrated confidence: not answering when the engine is unsure
    ABSTAIN = "abstain"
    #: an opening in the domain that says too little to search with: the bot asks for the detail
    ASK_DETAIL = "ask_detail"
    HANDOFF = "handoff"
    #: a question about the repair answered from the answers already given, or "my answers do not tell"
    SIDE_ANSWER = "side_answer"
    #: a message after the hand-off: it joins the transcript for the person, the bot does not answer it
    WAITING = "waiting"
    #: the out-of-scope gate refused a new question: nothing was retrieved
    OUT_OF_SCOPE = "out_of_scope"
    CONCLUDED = "concluded"
    PROMPT = "prompt"
    RESET = "reset"
