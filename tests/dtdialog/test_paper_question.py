"""The paper's own question on the built-in corpus: what is left to check, never an answer for another customer.

Before: the learned ranker answered "After a starter job, the most common mistakes are ..." to a customer who never
mentioned a starter job, and, with that answer demoted, a mid-dialogue answer ("Then check the main fuses ...") or
"Rapid clicking with dim lights is the classic sign ..." (a symptom the customer never reported) came next.
"""

from __future__ import annotations

import json

import pytest

from dtdialog.cli import main
from dtdialog.understanding.tried import main_recommendation, repeated_action, tried_from_dicts

PAPER_Q = ("I have checked the spark plugs, replaced the battery, also replaced ignition coils and the solenoid, "
           "but I still could not start my car.")
#: the paper's intended first answer: with battery, coils, plugs and solenoid done, does the engine get spark and fuel
INTENDED = "no_start-paper-001#1"
PRESUPPOSING = ("no_start-010#1", "no_start-002#1", "no_start-001#1")

pytestmark = [pytest.mark.slow, pytest.mark.dense]


@pytest.fixture(scope="module")
def engines(builtin_learned_index, tmp_path_factory):
    """Return ranker -> engine over the built-in corpus (one index, with dense vectors), with a session store."""
    from dtdialog.setup.assembly import EngineSpec, build_engine

    path, parser = builtin_learned_index
    home = tmp_path_factory.mktemp("paper")
    built = {r: build_engine(EngineSpec(index_path=str(path), ranker=r, sessions_path=str(home / f"{r}.sqlite")),
                             parser=parser, progress=False) for r in ("rules", "learned")}
    yield built
    for engine in built.values():
        engine.close()


@pytest.mark.parametrize("ranker", ["rules", "learned"])
def test_the_paper_question_ranks_what_is_left_to_check_first(engines, ranker):
    selector = engines[ranker].selector
    outcome = selector.rank_outcome(question=PAPER_Q, step=0, size=10)
    top = outcome.candidates[0].document
    assert top.id == INTENDED, [c.document.id for c in outcome.candidates[:5]]
    assert "spark and fuel" in top.text and "starting fluid" in top.text
    # its recommendation repeats nothing the customer did (battery, coils, plugs, solenoid)
    assert repeated_action(main_recommendation(selector.answer_tree(top), selector.normalizer), outcome.tried) is None
    # the answers for other customers' situations are demoted, and the trace says what they took for granted
    notes = outcome.to_dict()["presupposition"]
    assert "no_start-010#1" in notes and "starter job" in notes["no_start-010#1"]
    assert all(c.document.id not in PRESUPPOSING for c in outcome.candidates[:1])


#: the paper's question in another customer's words; at a 0.5 penalty the learned ranker still delivered the
#: starter-job answer to it at 73% confidence (its model logit 6.9 against -2.8 for the paper's answer)
PARAPHRASE = ("I have checked the battery, replaced the coils and the spark plugs, and tested the solenoid, "
              "but my car still won't start.")


@pytest.mark.parametrize("ranker", ["rules", "learned"])
def test_an_answer_for_another_customers_situation_is_neither_given_nor_offered(engines, ranker):
    outcome = engines[ranker].selector.rank_outcome(question=PARAPHRASE, step=0, size=10)
    assert not {c.document.id for c in outcome.candidates} & set(PRESUPPOSING)
    assert "starter job" in outcome.record.rejected_reasons["no_start-010#1"]


@pytest.mark.parametrize("ranker", ["rules", "learned"])
def test_with_the_rule_off_the_old_answer_comes_back_under_the_learned_ranker(engines, ranker):
    """The failure reproduced: ``presupposition_penalty=0`` restores the starter-job answer (learned ranker)."""
    import dataclasses

    selector = engines[ranker].selector
    base = selector.config
    try:
        unpenalised = dataclasses.replace(base.demotions, presupposition_penalty=0.0)
        selector.config = dataclasses.replace(base, demotions=unpenalised)
        top = selector.rank(question=PAPER_Q, size=5)[0].document.id
    finally:
        selector.config = base
    assert (top == "no_start-010#1") == (ranker == "learned")


def test_chat_opens_with_the_papers_answer_under_the_rules(builtin_learned_index, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DTDIALOG_RANKER", "rules")
    index, _ = builtin_learned_index
    script = tmp_path / "q.txt"
    script.write_text(PAPER_Q + "\n", encoding="utf-8")
    assert main(["chat", "--script", str(script), "--index", str(index), "--sessions", str(tmp_path / "s.sqlite"),
                 "--quiet", "--json"]) == 0
    [turn] = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert turn["kind"] == "answer" and turn["answer_id"] == INTENDED
    assert "spark and fuel" in turn["reply"] and "starter job" not in turn["reply"]


@pytest.mark.parametrize("question", [PAPER_Q, PARAPHRASE], ids=["paper", "paraphrase"])
def test_the_learned_chat_opens_with_the_papers_answer_by_default(engines, question):
    """The learned ranker's calibrator reads the intended answer as doubtful (its words are what is left to check, not
    what the customer did); the logged opening the question repeats in other words is what lifts it."""
    import dataclasses

    manager = engines["learned"].manager
    result = manager.handle(session_id=manager.start_session(), text=question)
    assert (result.kind, result.answer_id) == ("answer", INTENDED)
    assert tried_from_dicts(manager.session(result.session_id).tried)
    outcome = manager.selector.rank_outcome(question=question, step=0, size=10)
    match = outcome.record.logged_question
    assert match["dialogue"] == "no_start-paper-001" and match["counts"] and match["probability"] >= 0.5
    assert outcome.candidates[0].features["logged_question"] == match["probability"]
    # the agents' view says so
    from dtdialog.dialogue.trace import format_trace

    assert f"logged opening nearest: no_start-paper-001 (cosine {match['cosine']:.2f}" in format_trace(result.trace)
    assert f"counts for {INTENDED}" in format_trace(result.trace)
    # without the evidence the calibrator alone decides, and it is not sure: the bot asks instead of answering
    base = manager.config
    try:
        manager.config = dataclasses.replace(base, abstention=dataclasses.replace(base.abstention,
                                                                                  logged_opening_at=1.0))
        manager.selector.config = manager.config
        again = manager.handle(session_id=manager.start_session(), text=question)
    finally:
        manager.config = manager.selector.config = base
    assert again.kind == "abstain"


@pytest.mark.parametrize("ranker", ["rules", "learned"])
def test_a_detail_given_before_any_answer_still_gets_an_opening(engines, ranker):
    """After an abstention the customer's detail is a reply, yet nothing was delivered: the answer still opens the
    dialogue, so "Then check the main fuses ..." (a later turn of its source) does not come first."""
    from index.position import position_of

    selector = engines[ranker].selector
    outcome = selector.rank_outcome(question=PAPER_Q, step=0, size=10,
                                    followups=["It did at first but not anymore. What should I do?"])
    assert position_of(outcome.candidates[0].document).stands_alone, outcome.candidates[0].document.text[:60]


def test_a_refreshed_engine_encodes_the_logged_openings_before_any_turn(builtin_learned_index, tmp_path):
    """The API refreshes the engine after answers change; the openings' encoding (0.8 s here, seconds for a large log)
    belongs to that refresh, not to the next customer's turn."""
    from dtdialog.setup.assembly import EngineSpec, build_engine

    path, parser = builtin_learned_index
    engine = build_engine(EngineSpec(index_path=str(path), sessions_path=str(tmp_path / "s.sqlite")), parser=parser,
                          progress=False)
    try:
        assert engine.selector.logged_questions.ready  # the build's warm-up
        old = engine.selector.logged_questions
        engine.refresh()
        assert engine.selector.logged_questions is not old and engine.selector.logged_questions.ready
    finally:
        engine.close()

