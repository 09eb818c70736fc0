"""The session state machine as data: which handler answers an intent in a state.

``TurnHandlers`` (``dtdialog.dialogue.handlers``) looks a classified turn up here and calls the named handler
(its method ``on_<name>``); the handlers hold only the guards that need the text itself. The table, as
rendered by ``render()`` (a test keeps this copy current)::

    any state         handoff        -> handoff            hand off to a person -> HANDED_OFF
    any state         reset          -> reset              drop the question, or start the one after the reset phrase
    NEW               conclude       -> greet_or_start     greet (invite a question after one) when the reply has no content, else start a question
    NEW               reject         -> greet_or_start     greet (invite a question after one) when the reply has no content, else start a question
    NEW               choice         -> greet_or_start     greet (invite a question after one) when the reply has no content, else start a question
    NEW               none_of_these  -> greet_or_start     greet (invite a question after one) when the reply has no content, else start a question
    NEW               no_info        -> greet_or_start     greet (invite a question after one) when the reply has no content, else start a question
    NEW               *              -> start              out-of-scope check, then plan the text as a new question; answer, clarify, abstain or fall back
    AWAITING_FEEDBACK conclude       -> conclude           the answer worked -> CONCLUDED
    AWAITING_FEEDBACK choice         -> ask_again          nothing to search with: ask for feedback or detail again
    AWAITING_FEEDBACK reject         -> retry              next new, agreeing answer of the part, else the next part, else ask a detail (counts a rejection)
    AWAITING_FEEDBACK none_of_these  -> none_fits          the answer on screen is not it: strong on-topic others, else ask a detail (counts a failure)
    AWAITING_FEEDBACK no_info        -> constrain_answer   record it; retry if it rules the answer out or adds nothing
    AWAITING_FEEDBACK yes_no         -> next_step          the reply is follow-up C_i: rank the next dialogue step
    AWAITING_FEEDBACK constraint     -> constrain_answer   record it; retry if it rules the answer out or adds nothing
    AWAITING_FEEDBACK side_question  -> side_question      a question about the repair: a sure next answer, else what the answers given tell, else say so
    AWAITING_FEEDBACK followup       -> followup           ask again if it has no content, else as the fallback row
    AWAITING_FEEDBACK *              -> next_step          the reply is follow-up C_i: rank the next dialogue step
    AWAITING_CHOICE   conclude       -> conclude_choice    thanks or fixed while options are on offer -> CONCLUDED; a bare ok or yes re-asks
    AWAITING_CHOICE   none_of_these  -> choose_none        none fits: offer strong on-topic others, else ask a detail (counts a failure)
    AWAITING_CHOICE   reject         -> choose_none        none fits: offer strong on-topic others, else ask a detail (counts a failure)
    AWAITING_CHOICE   no_info        -> unsure_choice      the customer cannot tell which option fits: as none fits, but a hand-off says the bot was unsure
    AWAITING_CHOICE   constraint     -> constrain_choice   drop offered answers it rules out; re-offer or deliver
    AWAITING_CHOICE   side_question  -> side_question      a question about the repair: a sure next answer, else what the answers given tell, else say so
    AWAITING_CHOICE   *              -> choose             pick an option by number or phrase, else clarify, open a new problem or re-ask
    AWAITING_DETAIL   conclude       -> conclude           the answer worked -> CONCLUDED
    AWAITING_DETAIL   choice         -> ask_again          nothing to search with: ask for feedback or detail again
    AWAITING_DETAIL   reject         -> no_detail          no answer on screen: words are detail, a bare no means none to give (a failure; the last: closest answers, then a person)
    AWAITING_DETAIL   none_of_these  -> no_detail          no answer on screen: words are detail, a bare no means none to give (a failure; the last: closest answers, then a person)
    AWAITING_DETAIL   no_info        -> add_detail         more words for the step that had no answer: rank it again
    AWAITING_DETAIL   yes_no         -> add_detail         more words for the step that had no answer: rank it again
    AWAITING_DETAIL   side_question  -> side_question      a question about the repair: a sure next answer, else what the answers given tell, else say so
    AWAITING_DETAIL   followup       -> followup           ask again if it has no content, else as the fallback row
    AWAITING_DETAIL   *              -> add_detail         more words for the step that had no answer: rank it again
    CONCLUDED         conclude       -> greet_or_start     greet (invite a question after one) when the reply has no content, else start a question
    CONCLUDED         reject         -> greet_or_start     greet (invite a question after one) when the reply has no content, else start a question
    CONCLUDED         choice         -> greet_or_start     greet (invite a question after one) when the reply has no content, else start a question
    CONCLUDED         none_of_these  -> greet_or_start     greet (invite a question after one) when the reply has no content, else start a question
    CONCLUDED         no_info        -> greet_or_start     greet (invite a question after one) when the reply has no content, else start a question
    CONCLUDED         *              -> start              out-of-scope check, then plan the text as a new question; answer, clarify, abstain or fall back
    HANDED_OFF        reset          -> reset              drop the question, or start the one after the reset phrase
    HANDED_OFF        handoff        -> await_person       handed off: the message joins the transcript; a person will pick it up
    HANDED_OFF        *              -> await_person       handed off: the message joins the transcript; a person will pick it up

Turns that are empty or too long never reach the table (``intents.sanitize``): they get a prompt.
"""

from __future__ import annotations

from dtdialog.dialogue.kinds import IntentKind, State
from dtdialog.dialogue.session import (
    AWAITING_CHOICE,
    AWAITING_DETAIL,
    AWAITING_FEEDBACK,
    CONCLUDED,
    HANDED_OFF,
    NEW,
    STATES,
)
from dtdialog.understanding import intents

#: The key of a state's fallback row: every intent the state does not list.
OTHERWISE = "*"
#: The label of the rows that apply in every state that does not list the intent itself.
ANY_STATE = "any state"

#: Every handler the table names (``TurnHandlers.on_<name>``) and what it does.
HANDLERS: dict[str, str] = {
    "handoff": "hand off to a person -> HANDED_OFF",
    "reset": "drop the question, or start the one after the reset phrase",
    "greet_or_start": "greet (invite a question after one) when the reply has no content, else start a question",
    "start": "out-of-scope check, then plan the text as a new question; answer, clarify, abstain or fall back",
    "conclude": "the answer worked -> CONCLUDED",
    "ask_again": "nothing to search with: ask for feedback or detail again",
    "retry": "next new, agreeing answer of the part, else the next part, else ask a detail (counts a rejection)",
    "constrain_answer": "record it; retry if it rules the answer out or adds nothing",
    "followup": "ask again if it has no content, else as the fallback row",
    "next_step": "the reply is follow-up C_i: rank the next dialogue step",
    "add_detail": "more words for the step that had no answer: rank it again",
    "conclude_choice": "thanks or fixed while options are on offer -> CONCLUDED; a bare ok or yes re-asks",
    "choose_none": "none fits: offer strong on-topic others, else ask a detail (counts a failure)",
    "constrain_choice": "drop offered answers it rules out; re-offer or deliver",
    "unsure_choice": "the customer cannot tell which option fits: as none fits, but a hand-off says the bot was unsure",
    "choose": "pick an option by number or phrase, else clarify, open a new problem or re-ask",
    "none_fits": "the answer on screen is not it: strong on-topic others, else ask a detail (counts a failure)",
    "await_person": "handed off: the message joins the transcript; a person will pick it up",
    "no_detail": "no answer on screen: words are detail, a bare no means none to give (a failure; the last: closest answers, then a person)",
    "side_question": "a question about the repair: a sure next answer, else what the answers given tell, else say so",
}

#: Intents that win in every state that does not list them itself: asking for a person, or for a new question.
ANY_STATE_ROWS: dict[IntentKind, str] = {intents.HANDOFF: "handoff", intents.RESET: "reset"}

# With no question open, a bare "thanks"/"no"/"2" carries nothing to search with.
_IDLE = {intents.CONCLUDE: "greet_or_start", intents.REJECT: "greet_or_start", intents.CHOICE: "greet_or_start",
         intents.NONE_OF_THESE: "greet_or_start", intents.NO_INFO: "greet_or_start", OTHERWISE: "start"}
# Shared by both states where an answer (or a request for detail) is on screen.
_AFTER_REPLY = {intents.CONCLUDE: "conclude", intents.CHOICE: "ask_again", intents.REJECT: "retry",
                intents.NONE_OF_THESE: "retry"}

TABLE: dict[State, dict[str, str]] = {
    NEW: _IDLE,
    # "none of these" after an answer: the next answer must be as strong and on topic as the one on screen; "I don't
    # know" to its check reports no result: the next answer, no rejection counted (asked again for a result, a
    # customer who had none was asked the same thing turn after turn); a bare yes to the bot's own yes/no question
    # is the reply C_i the next step waits for
    AWAITING_FEEDBACK: {**_AFTER_REPLY, intents.NONE_OF_THESE: "none_fits", intents.NO_INFO: "constrain_answer",
                        intents.YES_NO: "next_step",
                        intents.CONSTRAINT: "constrain_answer",
                        intents.SIDE_QUESTION: "side_question", intents.FOLLOWUP: "followup", OTHERWISE: "next_step"},
    # "no", "nope", "didn't help" while options are on offer reject them all: the same as "none of these"
    AWAITING_CHOICE: {intents.CONCLUDE: "conclude_choice", intents.NONE_OF_THESE: "choose_none",
                      intents.REJECT: "choose_none", intents.NO_INFO: "unsure_choice",
                      intents.CONSTRAINT: "constrain_choice",
                      intents.SIDE_QUESTION: "side_question", OTHERWISE: "choose"},
    # no answer is on screen: "no" rejects nothing, it is detail (or nothing to search with); a constraint is detail too
    # "I don't have more details" is ranked with, as any detail: read as a bare no, it cost the simulated Twitter
    # customer the right answer among the closest ones (docs/benchmarks.md)
    AWAITING_DETAIL: {**_AFTER_REPLY, intents.REJECT: "no_detail", intents.NONE_OF_THESE: "no_detail",
                      intents.NO_INFO: "add_detail", intents.YES_NO: "add_detail",
                      intents.SIDE_QUESTION: "side_question", intents.FOLLOWUP: "followup", OTHERWISE: "add_detail"},
    CONCLUDED: _IDLE,
    # the bot's side is over until the customer starts a new conversation; asking for a person again changes nothing
    HANDED_OFF: {intents.RESET: "reset", intents.HANDOFF: "await_person", OTHERWISE: "await_person"},
}

#: Intents the dispatcher decides from the turn and what the bot last asked (``TurnHandlers._answers_question``).
CONTEXT_INTENTS = (intents.YES_NO,)
#: Intents a classified turn can have (``EMPTY`` and ``TOO_LONG`` are decided before classification).
INTENTS = (intents.CONCLUDE, intents.REJECT, intents.RESET, intents.HANDOFF, intents.CHOICE, intents.NONE_OF_THESE,
           intents.NO_INFO, intents.CONSTRAINT, intents.SIDE_QUESTION, intents.FOLLOWUP)


def handler_for(state: State, intent: IntentKind | str) -> str:
    """Return the name of the handler for ``intent`` in ``state``: the state's row, else the any-state row, else
    the state's fallback row."""
    rows = TABLE[state]
    if intent in rows:
        return rows[intent]
    return ANY_STATE_ROWS.get(intent, rows[OTHERWISE])


def opens_question(state: State, intent: intents.Intent) -> bool:
    """Return True when ``intent`` starts a new question in ``state``: the start row, or a greet row with content."""
    handler = handler_for(state, intent.kind)
    return handler == "start" or (handler == "greet_or_start" and intent.has_content)


def render() -> str:
    """Return the table as aligned text lines: state, intent, handler, what the handler does."""
    rows = [(ANY_STATE, intent, name) for intent, name in ANY_STATE_ROWS.items()]
    for state in STATES:
        listed = TABLE[state]
        rows += [(state, intent, listed[intent]) for intent in listed if intent != OTHERWISE]
        rows.append((state, OTHERWISE, listed[OTHERWISE]))
    return "\n".join(f"{state:<17} {intent:<14} -> {name:<18} {HANDLERS[name]}".rstrip() for state, intent, name in rows)
