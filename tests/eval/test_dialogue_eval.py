"""The simulated-customer dialogue evaluation: the customer on scripted bots, the measures on hand-built sessions,
an end-to-end run on the built-in corpus and the CLI's one-line errors."""

from __future__ import annotations

import json

import pytest

from eval.datasets import EvalDialogue
from eval.dialogue.customer import (
    AFTER_HANDOFF,
    BUDGET,
    NO_MORE_DETAIL,
    NONE_OF_THESE,
    REJECTIONS,
    BotTurn,
    Option,
    Session,
    false_handoff_reason,
    play,
)
from eval.dialogue.metrics import paired_difference, summarise, zero_count_examples, zero_counts

GREETING = "Hi! Describe your question - what happens, and what you have already tried."
MECH = EvalDialogue("m1", "Car will not start.\nIt clicks when I turn the key, battery is new.", ("m1#1",),
                    title="Car will not start")
TWO_STEP = EvalDialogue("t1", "my order never arrived", ("t1#1", "t1#3"), ("it says delivered but it is not here",))


class ScriptedBot:
    """Replies with the scripted turns in order (then keeps repeating the last) and records what it was sent."""

    name = "scripted"

    def __init__(self, turns: list[BotTurn]) -> None:
        self.turns = turns
        self.received: list[str] = []

    def start(self, dialogue: EvalDialogue) -> None:
        self.received = []

    def send(self, text: str) -> BotTurn:
        self.received.append(text)
        return self.turns[min(len(self.received), len(self.turns)) - 1]


def answer(answer_id: str) -> BotTurn:
    return BotTurn(kind="answer", reply=f"try {answer_id}", answer_id=answer_id)


def handoff(reply: str = "I'm passing you to a human agent (a reason). They will see our whole conversation "
                         "(3 messages), so you won't have to repeat anything.") -> BotTurn:
    return BotTurn(kind="handoff", reply=reply)


def test_mechanics_opens_with_the_title_and_accepts_gold():
    bot = ScriptedBot([answer("m1#1")])
    s = play(bot, MECH, seed=1)
    assert bot.received == ["Car will not start."]
    assert s.succeeded and s.step_turns == [1] and s.wrong_answers == 0
    assert s.lines[-1].gold


def test_the_engine_scores_a_title_opening_with_the_fold_model_of_its_question():
    # the shipped ranker trained on every mechanics question: a title alone must be held out with its question
    from eval.datasets import EvalSet
    from eval.dialogue.run import openings_of

    eval_set = EvalSet(name="m", dialogues=(MECH, TWO_STEP), pool=())
    assert openings_of(eval_set) == {"Car will not start.": MECH.question}  # a first turn alone has no body


def test_wrong_answer_is_rejected_with_a_seeded_phrase():
    runs = []
    for _ in range(2):
        bot = ScriptedBot([answer("x#1"), answer("x#2"), answer("m1#1")])
        s = play(bot, MECH, seed=7)
        runs.append(bot.received)
        assert s.step_turns == [3] and s.wrong_answers == 2
    assert runs[0] == runs[1]  # reproducible
    assert all(r in REJECTIONS for r in runs[0][1:])
    # another seed draws other phrases for some dialogue
    drawn = {tuple(play(ScriptedBot([answer("x")] * 4), EvalDialogue(f"d{i}", "q", ("g",)), seed=3).lines[2 * j].text
                   for j in range(1, 4)) for i in range(10)}
    assert len(drawn) > 1


def test_picks_the_gold_option_by_number_else_none_of_these():
    offer = BotTurn(kind="clarify", reply="which?", options=(Option(1, "a", "x#1"), Option(2, "b", "m1#1"),
                                                             Option(3, "none of these", "")))
    bot = ScriptedBot([offer, answer("m1#1")])
    assert play(bot, MECH, seed=1).succeeded
    assert bot.received[1] == "2"
    other = BotTurn(kind="clarify", reply="which?", options=(Option(1, "a", "x#1"), Option(2, "none of these", "")))
    bot = ScriptedBot([other, answer("m1#1")])
    play(bot, MECH, seed=1)
    assert bot.received[1] == NONE_OF_THESE


def test_detail_request_gets_the_body_once_then_no_more_detail():
    ask = BotTurn(kind="abstain", reply="what exactly happens?")
    bot = ScriptedBot([ask, ask, ask, answer("m1#1")])
    s = play(bot, MECH, seed=1)
    assert bot.received[1] == "It clicks when I turn the key, battery is new."
    assert bot.received[2] == NO_MORE_DETAIL
    assert s.step_turns == [4]


def test_out_of_scope_title_gets_the_body_and_detail_gets_the_logged_followup():
    refuse = BotTurn(kind="out_of_scope", reply="not something I can help with")
    bot = ScriptedBot([refuse, answer("m1#1")])
    assert play(bot, MECH, seed=1).succeeded and bot.received[1].startswith("It clicks")
    bot = ScriptedBot([BotTurn(kind="some_new_detail_kind", reply="which part?"), answer("t1#1"), answer("t1#3")])
    s = play(bot, TWO_STEP, seed=1)
    assert bot.received[:2] == ["my order never arrived", "it says delivered but it is not here"]
    assert s.succeeded and s.step_turns == [2, 1]


def test_next_step_begins_with_the_followup_after_the_gold_answer():
    bot = ScriptedBot([answer("t1#1"), answer("t1#1"), answer("t1#3")])
    s = play(bot, TWO_STEP, seed=1)
    assert bot.received[1] == "it says delivered but it is not here"
    assert s.step_turns == [1, 2] and s.wrong_answers == 1  # the repeated step-1 answer is wrong at step 2


def test_budget_of_four_bot_turns_per_step():
    bot = ScriptedBot([answer(f"x#{i}") for i in range(10)])
    s = play(bot, MECH, seed=1)
    assert len(bot.received) == BUDGET and s.step_turns == [None] and not s.succeeded
    assert s.wrong_answers == BUDGET and not s.handed_off
    assert not s.success_at(0, 4)


def test_handoff_ends_the_session_and_the_customer_checks_once():
    bot = ScriptedBot([answer("x#1"), handoff(), BotTurn(kind="prompt", reply=GREETING, greeting=True)])
    s = play(bot, MECH, seed=1)
    assert s.handed_off and s.step_turns == [None]
    assert bot.received[-1] == AFTER_HANDOFF and len(bot.received) == 3
    assert s.greeting_after_handoff
    assert s.last_kind == "handoff"  # the check after the hand-off is not how the session ended
    quiet = ScriptedBot([handoff(), BotTurn(kind="handoff", reply="An agent will be with you shortly.")])
    assert not play(quiet, MECH, seed=1).greeting_after_handoff
    again = ScriptedBot([handoff(), answer("x#2")])
    assert play(again, MECH, seed=1).greeting_after_handoff


def test_false_handoff_reasons():
    ok = "I'm passing you to a human agent (2 answers did not help). They will see our whole conversation (5 messages)"
    assert false_handoff_reason(ok, rejected=2, answers_shown=2, messages=5) == ""
    assert false_handoff_reason(ok, rejected=2, answers_shown=2, messages=4) == ""  # counting the hand-off itself
    assert "1 were rejected" in false_handoff_reason(ok, rejected=1, answers_shown=1, messages=5)
    assert "none was shown" in false_handoff_reason(ok, rejected=0, answers_shown=0, messages=5)
    assert "7 messages" in false_handoff_reason(ok.replace("(5", "(7"), rejected=2, answers_shown=2, messages=5)
    worded = "I'm passing you to a human agent (you asked for a person). ... (messages so far: 3), so ..."
    assert false_handoff_reason(worded, rejected=0, answers_shown=0, messages=3) == ""
    assert "9 messages" in false_handoff_reason(worded.replace(": 3", ": 9"), rejected=0, answers_shown=0, messages=3)
    # in a played session: options rejected with "none of these" are no rejected answers
    offer = BotTurn(kind="clarify", reply="which?", options=(Option(1, "a", "x#1"), Option(2, "none", "")))
    bot = ScriptedBot([offer, handoff("agent (2 answers did not help). (3 messages)")])
    s = play(bot, MECH, seed=1)
    assert "none was shown" in s.false_handoff_reason
    assert zero_counts([s])["false_handoff_reasons"] == 1
    assert zero_count_examples([s])["false_handoff_reasons"][0].startswith("m1: says 2 answers did not help")


def test_misrouted_first_message():
    assert play(ScriptedBot([BotTurn(kind="prompt", reply=GREETING, greeting=True), answer("m1#1")]), MECH,
                seed=1).misrouted_first
    assert play(ScriptedBot([BotTurn(kind="reset", reply="new question?"), answer("m1#1")]), MECH,
                seed=1).misrouted_first
    assert not play(ScriptedBot([BotTurn(kind="abstain", reply="?"), answer("m1#1")]), MECH, seed=1).misrouted_first
    # an opening that describes nothing is rightly greeted
    plea = EvalDialogue("p1", "Can you just help me please", ("p1#1",))
    assert not play(ScriptedBot([BotTurn(kind="prompt", reply=GREETING, greeting=True), answer("p1#1")]), plea,
                    seed=1).misrouted_first


def _session(did: str, turns: list[int | None], *, wrong: int = 0, n_steps: int = 1, gold_present: bool = True,
             handed_off: bool = False, last_kind: str = "answer") -> Session:
    return Session(dialogue_id=did, bot="b", n_steps=n_steps, gold_present=gold_present, step_turns=turns,
                   wrong_answers=wrong, handed_off=handed_off, last_kind=last_kind)


def test_metrics_on_hand_built_sessions():
    sessions = [_session("a", [1]), _session("b", [3], wrong=2), _session("c", [None], wrong=4),
                _session("d", [2, None], wrong=1, n_steps=2)]
    m = summarise(sessions, n_resamples=200, seed=1)
    assert m["step1_success@1"]["value"] == pytest.approx(1 / 4)
    assert m["step1_success@2"]["value"] == pytest.approx(2 / 4)
    assert m["step1_success@3"]["value"] == pytest.approx(3 / 4)
    assert m["step2_success@4"]["value"] == 0.0 and m["step2_success@4"]["n"] == 1
    assert m["wrong_per_session"]["value"] == pytest.approx(7 / 4)
    assert m["step1_success@3"]["low"] <= 0.75 <= m["step1_success@3"]["high"]
    assert "honest_end_gold_absent" not in m


def test_honest_share_in_the_open_pool():
    sessions = [_session("a", [None], gold_present=False, handed_off=True, wrong=1, last_kind="handoff"),
                _session("b", [None], gold_present=False, wrong=0, last_kind="abstain"),
                _session("c", [None], gold_present=False, wrong=2, handed_off=True, last_kind="handoff"),
                _session("d", [None], gold_present=False, wrong=4),
                _session("e", [2], gold_present=True), _session("f", [None], gold_present=True, wrong=4)]
    m = summarise(sessions, n_resamples=200, seed=1)
    assert m["honest_end_gold_absent"]["value"] == pytest.approx(2 / 4)
    assert m["step1_success@3_gold_present"]["value"] == pytest.approx(1 / 2)


def test_paired_difference():
    a = [_session("a", [1]), _session("b", [None], wrong=0)]
    b = [_session("b", [2], wrong=1), _session("a", [None], wrong=4)]
    diff = paired_difference(a, b, n_resamples=200, seed=1)
    assert diff["step1_success@3"]["value"] == pytest.approx(0.0)
    assert diff["wrong_per_session"]["value"] == pytest.approx(-2.5)


@pytest.mark.slow
def test_end_to_end_on_the_builtin_corpus(tmp_path):
    from eval.dialogue.cli import main

    out = tmp_path / "run"
    code = main(["--dataset", "builtin", "--limit", "4", "--out", str(out), "--no-progress",
                 "--sample-transcripts", "2", "--bootstrap", "100"])
    assert code == 0
    data = json.loads((out / "results.json").read_text())
    res = data["results"][0]
    assert res["dataset"] == "builtin" and res["n_dialogues"] == 4
    assert set(res["pools"]) == {"closed", "open"}
    for pool in res["pools"].values():
        assert set(pool) == {"dtq", "dense", "bm25"} or "dtq" in res["skipped"] or res["skipped"]
    closed = res["pools"]["closed"]
    assert closed["dense"]["zero_counts"] == {"greetings_after_handoff": 0, "false_handoff_reasons": 0,
                                              "misrouted_first_messages": 0}
    assert "honest_end_gold_absent" in res["pools"]["open"]["dense"]["measures"]
    text = (out / "transcripts" / "builtin_closed.md").read_text()
    assert "customer> " in text and "bot [" in text
    assert (out / "results.md").is_file() and (out / "success_at_k.png").is_file()


def test_cli_one_line_error_on_a_missing_file(tmp_path, capsys):
    from eval.dialogue.cli import main

    code = main(["--data", str(tmp_path / "nope.jsonl"), "--format", "jsonl", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error:") and len(err.strip().splitlines()) == 1 and "nope.jsonl" in err


def test_cli_one_line_error_on_a_bad_format_and_an_unknown_bot(tmp_path, capsys):
    from eval.dialogue.cli import main

    assert main(["--data", str(tmp_path / "x.jsonl"), "--format", "pdf"]) == 2
    assert main(["--dataset", "builtin", "--bots", "dtq,gpt"]) == 2
    assert main(["--dataset", "mechanics", "--data-dir", str(tmp_path / "absent")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("error:") for line in lines)


def test_open_pool_gold_present_is_compared_with_the_same_dialogues_closed():
    from eval.dialogue.run import SetRun, summary

    closed = [_session("a", [1]), _session("b", [None], wrong=4), _session("c", [4], wrong=3)]
    opened = [_session("a", [1]), _session("b", [2], wrong=1), _session("c", [None], gold_present=False)]
    run = SetRun(name="toy", n_dialogues=3, n_pool=3, n_open_pool=2, gold_absent=1,
                 sessions={"closed": {"b": closed}, "open": {"b": opened}})
    m = summary(run, n_resamples=100, seed=1)["pools"]["open"]["b"]["measures"]
    assert m["step1_success@3_gold_present"]["value"] == pytest.approx(1.0)
    assert m["step1_success@3_gold_present_closed_pool"]["value"] == pytest.approx(0.5)  # a and b only
    assert m["step1_success@3_gold_present_open_minus_closed"]["value"] == pytest.approx(0.5)


def test_dtdialog_eval_dialogue_reaches_the_dialogue_evaluation(tmp_path, capsys):
    from eval.reconstruct import main

    assert main(["dialogue", "--data", str(tmp_path / "gone.csv"), "--format", "csv"], prog="dtdialog eval") == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "gone.csv" in err


@pytest.mark.slow
def test_the_engine_bot_reads_a_calibrator_of_ones_own(tmp_path):
    from dtdialog.selection.confidence import Calibrator
    from eval.dialogue.cli import main

    def first_answers(argv: list[str]) -> tuple[dict, float]:
        out = tmp_path / f"run{len(argv)}"
        assert main(["--dataset", "builtin", "--limit", "4", "--bots", "dtq", "--ranker", "rules", "--out", str(out),
                     "--no-progress", "--sample-transcripts", "0", "--bootstrap", "20", *argv]) == 0
        data = json.loads((out / "results.json").read_text())
        return data, data["results"][0]["pools"]["closed"]["dtq"]["measures"]["step1_success@1"]["value"]

    shipped, answered = first_answers([])
    assert answered > 0 and shipped["setup"]["calibrator"] == "shipped"
    # a calibrator that doubts every answer: the engine gives no first answer at once
    doubting = Calibrator(ranker="rules", feature_names=("margin",), coef=(0.0,), intercept=-8.0, means=(0.0,),
                          scales=(1.0,)).save(tmp_path / "doubting.json")
    own, answered = first_answers(["--calibrator", str(doubting)])
    assert answered == 0 and own["setup"]["calibrator"] == str(doubting)
    assert f"Calibrator: {doubting}" in (tmp_path / "run2" / "results.md").read_text()


def test_a_baseline_that_cannot_run_here_is_skipped_with_its_reason(monkeypatch):
    import index.dense
    from eval.datasets import load_builtin
    from eval.dialogue.run import run_set

    monkeypatch.setattr(index.dense, "dense_available", lambda: False)
    eval_set = load_builtin().limited(3)
    run = run_set(eval_set, ["dense", "bm25"], seed=1, ranker=None, progress=False)
    assert "[dense] extra is not installed" in run.skipped["dense"]
    assert len(run.sessions["closed"]["bm25"]) == 3 and "dense" not in run.sessions["closed"]
