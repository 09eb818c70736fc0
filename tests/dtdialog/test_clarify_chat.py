"""Clarification in chat on the built-in corpus (issue 13, item 6): readable labels, "no" understood, no loops.

Each test reproduces a failure a user met: keyword-list options, "No, that didn't help" answered with
"could not match" again and again, and "none of these" leading to an answer about something never
mentioned. The engine is the rule-parser build of the built-in corpus, driven through ``DialogueManager``.
"""

from __future__ import annotations

import re

import pytest

from dtdialog.dialogue.manager import MAX_REPROMPTS
from dtdialog.dialogue.session import AWAITING_CHOICE, AWAITING_DETAIL, HANDED_OFF
from dtdialog.selection.clarification import MAX_LABEL_CHARS, NONE_LABEL
from dtdialog.setup.engine_config import EngineConfig

#: Short questions that the built-in corpus answers with a choice between close candidates.
BROAD = ["My car is leaking fluid.", "The engine overheats in summer.", "The check engine light is on.", "My car won't start.",
         "The AC blows warm air.", "The heater does not work.", "The engine is misfiring."]
#: Every way of saying "none of the offered answers fits" the issue lists.
NONE_REPLIES = ["no", "neither", "none of these", "didn't help", "that didn't help", "No, that didn't help", "nope",
                "neither of them"]


@pytest.fixture(autouse=True)
def rule_ranking(monkeypatch):
    """Pin the rule scorer: these tests check the DT-Q engine's own choices, not a trained ranker's."""
    monkeypatch.setenv("DTDIALOG_RANKER", "rules")


@pytest.fixture(scope="module")
def index_path(builtin_rules_index):
    """Return the built-in corpus indexed once with the rule parser."""
    return builtin_rules_index


def _engine(index_path, tmp_path, **config):
    from dtdialog.setup.assembly import EngineSpec, build_engine
    from parsers.base import get_parser

    # options on these short, broad openings and the replies to them are this file's subject: with the brief-opening
    # bar (tested in test_dialogue_goes_on) most would first be asked for a detail, so it is off here
    config.setdefault("brief_words", 0)

    spec = EngineSpec(index_path=index_path, ranker="rules", sessions_path=tmp_path / "sessions.sqlite",
                      config=EngineConfig.from_dict(config))
    return build_engine(spec, parser=get_parser("rules"), progress=False)


@pytest.fixture
def engine(index_path, tmp_path):
    eng = _engine(index_path, tmp_path)
    yield eng
    eng.close()


def _clarified(manager, questions=BROAD):
    """Yield (session id, question, first turn) for the questions that get options."""
    for question in questions:
        sid = manager.start_session()
        first = manager.handle(session_id=sid, text=question)
        if first.kind == "clarify":
            yield sid, question, first


def _flat(text: str) -> str:
    return " ".join(text.split()).lower()


def test_options_are_clauses_of_their_answers_never_keyword_lists(engine):
    seen = 0
    for _, _, first in _clarified(engine.manager):
        seen += 1
        labels = [o.label for o in first.options]
        assert labels[-1] == NONE_LABEL and len(set(labels)) == len(labels)
        for option in first.options[:-1]:
            answer = engine.selector.document(option.answer_id).text
            # a piece of the answer's own text: a list of keywords gathered across it would not be one
            assert _flat(option.label) in _flat(answer), (option.label, answer)
            assert 3 <= len(option.label.split()) and len(option.label) <= MAX_LABEL_CHARS
            assert option.label in first.reply
    assert seen >= 3, "the broad questions no longer get options: pick others that do"


def test_no_that_didnt_help_while_options_are_on_offer_is_none_of_these(engine):
    manager = engine.manager
    for reply in NONE_REPLIES:
        sid, question, first = next(_clarified(manager, ["My car is leaking fluid."]))
        result = manager.handle(session_id=sid, text=reply)
        assert "could not match" not in result.reply, (reply, result.reply)
        assert result.kind in ("clarify", "answer", "fallback", "handoff")
        offered = {o.answer_id for o in first.options if o.answer_id}
        assert not offered & {o.answer_id for o in result.options}      # never the same options again
        assert result.answer_id not in offered
        assert manager.session(sid).traces[-1]["intent"] in ("reject", "none_of_these")


def _first_step(selector, question, size):
    return {c.document.id: c for c in selector.rank_outcome(question=question, size=size).candidates}


@pytest.mark.parametrize("max_failures", [2, 4])
def test_none_of_these_never_leads_to_an_answer_off_the_topic(index_path, tmp_path, max_failures):
    eng = _engine(index_path, tmp_path, max_failures=max_failures)
    config, manager = eng.selector.config, eng.manager
    try:
        for sid, question, first in _clarified(manager):
            ranked = _first_step(eng.selector, question, config.retrieval.candidates)
            offered = [ranked[o.answer_id] for o in first.options if o.answer_id]
            best_score = max(c.score for c in offered)
            best_topic = max(c.features["topic"] for c in offered)
            result = first
            for _ in range(max_failures + 1):
                result = manager.handle(session_id=sid, text="none of these")
                new = [o.answer_id for o in result.options if o.answer_id] + [result.answer_id or ""]
                for answer_id in filter(None, new):
                    # every later candidate is as strong and as much on the topic as the first options
                    cand = ranked.get(answer_id)
                    assert cand is not None, f"{question}: {answer_id} was not a candidate of the question"
                    assert cand.features["topic"] >= config.clarify.clarify_ratio * best_topic, (question, answer_id)
                    assert cand.score >= config.clarify.clarify_ratio * best_score, (question, answer_id)
                if result.kind != "clarify":
                    break
            assert result.kind in ("answer", "fallback", "handoff"), question
            assert manager.session(sid).failures <= max_failures
    finally:
        eng.close()


def test_repeated_none_of_these_ends_in_the_hand_off_with_the_transcript(engine):
    manager = engine.manager
    sid, _, _ = next(_clarified(manager, ["My car is leaking fluid."]))
    kinds = []
    for _ in range(engine.selector.config.dialogue.max_failures + 1):
        result = manager.handle(session_id=sid, text="none of these")
        kinds.append(result.kind)
        if result.kind == "handoff":
            break
    assert kinds[-1] == "handoff" and result.state == HANDED_OFF
    assert manager.replies.handoff_none_fit in result.reply
    decision = manager.session(sid).traces[-1]["decision"]
    assert decision["transcript"][0]["text"] == "My car is leaking fluid."


def test_the_detail_question_then_the_hand_off_when_the_detail_finds_nothing(index_path, tmp_path):
    eng = _engine(index_path, tmp_path, max_failures=5)
    manager = eng.manager
    try:
        reached = 0
        for sid, _, _ in _clarified(manager):
            result = None
            for _ in range(4):
                result = manager.handle(session_id=sid, text="neither")
                if result.kind != "clarify":
                    break
            if result.state != AWAITING_DETAIL:
                continue
            reached += 1
            assert result.reply == manager.replies.none_fit_text(result.trace["decision"]["missing_detail"])
            after = manager.handle(session_id=sid, text="purple elephants")
            assert after.kind == "handoff" and after.state == HANDED_OFF, after.reply
            assert manager.replies.handoff_no_detail in after.reply
        assert reached >= 1, "no broad question reached the detail question: pick others that do"
    finally:
        eng.close()


def test_a_useful_detail_after_the_detail_question_is_answered(index_path, tmp_path):
    eng = _engine(index_path, tmp_path, max_failures=5)
    manager = eng.manager
    try:
        sid, _, _ = next(_clarified(manager, ["The engine overheats in summer."]))
        result = None
        for _ in range(4):
            result = manager.handle(session_id=sid, text="none of these")
            if result.kind != "clarify":
                break
        if result.state != AWAITING_DETAIL:
            pytest.skip("the overheating question no longer reaches the detail question")
        after = manager.handle(session_id=sid, text="only when I sit in traffic, the fan never comes on")
        assert after.kind in ("answer", "clarify")
        shown = after.reply if after.kind == "answer" else " ".join(
            eng.selector.document(o.answer_id).text for o in after.options if o.answer_id)
        assert re.search(r"\b(traffic|fan)\b", shown.lower())
    finally:
        eng.close()


def test_purple_elephants_cannot_keep_the_options_on_screen(engine):
    manager = engine.manager
    sid, _, first = next(_clarified(manager))
    results = [manager.handle(session_id=sid, text="purple elephants") for _ in range(4 * (MAX_REPROMPTS + 1))]
    unmatched = [r for r in results if "could not match" in r.reply]
    # at most MAX_REPROMPTS re-listings per set of options, and the loop ends with a person
    assert len(unmatched) <= MAX_REPROMPTS * engine.selector.config.dialogue.max_failures
    assert any(r.kind == "handoff" for r in results)
    assert results[MAX_REPROMPTS].options != first.options or results[MAX_REPROMPTS].state != AWAITING_CHOICE
    handed = next(k for k, r in enumerate(results) if r.kind == "handoff")
    assert all(r.kind != "answer" for r in results[:handed])       # made-up words never got a guess


PAPER_Q = ("I have checked the spark plugs, replaced the battery, also replaced ignition coils and the solenoid, "
           "but I still could not start my car.")


def test_none_of_these_after_an_answer_never_moves_to_another_system(engine):
    # the paper's question is answered at once; "none of these" used to bring the HVAC blend-door answer
    manager, config = engine.manager, engine.selector.config
    sid = manager.start_session()
    first = manager.handle(session_id=sid, text=PAPER_Q)
    assert first.kind == "answer"
    ranked = _first_step(engine.selector, PAPER_Q, config.retrieval.candidates)
    bar = ranked[first.answer_id]
    result = manager.handle(session_id=sid, text="none of these")
    assert "could not match" not in result.reply
    for answer_id in filter(None, [result.answer_id, *(o.answer_id for o in result.options)]):
        assert answer_id in ranked, f"{answer_id} is not even a candidate of the question"
        assert ranked[answer_id].features["topic"] >= config.clarify.clarify_ratio * bar.features["topic"], answer_id
        assert ranked[answer_id].score >= config.clarify.clarify_ratio * bar.score, answer_id
    if result.state == AWAITING_DETAIL:
        # the customer said what happens and to what: the question asks for what is missing, never for those again
        detail = result.trace["decision"]["missing_detail"]
        assert detail not in ("symptom", "part") and result.reply == manager.replies.none_fit_text(detail)
        assert "which part" not in result.reply and "what exactly happens" not in result.reply
        # a detail that names nothing in the corpus ends with a person, not a guess
        assert manager.handle(session_id=sid, text="purple elephants").kind == "handoff"


def test_a_report_of_what_was_done_under_options_is_no_pick(engine):
    """Under options on a misfire, "I replaced the spark plug in cylinder 1" was read as picking the option that names
    the plug, and its answer (which suspects a worn plug) was delivered. A report is detail: the step is ranked
    again with it, and the plug it names is remembered as done."""
    manager, reported = engine.manager, 0
    for sid, _, first in _clarified(manager):
        part = next((w for o in first.options[:-1] for w in ("battery", "thermostat", "coolant", "plug", "fuse",
                                                               "compressor", "hose", "relay", "sensor", "fluid",
                                                               "door", "pedal")
                     if w in o.label.lower()), None)
        if part is None:
            continue
        reported += 1
        turn = manager.handle(session_id=sid, text=f"I already replaced the {part} last week")
        notes = " ".join(map(str, turn.trace.get("notes", [])))
        assert "tells more instead of picking" in notes, (part, turn.trace)
        assert not any("user chose option" in str(n) for n in turn.trace.get("notes", []))
        assert any(part in " ".join(a["objects"]) or part in a["text"] for a in manager.store.load(sid).tried)
    assert reported >= 1


def test_new_words_the_index_knows_are_detail_and_made_up_ones_are_not(engine):
    """"already did an alignment last month" under options got "Sorry, I could not match that to an option"."""
    manager, selector = engine.manager, engine.selector
    sid, _, first = next(_clarified(manager, ["My car is leaking fluid."]))
    offered = frozenset().union(*(selector.terms_of_text(selector.document(o.answer_id).text)
                                  for o in first.options if o.answer_id))
    # words the index knows but no offered answer has, so the reply cannot pick or clarify one
    reply = next(r for r in ("already did an alignment last month", "the wipers squeak too", "it smells like syrup")
                 if not selector.terms_of_text(r) & offered)
    told = manager.handle(session_id=sid, text=reply)
    assert "could not match" not in told.reply
    assert "tells more instead of picking" in " ".join(map(str, told.trace.get("notes", [])))
    sid, _, first = next(_clarified(manager, ["My car is leaking fluid."]))
    made_up = manager.handle(session_id=sid, text="purple elephants")
    assert "could not match" in made_up.reply and made_up.options == first.options


def test_a_bare_ok_or_yes_under_options_is_no_goodbye(engine):
    """Found by trying the chat: options, then "ok", then "Glad to help! Come back any time.": the session ended on a
    reply that picked nothing and thanked no one (and "yes" to "does one of them match your situation?" means one
    does). Thanks, or a problem said fixed, still ends it."""
    manager = engine.manager
    for reply in ("ok", "yes"):
        sid, _, first = next(_clarified(manager))
        turn = manager.handle(session_id=sid, text=reply)
        assert turn.kind == "clarify" and turn.state == AWAITING_CHOICE, (reply, turn.reply)
        assert [o.answer_id for o in turn.options] == [o.answer_id for o in first.options]
    for reply in ("thanks", "ok thanks, that fixed it"):
        sid, _, _ = next(_clarified(manager))
        assert manager.handle(session_id=sid, text=reply).kind == "concluded", reply
