"""Stage 1, plan: the step's part of DT-Q, the reply C_i and the relations the answer must address."""

from __future__ import annotations

from engine_helpers import PAPER_C1, text_of
from stage_helpers import car_stage_world, plan_of

from dtdialog.understanding.constraints import Constraint


def test_first_step_requires_the_question_contrast_and_falls_back_on_the_part_terms(tmp_path):
    parser, index, tools = car_stage_world(tmp_path)
    step, record = plan_of(parser, tools)
    assert step.part_index == 0 and not step.is_followup and step.previous is None
    assert [r.relation for r in step.requirements] == ["Contrast"]   # the Joint inside is a default relation
    assert tools.normalizer.terms_of_text("battery car") <= step.requirements[0].terms
    assert step.context_terms == frozenset()
    assert step.fallback_terms == tools.normalizer.terms_of_edus(step.part.edus)
    assert record.part_index == 0 and record.requirements == [step.requirements[0].label()]
    assert record.followup_dt is None and record.constraints == []
    index.close()


def test_a_reply_borrows_the_terms_of_the_answer_it_replies_to(tmp_path):
    parser, index, tools = car_stage_world(tmp_path)
    reply = text_of(PAPER_C1)
    step, record = plan_of(parser, tools, step=1, followups=[reply, "  "], context_ids=["nostart#1"])
    assert step.followup_tree is parser.parse(reply)                  # the last non-blank reply drives the step
    assert step.previous is not None and step.previous.id == "nostart#1"
    answer_terms = tools.analyze(step.previous).terms
    assert answer_terms <= step.context_terms and tools.normalizer.terms_of_text("fluid") <= answer_terms
    assert all(answer_terms <= r.terms for r in step.requirements)    # "It did at first" borrows "starting fluid"
    assert step.context_terms <= step.fallback_terms
    assert record.followup_dt == step.followup_tree.to_compact()
    index.close()


def test_an_exhausted_plan_adds_the_reply_relations_to_the_last_part(tmp_path):
    parser, index, tools = car_stage_world(tmp_path)
    reply = text_of(PAPER_C1)
    within, _ = plan_of(parser, tools, step=0, followups=[reply])
    beyond, record = plan_of(parser, tools, step=1, followups=[reply])
    assert beyond.part_index == 0                                     # one part: the step is clamped to it
    assert [r.relation for r in within.requirements] == ["Contrast"]
    assert [r.relation for r in beyond.requirements] == ["Contrast", "Contrast"]   # Q1 & C1 (paper step 7)
    assert record.requirements == [r.label() for r in beyond.requirements] and len(set(record.requirements)) == 2
    index.close()


def test_constraints_are_carried_and_recorded(tmp_path):
    parser, index, tools = car_stage_world(tmp_path)
    rule = Constraint("cannot", "I can't remove the engine", ("remove", "engine"))
    step, record = plan_of(parser, tools, step=-3, constraints=[rule])
    assert step.part_index == 0 and step.constraints == [rule]
    assert record.constraints == [rule.to_dict()]
    index.close()


def test_with_no_answer_on_screen_every_reply_of_the_step_is_its_follow_up(tmp_path):
    """Found by trying the chat: "its P0420" then "2012 Honda Civic with 140k miles" (details the bot asked for, no
    answer given yet) ranked the step with the car alone, the code gone from the query. Under an answer, the latest
    reply is C_i."""
    parser, index, tools = car_stage_world(tmp_path)
    details = ["its P0420", "  ", "2012 Honda Civic with 140k miles"]
    step, _ = plan_of(parser, tools, followups=details)
    assert step.followup_tree.text == "its P0420 2012 Honda Civic with 140k miles"
    step, _ = plan_of(parser, tools, step=1, followups=details, context_ids=["nostart#1"])
    assert step.followup_tree.text == "2012 Honda Civic with 140k miles"
    index.close()
