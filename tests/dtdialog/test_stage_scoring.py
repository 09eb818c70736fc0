"""Stages 5a-5b: the candidates' features, the scorer's ranking and the partial-agreement rescue."""

from __future__ import annotations

import pytest
from engine_helpers import PAPER_C1, text_of
from stage_helpers import car_stage_world, plan_of

from dtdialog.selection.agreement import AgreementResult
from dtdialog.selection.scoring import RankedCandidate, RuleScorer
from dtdialog.selection.stages import (
    LexicalGenerator,
    StepRecord,
    check_agreement,
    describe_candidates,
    form_query,
    gather_candidates,
    score_candidates,
)
from dtdialog.selection.stages.features_stage import CONTEXT_TERM_WEIGHT
from dtdialog.selection.stages.scoring_stage import partial_rescue
from dtdialog.setup.engine_config import EngineConfig
from index.base import AnswerDocument


def _described(parser, index, tools, **plan_args):
    step, _ = plan_of(parser, tools, **plan_args)
    record = StepRecord()
    exclude = list(plan_args.get("context_ids", ()))
    query = form_query(step, exclude_ids=exclude, size=20, whole_question=False, record=record)
    pool = gather_candidates(step, query, generator=LexicalGenerator(index=index),
                             followups=list(plan_args.get("followups", ())), exclude_ids=exclude, size=20,
                             tools=tools, record=record)
    agreed = check_agreement(step, pool, agreement=tools.agreement, record=record)
    return step, pool, describe_candidates(step, agreed, tools=tools)


def test_first_step_features_include_the_topic_and_keep_hit_fields(tmp_path):
    parser, index, tools = car_stage_world(tmp_path)
    _, pool, cands = _described(parser, index, tools)
    assert [c.id for c in cands] == [c.document.id for c in pool.candidates]
    by_id = {c.id: c for c in cands}
    assert by_id["nostart#1"].features["step_match"] == 1.0 and by_id["nostart#3"].features["step_match"] == 0.0
    assert max(c.features["topic_ratio"] for c in cands) == 1.0
    assert by_id["nostart#1"].features["topic"] > by_id["battery#1"].features["topic"]
    assert all("context_share" not in c.features and c.features["continuation"] == 0.0 for c in cands)
    for cand, source in zip(cands, pool.candidates):
        assert cand.retrieval_score == source.hit.score and cand.matched == source.hit.matched
        assert cand.analysis is source.analysis and cand.score == 0.0
    index.close()


def test_a_reply_step_discounts_borrowed_words_marks_the_successor_and_skips_the_topic(tmp_path):
    parser, index, tools = car_stage_world(tmp_path)
    _, pool, cands = _described(parser, index, tools, step=1, followups=[text_of(PAPER_C1)],
                                context_ids=["nostart#1"])
    raw = {c.document.id: c.hit.score for c in pool.candidates}
    by_id = {c.id: c for c in cands}
    assert by_id["nostart#3"].features["continuation"] == 1.0
    assert sum(c.features["continuation"] for c in cands) == 1.0
    for cand in cands:
        share = cand.features["context_share"]
        assert cand.retrieval_score == pytest.approx(raw[cand.id] * (1 - (1 - CONTEXT_TERM_WEIGHT) * share))
        assert "topic" not in cand.features
    assert by_id["nostart#3"].features["context_share"] == 1.0         # only nostart#1 lent its "fuel"
    index.close()


def test_rule_scoring_ranks_and_records_no_rescue_when_the_agreeing_answer_is_on_topic(tmp_path):
    parser, index, tools = car_stage_world(tmp_path)
    step, _, cands = _described(parser, index, tools)
    record = StepRecord()
    scored = score_candidates(step, cands, scorer=RuleScorer(config=EngineConfig()), followups=[], record=record)
    assert scored.kept[0].id == "nostart#1" and scored.rescued == [] == record.rescued
    scores = [c.score for c in scored.kept]
    assert scores == sorted(scores, reverse=True) and scored.kept[0].features["verdict"] == 1.0
    # the first step is soft: answers failing agreement are demoted, not dropped
    assert {c.id for c in scored.kept} == {c.id for c in cands}
    index.close()


def _cand(doc_id: str, *, topic: float, addressed: int, required: int = 2) -> RankedCandidate:
    doc = AnswerDocument(id=doc_id, dialogue_id=doc_id.split("#")[0], position=1, text=doc_id)
    agreement = AgreementResult(verdict=addressed == required, score=addressed / required, addressed=addressed,
                                required=required)
    return RankedCandidate(document=doc, retrieval_score=1.0, agreement=agreement, features={"topic": topic})


def test_partial_rescue_admits_on_topic_half_agreeing_answers_when_only_off_topic_ones_agreed():
    off, half, none = _cand("off#1", topic=0.2, addressed=2), _cand("half#1", topic=0.9, addressed=1), \
        _cand("none#1", topic=1.0, addressed=0)
    rescued = partial_rescue([off, half, none], [off])
    assert list(rescued) == ["half#1"]
    assert rescued["half#1"].agreement.verdict and rescued["half#1"].features["partial_agreement"] == 1.0
    assert not half.agreement.verdict and "partial_agreement" not in half.features   # the input is not changed
    on = _cand("on#1", topic=0.8, addressed=2)
    assert partial_rescue([on, half, none], [on]) == {}                # the kept answer is on topic enough


def test_score_candidates_scores_again_with_the_rescued_answers(tmp_path):
    parser, index, tools = car_stage_world(tmp_path)
    reply = text_of(PAPER_C1)
    step, _ = plan_of(parser, tools, step=1, followups=[reply])
    off, half = _cand("off#1", topic=0.2, addressed=2), _cand("half#1", topic=0.9, addressed=1)
    record = StepRecord()
    scorer = RuleScorer(config=EngineConfig())
    without = scorer.score(plan=step.plan, part_index=0, followups=[reply], candidates=[off, half])
    assert [c.id for c in without] == ["off#1"]                        # a reply step drops disagreeing answers
    scored = score_candidates(step, [off, half], scorer=scorer, followups=[reply], record=record)
    assert scored.rescued == ["half#1"] == record.rescued
    assert {c.id for c in scored.kept} == {"off#1", "half#1"}
    assert next(c for c in scored.kept if c.id == "half#1").features["partial_agreement"] == 1.0
    index.close()
