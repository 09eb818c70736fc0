"""Splitting DT-Q into ordered parts, and the queries built from them."""

from __future__ import annotations

from engine_helpers import build_tree

from dtdialog.understanding.query_builder import build_query
from dtdialog.understanding.subtrees import FACTUAL, RELATIONAL, QuestionPlan, issue_roots, split_question

PAPER_Q = ("Contrast", "NN", [("Joint", "NNN", ["I have checked the spark plugs,", "replaced the battery,",
                                                  "also replaced ignition coils and the solenoid,"]),
                               "but I still could not start my car."])


def test_paper_question_is_one_contrast_part_with_all_edus():
    plan = split_question(build_tree(PAPER_Q))
    assert plan.kind == RELATIONAL and len(plan.parts) == 1
    part = plan.parts[0]
    assert [r.relation for r in part.relations] == ["Contrast"]
    assert [e.index for e in part.edus] == [0, 1, 2, 3]


def test_two_issues_joined_by_default_relation_are_two_parts_in_text_order():
    tree = build_tree(("Elaboration", "NS", [
        ("Joint", "NN", [("Contrast", "NN", ["I replaced the thermostat", "but it still overheats"]),
                         ("Condition", "SN", ["When I turn on the AC", "the temperature climbs fast"])]),
        "It is a 2009 Civic."]))
    plan = split_question(tree)
    assert [p.relations[0].relation for p in plan.parts] == ["Contrast", "Condition"]
    assert [p.index for p in plan.parts] == [0, 1]
    # the trailing default context goes to the nearest (preceding) part
    assert "It is a 2009 Civic." in plan.parts[1].text and "Civic" not in plan.parts[0].text


def test_leading_context_goes_to_following_part():
    tree = build_tree(("Elaboration", "SN", ["My truck has 200k miles.",
                                             ("Cause", "NS", ["It shudders", "because the transmission slips"])]))
    plan = split_question(tree)
    assert len(plan.parts) == 1 and plan.parts[0].edus[0].text == "My truck has 200k miles."


def test_nested_non_default_relations_stay_in_one_part():
    tree = build_tree(("Contrast", "NN", [("Cause", "NS", ["The fan runs", "because the sensor reads hot"]),
                                          "but the gauge shows normal"]))
    roots = issue_roots(tree)
    assert len(roots) == 1
    plan = split_question(tree)
    assert [r.relation for r in plan.parts[0].relations] == ["Contrast", "Cause"]


def test_no_non_default_relation_is_one_factual_part():
    tree = build_tree(("Elaboration", "NS", ["What is brake fluid made of?", "I mean the DOT 4 kind."]))
    plan = split_question(tree)
    assert plan.kind == FACTUAL and len(plan.parts) == 1 and not plan.parts[0].relations
    assert len(plan.parts[0].edus) == 2


def test_plan_round_trips_and_step_clamps():
    plan = split_question(build_tree(PAPER_Q))
    again = QuestionPlan.from_dict(plan.to_dict())
    assert again.tree == plan.tree and len(again.parts) == len(plan.parts)
    assert plan.part(5) is plan.parts[-1]


def test_query_has_keywords_rr_terms_and_exclusions():
    plan = split_question(build_tree(PAPER_Q))
    query = build_query(plan, part_index=0, exclude_ids=["a#1"], size=7)
    assert {"spark", "plugs", "battery", "solenoid", "start", "car"} <= set(query.keywords)
    assert [t.relation for t in query.rr_terms] == ["Contrast"]
    assert "start" in query.rr_terms[0].words
    assert query.exclude_ids == ("a#1",) and query.size == 7
    assert "still" not in query.keywords and "the" not in query.keywords


def test_next_step_query_adds_followup_keywords_and_relations():
    plan = split_question(build_tree(PAPER_Q))
    followup = build_tree(("Contrast", "NN", ["It did at first", "but not anymore."]))
    query = build_query(plan, part_index=1, followups=[followup])
    assert query.keywords[0] == "first" and "anymore" in query.keywords
    assert [t.relation for t in query.rr_terms] == ["Contrast", "Contrast"]
