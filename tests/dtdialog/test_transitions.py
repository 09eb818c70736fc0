"""The state machine table: complete, current in its docstring, and every row reached by real turns."""

from __future__ import annotations

import pytest
from engine_helpers import BRAKE_Q, PAPER_C1, PAPER_Q, car_world, text_of

from dtdialog.dialogue import transitions
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

#: One utterance per intent, each classified as that intent (checked below).
UTTERANCES = {
    intents.CONCLUDE: "thanks",
    intents.REJECT: "no",
    intents.RESET: "new question",
    intents.HANDOFF: "human please",
    intents.CHOICE: "2",
    intents.NONE_OF_THESE: "none of these",
    intents.NO_INFO: "I don't know",
    intents.CONSTRAINT: "I can't remove the engine",
    intents.SIDE_QUESTION: "is it safe to drive?",
    intents.FOLLOWUP: text_of(PAPER_C1),
}
#: What each handler may answer with (the reply kind of its turn).
KINDS = {
    "handoff": {"handoff"},
    "reset": {"reset"},
    "greet_or_start": {"prompt"},  # the utterances for its rows carry no content
    "start": {"answer", "clarify", "fallback"},
    "conclude": {"concluded"},
    "ask_again": {"prompt"},
    "retry": {"answer", "clarify", "fallback", "abstain", "handoff"},
    "constrain_answer": {"answer", "clarify", "fallback"},
    "followup": {"answer", "clarify", "fallback"},
    "next_step": {"answer", "clarify", "fallback"},
    "add_detail": {"answer", "clarify", "fallback", "handoff"},
    "conclude_choice": {"concluded"},
    "choose_none": {"answer", "clarify", "fallback", "handoff"},
    "constrain_choice": {"answer", "clarify", "fallback"},
    "unsure_choice": {"answer", "clarify", "fallback", "handoff"},
    "choose": {"answer", "clarify"},
    "none_fits": {"answer", "clarify", "fallback", "handoff"},
    "await_person": {"waiting"},
    "no_detail": {"prompt", "handoff"},  # the utterances for its rows carry no content
    "side_question": {"answer", "side_answer"},
}


def test_utterances_have_the_intent_they_stand_for():
    assert set(UTTERANCES) == set(transitions.INTENTS)
    for kind, text in UTTERANCES.items():
        assert intents.classify(text).kind == kind, text


def test_every_state_answers_every_intent():
    assert set(transitions.TABLE) == set(STATES)
    for state in STATES:
        assert transitions.OTHERWISE in transitions.TABLE[state], state
        assert set(transitions.TABLE[state]) - {transitions.OTHERWISE} <= {*transitions.INTENTS,
                                                                          *transitions.CONTEXT_INTENTS}
        for intent in (*transitions.INTENTS, *transitions.CONTEXT_INTENTS):
            assert transitions.handler_for(state, intent) in transitions.HANDLERS
    # the rows for a person and a new question win everywhere but after the hand-off, where a person is coming
    assert {transitions.handler_for(s, intents.HANDOFF) for s in STATES if s != HANDED_OFF} == {"handoff"}
    assert transitions.handler_for(HANDED_OFF, intents.HANDOFF) == "await_person"
    assert {transitions.handler_for(s, intents.RESET) for s in STATES} == {"reset"}
    # nothing but a new conversation brings the bot back after the hand-off
    assert {transitions.handler_for(HANDED_OFF, i) for i in transitions.INTENTS if i != intents.RESET} == {"await_person"}


def test_every_handler_is_used_and_implemented(tmp_path):
    named = set(transitions.ANY_STATE_ROWS.values()) | {h for rows in transitions.TABLE.values() for h in rows.values()}
    assert named == set(transitions.HANDLERS)
    _, manager, _ = car_world(tmp_path)
    assert set(manager.turns.handlers) == set(transitions.HANDLERS)
    assert all(callable(getattr(manager.turns, f"on_{name}")) for name in transitions.HANDLERS)


def test_the_docstring_shows_the_current_table():
    rendered = transitions.render()
    assert len(rendered.splitlines()) == len(transitions.ANY_STATE_ROWS) + sum(len(r) for r in transitions.TABLE.values())
    indented = "\n".join("    " + line for line in rendered.splitlines())
    assert indented in transitions.__doc__, "regenerate the table in the docstring from transitions.render()"


def _enter(manager, state: str) -> str:
    """Return a new session of ``manager`` brought to ``state`` by real turns."""
    sid = manager.start_session()
    opening = {
        NEW: [],
        AWAITING_FEEDBACK: [text_of(PAPER_Q)],
        AWAITING_CHOICE: [text_of(BRAKE_Q)],
        AWAITING_DETAIL: ["What colour is the sky on Mars?"],
        CONCLUDED: [text_of(PAPER_Q), "thanks"],
        HANDED_OFF: ["human"],
    }[state]
    for text in opening:
        manager.handle(session_id=sid, text=text)
    assert manager.session(sid, traces=False).state == state
    return sid


@pytest.mark.parametrize("state", STATES)
def test_every_row_is_reached_by_a_real_turn(tmp_path, state):
    # the clarification state needs close candidates; the others a single clear answer
    clarify = {"clarify_margin": 1.0, "clarify_ratio": 0.0} if state == AWAITING_CHOICE else {"clarify_margin": 0.0}
    _, manager, _ = car_world(tmp_path, max_failures=5, **clarify)
    called: list[str] = []

    def spy(name, handler):
        def run(*args):
            called.append(name)
            return handler(*args)
        return run

    manager.turns.handlers = {name: spy(name, h) for name, h in manager.turns.handlers.items()}
    for intent, text in UTTERANCES.items():
        sid = _enter(manager, state)
        called.clear()
        result = manager.handle(session_id=sid, text=text)
        expected = transitions.handler_for(state, intent)
        assert called and called[0] == expected, (state, intent, called)
        if expected == "followup":  # a reply with content goes on as the state's fallback row
            assert called[1:2] == [transitions.handler_for(state, transitions.OTHERWISE)], (state, called)
        assert result.kind in KINDS[expected], (state, intent, result.kind, result.reply)
        # with no question open, a turn that starts one is traced as a new question, not as its classified kind
        assert result.trace["intent"] == (intents.NEW_QUESTION if expected == "start" else intent), (state, intent)
