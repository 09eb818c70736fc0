"""The readable trace: the learned ranker's per-feature contributions for the chosen answer."""

from __future__ import annotations

from dtdialog.dialogue.trace import contribution_summary
from dtdialog.ranking.features import DT_FEATURES, FEATURE_LABELS, HYBRID_FEATURES


def test_contribution_summary_orders_by_magnitude_and_skips_bookkeeping():
    features = {"dense": 0.61, "contribution.dense": 0.4, "contribution.bm25": -1.3, "contribution.sg": 0.05,
                "contribution.intercept": -2.0, "contribution.linear": 1.0, "model_logit": -2.85}
    text = contribution_summary(features, top=2)
    assert text == "learned ranker logit -2.85: bm25 -1.30, dense +0.40"
    labelled = contribution_summary(features, top=2, labels=True)
    assert labelled == (f"learned ranker logit -2.85: {FEATURE_LABELS['bm25']} (bm25) -1.30, "
                        f"{FEATURE_LABELS['dense']} (dense) +0.40")
    assert contribution_summary({"dense": 0.5, "retrieval": 3.0}) == ""  # the rule scorer has no contributions


def test_a_step_trace_is_the_record_the_stages_wrote(tmp_path):
    from engine_helpers import PAPER_Q, car_world, text_of

    from dtdialog.dialogue.trace import TurnTrace

    selector, _, _ = car_world(tmp_path)
    outcome = selector.rank_outcome(question=text_of(PAPER_Q))
    record = outcome.record
    trace = TurnTrace(session_id="s", turn=1, user_text=text_of(PAPER_Q), state_before="new")
    trace.step(outcome, step=0)
    step = trace.to_dict()["steps"][0]
    # the keys readers (CLI --explain, API, session transcripts) have always read, in their order, then the stages' own
    assert list(step)[:8] == ["step", "part_index", "requirements", "query", "constraints", "followup_dt",
                              "candidates", "rejected"]
    assert step["requirements"] == outcome.requirements == record.requirements
    assert step["query"] == outcome.query.to_dict()
    assert step["candidates"] == [c.to_dict() for c in outcome.candidates[:10]] == trace.data["candidates"]
    assert step["rejected"] == [{**c.to_dict(), "reason": record.rejected_reasons[c.id]} for c in outcome.rejected[:10]]
    assert step["rejected_total"] == len(outcome.rejected)
    # what the candidate and choose stages decided on the way
    assert step["retrieved"] == len(outcome.candidates) + len(outcome.rejected) + len(record.duplicates)
    assert step["off_topic"] and set(step["off_topic"]) <= {c.id for c in outcome.rejected}
    assert step["agreeing"] == sum(c.agreement.verdict for c in outcome.candidates + outcome.rejected)
    assert outcome.to_dict(limit=1)["candidates"] == step["candidates"][:1]


def test_every_ranker_feature_has_a_label_an_agent_can_read():
    for name in HYBRID_FEATURES + DT_FEATURES:
        assert FEATURE_LABELS.get(name) and "_" not in FEATURE_LABELS[name], name


def test_explain_names_each_answer_demoted_for_a_presupposed_fact():
    from dtdialog.dialogue.trace import _tried_lines

    why = 'it presupposes a prior job you never mentioned: "a starter job"'
    lines = _tried_lines({"presupposition": {"no_start-010#1": why}, "condition_clash": {"b#1": "it stops when"}})
    assert f"  demoted no_start-010#1: {why}" in lines and "  demoted b#1: it stops when" in lines
