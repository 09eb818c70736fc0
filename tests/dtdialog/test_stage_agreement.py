"""Stage 4, agreement: every candidate checked against the step's requirements, none dropped."""

from __future__ import annotations

from stage_helpers import car_stage_world, plan_of

from dtdialog.selection.stages import Candidate, CandidatePool, StepRecord, check_agreement
from index.base import SearchHit


def _pool(index, tools, ids):
    return CandidatePool(candidates=[Candidate(hit=SearchHit(document=index.get(i), score=1.0),
                                               analysis=tools.analyze(index.get(i))) for i in ids])


def test_the_question_contrast_is_addressed_by_a_condition_on_the_same_parts(tmp_path):
    parser, index, tools = car_stage_world(tmp_path)
    step, _ = plan_of(parser, tools)
    record = StepRecord()
    agreed = check_agreement(step, _pool(index, tools, ["nostart#1", "battery#1", "brakes#1"]),
                             agreement=tools.agreement, record=record)
    by_id = {a.candidate.document.id: a.agreement for a in agreed}
    assert list(by_id) == ["nostart#1", "battery#1", "brakes#1"]
    assert by_id["nostart#1"].verdict and by_id["nostart#1"].addressed == 1 == by_id["nostart#1"].required
    assert by_id["nostart#1"].chains[0].startswith("Contrast[") and "-> Condition[" in by_id["nostart#1"].chains[0]
    # Elaboration never addresses a Contrast; the brakes Condition shares no entity with the question's relation
    assert not by_id["battery#1"].verdict and by_id["battery#1"].missing == [r.label() for r in step.requirements]
    assert not by_id["brakes#1"].verdict
    assert record.agreeing == 1
    index.close()


def test_a_factual_step_agrees_on_shared_terms_only(tmp_path):
    parser, index, tools = car_stage_world(tmp_path)
    step, _ = plan_of(parser, tools)
    step.requirements = []                                             # as for a question with no relation
    agreed = check_agreement(step, _pool(index, tools, ["battery#1", "brakes#1"]), agreement=tools.agreement,
                             record=StepRecord())
    battery, brakes = (a.agreement for a in agreed)
    assert battery.verdict and battery.required == 0 and battery.overlap
    assert not brakes.verdict and brakes.score == 0.0
    index.close()
