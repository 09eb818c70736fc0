"""Stage 2, query: keywords plus ``RR [phrase]`` terms for the step's part, reply and previous answer."""

from __future__ import annotations

from engine_helpers import PAPER_C1, text_of
from stage_helpers import car_stage_world, plan_of

from dtdialog.selection.stages import StepRecord, form_query


def test_first_step_query_has_the_part_keywords_and_its_rr_term(tmp_path):
    parser, index, tools = car_stage_world(tmp_path)
    step, _ = plan_of(parser, tools)
    record = StepRecord()
    query = form_query(step, exclude_ids=["coil#1"], size=25, whole_question=False, record=record)
    assert {"spark", "battery", "coils", "start", "car"} <= set(query.keywords)
    assert [t.relation for t in query.rr_terms] == ["Contrast"]
    assert "battery" in query.rr_terms[0].words
    assert list(query.exclude_ids) == ["coil#1"] and query.size == 25
    assert record.query == query.to_dict()
    index.close()


def test_a_reply_leads_the_query_and_the_previous_answer_lends_its_words(tmp_path):
    parser, index, tools = car_stage_world(tmp_path)
    step, _ = plan_of(parser, tools, step=1, followups=[text_of(PAPER_C1)], context_ids=["nostart#1"])
    query = form_query(step, exclude_ids=["nostart#1"], size=10, whole_question=False, record=StepRecord())
    keywords = list(query.keywords)
    assert keywords[:2] == ["first", "anymore"]                         # C1's own words come first
    assert {"fuel", "engine"} <= set(keywords)                          # lent by nostart#1
    assert "Contrast [first anymore]" in [str(t) for t in query.rr_terms]
    index.close()
