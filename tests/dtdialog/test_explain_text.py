"""``chat --explain`` on real engine turns: each number and label it prints is the one the engine decided, and the
plain-language summary says why the reply was chosen (issue 17, item 5)."""

from __future__ import annotations

import re

from engine_helpers import CONSTRAINT_Q, PAPER_C1, PAPER_Q, car_world, text_of

from dtdialog.dialogue.explanation import describe_signals, readable_note, summarize
from dtdialog.dialogue.trace import format_trace, retrieval_text
from dtdialog.understanding.intents import FOLLOWUP, NEW_QUESTION


def _candidate_lines(text: str) -> dict[str, str]:
    return {m.group(1): m.group(0) for m in re.finditer(r"^  \+ (\S+)  .*$", text, re.MULTILINE)}


def test_the_retrieval_shown_is_the_feature_the_scorer_wrote(tmp_path):
    # it printed retrieval=0.00 for every candidate: it read a feature the learned ranker never writes
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    result = manager.handle(session_id=manager.start_session(), text=text_of(PAPER_Q))
    lines = _candidate_lines(format_trace(result.trace))
    candidates = result.trace["steps"][0]["candidates"]
    assert candidates and set(lines) == {c["id"] for c in candidates[:5]}
    for cand in candidates[:5]:
        assert f"retrieval={cand['features']['retrieval']:.2f}" in lines[cand["id"]]
    assert any(c["features"]["retrieval"] > 0 for c in candidates)
    # the learned ranker's candidates carry its own retrieval features instead (lexical share, dense cosine)
    assert retrieval_text({"lexical": 0.39, "dense": 0.67, "bm25": 0.7}) == "lexical=0.39 dense=0.67"
    assert retrieval_text({"continuation": 0.0}) == "retrieval=n/a"  # a rejected candidate was never scored


def test_the_rejected_count_is_the_true_count_and_agrees_with_the_list(tmp_path):
    # it printed "rejected (10 shown)" above a list of 5
    selector, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    outcome = selector.rank_outcome(question=text_of(PAPER_Q))
    total = len(outcome.rejected)
    assert total >= 2
    result = manager.handle(session_id=manager.start_session(), text=text_of(PAPER_Q))
    step = result.trace["steps"][0]
    assert step["rejected_total"] == total
    for shown in (1, total):
        line = next(x for x in format_trace(result.trace, max_candidates=shown).splitlines() if "rejected (" in x)
        listed = re.findall(r"(\S+#\d+) \(", line)
        assert len(listed) == min(shown, total)
        head = f"rejected ({total}" + (f", first {shown} shown)" if shown < total else ")")
        assert head in line, line


def test_each_rejection_is_labelled_with_its_real_reason(tmp_path):
    # every rejection was labelled "(constraint)" when none was
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0, constraint_penalty=1.0)
    sid = manager.start_session()
    result = manager.handle(session_id=sid, text=text_of(CONSTRAINT_Q))
    step = result.trace["steps"][0]
    reasons = {c["id"]: c["reason"] for c in step["rejected"]}
    assert reasons["chain#1"] == "constraint"  # "you have to remove the engine" after "I can't remove the engine"
    for cand in step["rejected"]:
        violations = cand["features"].get("constraint_violations", 0)
        if cand["id"] in step["off_topic"]:
            assert cand["reason"] == "off topic"
        elif violations:
            assert cand["reason"] == "constraint"
        else:
            assert cand["reason"] == "no agreement" and not cand["agreement"]["verdict"]
    line = next(x for x in format_trace(result.trace, max_candidates=10).splitlines() if "rejected (" in x)
    assert line.count("violates the customer's constraint") == sum(r == "constraint" for r in reasons.values()) == 1

    (tmp_path / "paper").mkdir()
    _, manager, _ = car_world(tmp_path / "paper", clarify_margin=0.0)
    paper = manager.handle(session_id=manager.start_session(), text=text_of(PAPER_Q)).trace
    assert paper["steps"][0]["rejected"] and not paper["steps"][0]["constraints"]
    assert all(c["reason"] != "constraint" for c in paper["steps"][0]["rejected"])
    assert "violates the customer's constraint" not in format_trace(paper, max_candidates=10)


def test_the_first_turn_is_a_new_question_and_the_next_a_followup(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    sid = manager.start_session()
    first = manager.handle(session_id=sid, text=text_of(PAPER_Q))
    assert first.trace["intent"] == NEW_QUESTION
    assert format_trace(first.trace).startswith("--- turn 1: intent=new_question ")
    second = manager.handle(session_id=sid, text=text_of(PAPER_C1))
    assert second.trace["intent"] == FOLLOWUP


def test_the_summary_says_why_in_plain_words(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    result = manager.handle(session_id=manager.start_session(), text=text_of(PAPER_Q))
    trace = result.trace
    summary = summarize(trace)
    step = trace["steps"][0]
    chosen = next(c for c in step["candidates"] if c["id"] == result.answer_id)
    assert summary["lines"][0] == f"Chose answer {result.answer_id}."
    # the relation chain it addresses, in the question's own words, whole (the part's Contrast text of DT-Q)
    phrase = next(r["text"] for r in trace["parts"][0]["relations"] if r["relation"] == "Contrast")
    assert phrase == text_of(PAPER_Q)  # the Contrast spans the whole question: none of it is cut
    assert len(summary["addresses"]) == len(chosen["agreement"]["chains"]) + len(chosen["agreement"]["missing"]) >= 1
    assert any(f'the Contrast part of the question ("{phrase}")' in line for line in summary["addresses"])
    # what the customer already tried, as the engine recognised it
    assert summary["tried"] == [t["text"] for t in step["tried"]] and "replaced the battery" in summary["tried"]
    # the closest alternatives, each with why it lost
    alternatives = [c["id"] for c in step["candidates"] if c["id"] != result.answer_id][:2]
    assert [a["id"] for a in summary["alternatives"]] == alternatives
    assert all(a["why"].startswith(f"{a['id']}: ") and "against" in a["why"] for a in summary["alternatives"])
    text = format_trace(trace)
    assert "why this reply:" in text and all(line in text for line in summary["lines"])
    # no ranker jargon in the plain view
    assert "learned ranker logit" not in text and "dense_csls" not in " ".join(summary["lines"])


def test_an_answer_picked_from_options_is_explained_by_the_turn_that_ranked_it(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=1.0, clarify_ratio=0.0)
    sid = manager.start_session()
    offer = manager.handle(session_id=sid, text=text_of(PAPER_Q))
    assert offer.kind == "clarify" and offer.answer_id is None
    first = summarize(offer.trace)
    options = [o for o in offer.trace["decision"]["options"] if o["answer_id"]]
    assert first["lines"][0].startswith(f"No answer delivered: {len(options)} answers came too close")
    assert first["addresses"] == []  # no answer, so nothing it addresses is claimed
    picked = manager.handle(session_id=sid, text="1")
    assert picked.kind == "answer" and picked.answer_id == options[0]["answer_id"]
    assert not picked.trace["steps"]  # the choice turn ranks nothing itself
    alone = summarize(picked.trace)
    assert alone["addresses"] == []  # without the session's history it cannot know
    summary = summarize(picked.trace, history=[offer.trace])
    ranked = next(c for c in offer.trace["steps"][-1]["candidates"] if c["id"] == picked.answer_id)
    assert len(summary["addresses"]) == len(ranked["agreement"]["chains"]) + len(ranked["agreement"]["missing"])
    assert summary["lines"][0] == f"Chose answer {picked.answer_id}."


def test_signals_read_as_key_value_pairs_with_rounded_numbers():
    signals = {"words": 24, "non_latin_share": 0.0, "english_share": 1.0, "domain_mass": 15.58,
               "domain_score": 0.948, "threshold": 0.729, "dense": 0.669, "gate": True, "language": None}
    assert describe_signals(signals) == ("words 24, non latin share 0, english share 1, domain mass 15.6, "
                                         "domain score 0.95, threshold 0.73, dense 0.67, gate yes, language none")
    # a note written with a raw dict in it reads the same way; any other note is left as it is
    assert readable_note(f"in scope: {signals}") == "in scope: " + describe_signals(signals)
    assert readable_note("user chose option 1: {not a dict") == "user chose option 1: {not a dict"


def test_the_explain_view_shows_the_question_whole_and_every_value_readable(tmp_path):
    _, manager, _ = car_world(tmp_path, clarify_margin=0.0)
    sid = manager.start_session()
    first = manager.handle(session_id=sid, text=text_of(PAPER_Q)).trace
    first["notes"].append(f"in scope: {dict(words=24, domain_score=0.948)}")  # what the scope gate's note held
    text = format_trace(first)
    assert f"question: {text_of(PAPER_Q)}" in text
    assert f"part Q1: Contrast[{text_of(PAPER_Q)}]" in text  # the part's relation, not its first 12 words
    assert "note: in scope: words 24, domain score 0.95" in text
    assert "{" not in text and not re.search(r"'\w+': ", text)
    second = format_trace(manager.handle(session_id=sid, text=text_of(PAPER_C1)).trace)
    assert f"message: {text_of(PAPER_C1)}" in second


def test_options_offered_when_the_confidence_ran_out_are_not_called_too_close():
    """Found by trying the chat: options offered as the last resort before a hand-off were explained as "3 answers came
    too close to pick one", which is not why they were offered."""
    from dtdialog.dialogue.explanation import OFFERED_BECAUSE

    def decision(because):
        options = [{"number": 1, "label": "a", "answer_id": "x#1"}, {"number": 2, "label": "b", "answer_id": "y#1"},
                   {"number": 3, "label": "none of these", "answer_id": ""}]
        return {"decision": {"kind": "clarify", "options": options, **({"offered_because": because} if because else {})},
                "steps": []}

    assert summarize(decision("unsure"))["lines"][0] == f"No answer delivered: {OFFERED_BECAUSE['unsure'].format(n=2)}."
    assert "too close" not in summarize(decision("none_fit"))["lines"][0]
    assert "too close" in summarize(decision(None))["lines"][0]  # traces written before the reason was kept
