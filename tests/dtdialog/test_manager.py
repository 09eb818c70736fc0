"""Session paths through the dialogue manager on a small hand-built answer index."""

from __future__ import annotations

import threading

import pytest
from engine_helpers import BRAKE_Q, CONSTRAINT_Q, PAPER_C1, PAPER_Q, car_world, text_of

from dtdialog.dialogue.manager import DialogueManager
from dtdialog.dialogue.session import (
    AWAITING_CHOICE,
    AWAITING_DETAIL,
    AWAITING_FEEDBACK,
    CONCLUDED,
    HANDED_OFF,
    NEW,
    SessionNotFoundError,
    SessionRecord,
)
from dtdialog.dialogue.session_store import SessionStore


def test_paper_flow_two_steps_then_conclude(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    sid = manager.start_session()
    first = manager.handle(session_id=sid, text=text_of(PAPER_Q))
    assert first.kind == "answer" and first.answer_id == "nostart#1" and "spark" in first.reply
    assert first.trace["question_tree"]["nodes"][0]["relation"] == "Contrast"
    second = manager.handle(session_id=sid, text=text_of(PAPER_C1))
    assert second.kind == "answer" and second.answer_id == "nostart#3"
    chosen = next(c for c in second.trace["candidates"] if c["id"] == "nostart#3")
    assert chosen["agreement"]["verdict"] and chosen["features"]["continuation"] == 1.0
    assert any("-> Contrast[" in ch or "-> Condition[" in ch for ch in chosen["agreement"]["chains"])
    done = manager.handle(session_id=sid, text="thanks, that fixed it")
    assert done.kind == "concluded" and done.state == CONCLUDED
    assert done.reply == manager.replies.concluded  # it worked: glad it is sorted
    record = manager.session(sid)
    assert record.delivered == ["nostart#1", "nostart#3"]
    assert [m["role"] for m in record.transcript] == ["user", "bot"] * 3


def test_reject_gives_next_candidate_never_repeats_then_hands_off(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0, max_failures=3)
    sid = manager.start_session()
    seen = [manager.handle(session_id=sid, text=text_of(PAPER_Q)).answer_id]
    for _ in range(2):
        result = manager.handle(session_id=sid, text="that didn't help")
        assert result.kind == "answer" and result.answer_id not in seen
        seen.append(result.answer_id)
    assert len(set(seen)) == 3
    handoff = manager.handle(session_id=sid, text="no")
    assert handoff.kind == "handoff" and handoff.state == HANDED_OFF
    transcript = handoff.trace["decision"]["transcript"]
    assert transcript[0]["text"] == text_of(PAPER_Q) and transcript[-1]["text"] == "no"


def test_explicit_handoff(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    sid = manager.start_session()
    manager.handle(session_id=sid, text=text_of(PAPER_Q))
    result = manager.handle(session_id=sid, text="Can I speak to a human agent please?")
    assert result.kind == "handoff" and manager.session(sid).state == HANDED_OFF
    assert len(result.trace["decision"]["transcript"]) == 3


def test_clarification_by_phrase_after_an_unmatched_reply(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=1.0, clarify_ratio=0.0)
    sid = manager.start_session()
    ask = manager.handle(session_id=sid, text=text_of(BRAKE_Q))
    assert ask.kind == "clarify" and ask.state == AWAITING_CHOICE
    labels = [o.label for o in ask.options]
    assert labels[-1] == "none of these" and len(ask.options) == 3
    assert not any(o.label.startswith(("Condition", "Cause")) or "#" in o.label for o in ask.options)
    again = manager.handle(session_id=sid, text="what about the tires?")
    assert again.kind == "clarify" and again.state == AWAITING_CHOICE and "could not match" in again.reply
    grease = next(o for o in ask.options if "grease" in o.label)
    picked = manager.handle(session_id=sid, text="the grease one")
    assert picked.kind == "answer" and picked.answer_id == grease.answer_id


def test_clarification_by_number_and_none_of_these(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=1.0, clarify_ratio=0.0)
    sid = manager.start_session()
    ask = manager.handle(session_id=sid, text=text_of(PAPER_Q))
    assert ask.kind == "clarify"
    offered = {o.answer_id for o in ask.options if o.answer_id}
    nxt = manager.handle(session_id=sid, text="none of these")
    assert nxt.kind in ("answer", "fallback")
    if nxt.kind == "answer":
        assert nxt.answer_id not in offered
    sid2 = manager.start_session()
    ask2 = manager.handle(session_id=sid2, text=text_of(PAPER_Q))
    picked = manager.handle(session_id=sid2, text="2")
    assert picked.answer_id == ask2.options[1].answer_id


def test_constraint_in_question_filters_candidates_and_shows_in_trace(tmp_path):
    selector, manager, _ = car_world(tmp_path, clarify_margin=0.0, constraint_penalty=1.0)
    free = selector.rank(question=text_of(CONSTRAINT_Q))
    assert free[0].document.id == "chain#1"  # without the constraint the engine-removal answer wins
    sid = manager.start_session()
    result = manager.handle(session_id=sid, text=text_of(CONSTRAINT_Q))
    assert result.kind == "answer" and result.answer_id != "chain#1"
    step = result.trace["steps"][0]
    assert step["constraints"][0]["words"] == ["remove", "engine"]
    assert "chain#1" in [c["id"] for c in step["rejected"]]


def test_constraint_after_answer_retries_same_step(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0, constraint_penalty=1.0)
    sid = manager.start_session()
    # the question without its constraint sentence (a one-EDU, factual tree for the table parser)
    first = manager.handle(session_id=sid, text=text_of(CONSTRAINT_Q).replace(" I can't remove the engine.", ""))
    assert first.answer_id == "chain#1"
    second = manager.handle(session_id=sid, text="I can't remove the engine")
    assert second.kind == "answer" and second.answer_id != "chain#1"
    assert manager.session(sid).constraints[0]["words"] == ["remove", "engine"]
    assert manager.session(sid).failures == 0


def test_fallback_then_handoff_on_repeated_failure(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0, max_failures=2)
    sid = manager.start_session()
    first = manager.handle(session_id=sid, text="What colour is the sky on Mars?")
    assert first.kind == "fallback" and first.state == AWAITING_DETAIL and "sky" in first.reply
    second = manager.handle(session_id=sid, text="Really, the Martian sky at sunset")
    assert second.kind == "handoff"


def test_reset_and_new_question_in_one_message(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    sid = manager.start_session()
    manager.handle(session_id=sid, text=text_of(PAPER_Q))
    reset = manager.handle(session_id=sid, text="new question")
    assert reset.kind == "reset" and reset.state == NEW
    fresh = manager.handle(session_id=sid, text="new question: " + text_of(BRAKE_Q))
    assert fresh.kind == "answer" and fresh.answer_id.startswith("brakes#")
    assert manager.session(sid).question == text_of(BRAKE_Q)


def test_restart_continues_the_session(tmp_path):
    selector, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    sid = manager.start_session()
    first = manager.handle(session_id=sid, text=text_of(PAPER_Q))
    manager.store.close()
    store = SessionStore(tmp_path / "sessions.sqlite")
    restarted = DialogueManager(selector=selector, store=store, config=selector.config)
    assert restarted.session(sid).state == AWAITING_FEEDBACK
    nxt = restarted.handle(session_id=sid, text="no")
    assert nxt.kind == "answer" and nxt.answer_id != first.answer_id
    assert restarted.session(sid).delivered == [first.answer_id, nxt.answer_id]


def test_concurrent_sessions_do_not_mix(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    questions = [text_of(PAPER_Q), text_of(BRAKE_Q)] * 4
    sids = [manager.start_session() for _ in questions]
    errors: list[BaseException] = []

    def run(sid: str, question: str) -> None:
        try:
            manager.handle(session_id=sid, text=question)
            manager.handle(session_id=sid, text="no")
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(s, q)) for s, q in zip(sids, questions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for sid, question in zip(sids, questions):
        record = manager.session(sid)
        assert record.question == question
        assert [m["text"] for m in record.transcript if m["role"] == "user"] == [question, "no"]
        family = "brakes#" if "brake" in question else ("nostart#", "coil#", "chain#")
        assert record.delivered and record.delivered[0].startswith(family)
        assert len(record.delivered) == len(set(record.delivered))


def test_bad_input_gets_prompts_and_keeps_the_session(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=1.0, clarify_ratio=0.0)
    sid = manager.start_session()
    assert manager.handle(session_id=sid, text="").kind == "prompt"
    huge = manager.handle(session_id=sid, text="a" * 100_000)
    assert huge.kind == "prompt" and "too long" in huge.reply and huge.state == NEW
    noisy = manager.handle(session_id=sid, text="\x00\x1b" + text_of(BRAKE_Q) + "\x07")
    assert noisy.kind == "clarify"
    assert manager.session(sid).question == text_of(BRAKE_Q)
    empty_in_choice = manager.handle(session_id=sid, text="   ")
    assert empty_in_choice.kind == "prompt" and empty_in_choice.options and empty_in_choice.state == AWAITING_CHOICE
    assert manager.session(sid).state == AWAITING_CHOICE


def test_a_turn_at_the_limit_is_answered_and_one_over_it_is_refused_with_the_limit(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    limit = manager.config.dialogue.max_input_chars
    question = text_of(PAPER_Q)
    sid = manager.start_session()
    over = manager.handle(session_id=sid, text=question + " " * (limit + 1 - len(question)))
    assert over.kind == "prompt" and over.state == NEW and f"over {limit} characters" in over.reply
    at = manager.handle(session_id=sid, text=question + " " * (limit - len(question)))
    assert at.kind == "answer" and at.answer_id == "nostart#1"
    assert manager.session(sid).question == question


def test_unknown_session_raises(tmp_path):
    _, manager, _ = car_world(tmp_path)
    with pytest.raises(SessionNotFoundError):
        manager.handle(session_id="nope", text="hello")
    with pytest.raises(SessionNotFoundError):
        manager.session("nope")


def test_turn_result_and_session_serialise(tmp_path):
    import json

    _, manager, _ = car_world(tmp_path, clarify_margin=1.0, clarify_ratio=0.0)
    sid = manager.start_session()
    result = manager.handle(session_id=sid, text=text_of(BRAKE_Q))
    data = json.loads(json.dumps(result.to_dict()))
    assert data["session_id"] == sid and data["kind"] == "clarify" and data["state"] == AWAITING_CHOICE
    assert data["options"] == [{"number": o.number, "label": o.label, "answer_id": o.answer_id} for o in result.options]
    assert data["options"][-1] == {"number": len(result.options), "label": "none of these", "answer_id": ""}
    assert data["reply"] == result.reply and data["answer_id"] is None and data["trace"] == result.trace
    record = manager.session(sid)
    restored = SessionRecord.from_dict(json.loads(json.dumps(record.to_dict())))
    assert restored == record  # the stored session survives a JSON round trip unchanged
    assert restored.pending["options"] == data["options"] and restored.question == text_of(BRAKE_Q)


def test_repeated_unmatched_descriptions_become_detail(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=1.0, clarify_ratio=0.0)
    sid = manager.start_session()
    ask = manager.handle(session_id=sid, text=text_of(BRAKE_Q))
    assert ask.kind == "clarify"
    for _ in range(2):
        assert manager.handle(session_id=sid, text="purple elephants dancing").kind == "clarify"
    result = manager.handle(session_id=sid, text="the squeal happens only on wet mornings")
    # after MAX_REPROMPTS the options are dropped: the reply is none of these, its words the detail
    assert result.kind in ("answer", "clarify", "fallback", "handoff")
    offered = {o.answer_id for o in ask.options if o.answer_id}
    assert not offered & {o.answer_id for o in result.options} and result.answer_id not in offered
    pending = manager.session(sid).pending
    assert pending is None or result.kind == "clarify" or not pending["options"]


# --- review defects (issue 4 follow-up) --------------------------------------------------------------
def test_bare_number_or_filler_without_pending_options_prompts_instead_of_searching(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    sid = manager.start_session()
    first = manager.handle(session_id=sid, text=text_of(PAPER_Q))
    assert first.kind == "answer"
    for reply in ("2", "option 2", "hmm", "uh ok so"):
        result = manager.handle(session_id=sid, text=reply)
        assert result.kind == "prompt" and result.state == AWAITING_FEEDBACK, reply
        assert "didn't help" in result.reply and not result.trace["steps"]  # no search was run
    record = manager.session(sid)
    assert record.step == 0 and record.followups == [] and record.delivered == [first.answer_id]
    assert record.failures == 0
    # the session still works normally afterwards
    assert manager.handle(session_id=sid, text=text_of(PAPER_C1)).answer_id == "nostart#3"


def test_bare_number_while_awaiting_detail_asks_for_a_detail(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0, max_failures=3)
    sid = manager.start_session()
    assert manager.handle(session_id=sid, text="What colour is the sky on Mars?").kind == "fallback"
    result = manager.handle(session_id=sid, text="3")
    assert result.kind == "prompt" and result.state == AWAITING_DETAIL and "detail" in result.reply
    assert manager.session(sid).failures == 1  # a prompt is not another failed search


def _chain_choice(manager):
    sid = manager.start_session()
    ask = manager.handle(session_id=sid, text=text_of(CONSTRAINT_Q).replace(" I can't remove the engine.", ""))
    assert ask.kind == "clarify"
    return sid, ask


def test_constraint_reply_to_a_clarification_is_recorded_not_taken_as_a_choice(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=1.0, clarify_ratio=0.0)
    sid, ask = _chain_choice(manager)
    offered = [o.answer_id for o in ask.options if o.answer_id]
    assert "chain#1" in offered  # "you have to remove the engine ..." is on offer
    result = manager.handle(session_id=sid, text="I can't remove the engine")
    record = manager.session(sid)
    assert record.constraints and record.constraints[0]["words"] == ["remove", "engine"]
    assert result.answer_id != "chain#1" and "chain#1" not in [o.answer_id for o in result.options]
    assert "chain#1" in record.skipped and "chain#1" not in record.delivered
    survivors = [a for a in offered if a != "chain#1"]
    # the rest are offered again, best first; one left is asked about, never delivered unpicked
    assert result.kind == "clarify" and result.state == AWAITING_CHOICE
    assert [o.answer_id for o in result.options if o.answer_id] == survivors
    assert result.reply.startswith("Noted")
    assert ("only this one is left" in result.reply) == (len(survivors) == 1)


def test_constraint_that_no_option_violates_reoffers_the_same_options(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=1.0, clarify_ratio=0.0)
    sid, ask = _chain_choice(manager)
    result = manager.handle(session_id=sid, text="I don't have a lift")
    assert result.kind == "clarify" and result.state == AWAITING_CHOICE
    assert [o.answer_id for o in result.options] == [o.answer_id for o in ask.options]
    assert manager.session(sid).constraints[0]["words"] == ["lift"]
    # and a reply with a distinctive word still picks its option
    pump = next(o for o in ask.options if o.answer_id == "chain#3")
    assert manager.handle(session_id=sid, text="the oil pump pickup").answer_id == pump.answer_id


def test_rejection_at_step_zero_searches_the_question_again_without_the_answer(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    sid = manager.start_session()
    first = manager.handle(session_id=sid, text=text_of(PAPER_Q))
    retry = manager.handle(session_id=sid, text="no, that didn't help")
    assert retry.kind == "answer" and retry.answer_id != first.answer_id
    before, after = first.trace["steps"][0]["query"], retry.trace["steps"][0]["query"]
    assert after["keywords"] == before["keywords"] and after["rr_terms"] == before["rr_terms"]
    assert first.answer_id in after["exclude_ids"]
    assert not any(c["features"].get("continuation") for c in retry.trace["candidates"])


def test_rejection_after_a_followup_never_searches_with_the_rejected_answer(tmp_path):
    selector, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    sid = manager.start_session()
    first = manager.handle(session_id=sid, text=text_of(PAPER_Q))
    second = manager.handle(session_id=sid, text=text_of(PAPER_C1))
    assert (first.answer_id, second.answer_id) == ("nostart#1", "nostart#3")
    retry = manager.handle(session_id=sid, text="that didn't help")
    assert retry.answer_id not in (first.answer_id, second.answer_id)
    keywords = set(retry.trace["steps"][0]["query"]["keywords"])
    rejected_only = set(selector.index.get("nostart#3").keywords) - set(selector.index.get("nostart#1").keywords)
    assert rejected_only and not keywords & rejected_only   # "rail", "pump", "relay" ... stay out
    assert manager.session(sid).context_id == "nostart#1"  # C1 still replies to A1: same part, same context


def test_followup_context_words_count_less_than_the_users_words(tmp_path):
    from dtdialog.selection.selector import CONTEXT_TERM_WEIGHT

    selector, _, _ = car_world(tmp_path, clarify_margin=0.0)
    outcome = selector.rank_outcome(question=text_of(PAPER_Q), step=1, followups=["the fuel pump relay clicks"],
                                    context_ids=["nostart#1"], size=10)
    raw = {h.document.id: h.score for h in selector.generator.generate(
        plan=outcome.plan, part_index=outcome.part_index, query=outcome.query, followups=[], size=20)}
    seen = outcome.candidates + outcome.rejected
    assert any(c.features["context_share"] > 0 for c in seen)
    for cand in seen:
        if cand.id in raw:
            share = cand.features["context_share"]
            assert 0.0 <= share <= 1.0
            assert cand.retrieval_score == pytest.approx(raw[cand.id] * (1 - (1 - CONTEXT_TERM_WEIGHT) * share))



def test_a_question_planned_while_the_gate_encodes_it_gets_the_same_turn_and_its_errors(tmp_path):
    """With a dense scope gate the gate starts the encoding on a worker and the question is planned meanwhile, on
    the turn's thread: the same reply and trace as planning after the gate, and a plan that fails still gets the
    unreadable-text prompt."""
    from dtdialog.dialogue.manager import PROMPT
    from dtdialog.understanding.scope import DomainProfile, ScopeGate
    from parsers.errors import InputError

    selector, manager, _ = car_world(tmp_path)
    questions = [text_of(PAPER_Q), text_of(BRAKE_Q)]

    def turn(text: str) -> dict:
        out = manager.handle(session_id=manager.start_session(), text=text).to_dict()
        out.pop("session_id")
        for volatile in ("session_id", "elapsed_ms", "notes"):  # the gate's note says what it measured
            out["trace"].pop(volatile, None)
        return out

    before = [turn(q) for q in questions]
    assert {t["kind"] for t in before} == {"answer"}
    events: list[tuple[str, str]] = []
    plan = selector.plan
    selector.plan = lambda q: events.append(("plan", threading.current_thread().name)) or plan(q)
    manager.scope = ScopeGate(profile=DomainProfile.of([(q, []) for q in questions]), threshold=0.0, mass=None,
                              dense=lambda text: events.append(("encoded", text)) or 0.9,
                              prefetch=lambda text: events.append(("prefetch", text)))
    assert [turn(q) for q in questions] == before
    here = threading.current_thread().name
    assert events == [e for q in questions for e in (("prefetch", q), ("plan", here), ("encoded", q))]

    def unreadable(question: str):
        raise InputError("no sentence in it")

    selector.plan = unreadable
    result = manager.handle(session_id=manager.start_session(), text=questions[0])
    assert result.kind == PROMPT and "no sentence in it" in result.reply


def test_thanks_without_a_fix_is_not_told_it_is_sorted(tmp_path):
    """"ok I'll get it checked, thanks" after an answer got "Glad that sorted it out!"."""
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    sid = manager.start_session()
    manager.handle(session_id=sid, text=text_of(PAPER_Q))
    done = manager.handle(session_id=sid, text="ok I'll get it checked, thanks")
    assert done.kind == "concluded" and done.reply == manager.replies.concluded_thanks != manager.replies.concluded
