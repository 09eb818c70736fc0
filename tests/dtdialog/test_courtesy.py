"""Courtesy in a customer's question is no part of the problem (``dtdialog.understanding.courtesy``)."""

from __future__ import annotations

import pytest
from engine_helpers import TableParser, build_tree, make_index

from dtdialog.selection.selector import AnswerSelector
from dtdialog.understanding.courtesy import without_courtesy

FOCUS = ("Hi everyone, hope you're all well. So I bought a used 2012 Focus last month and since then the battery has "
         "died twice overnight. The guy at the parts store tested the battery and said it is fine. Thanks in advance!")


@pytest.mark.parametrize("text, problem", [
    (FOCUS, "So I bought a used 2012 Focus last month and since then the battery has died twice overnight. The guy at "
            "the parts store tested the battery and said it is fine."),
    ("Hey guys my car won't start.", "My car won't start."),
    ("Hello everyone! Long time lurker, first time poster. My car overheats in traffic. Any help is appreciated!",
     "My car overheats in traffic."),
    ("I hope someone can help. The AC blows warm. Cheers!", "The AC blows warm."),
    ("My brakes squeal. Thank you so much for your time!", "My brakes squeal."),
])
def test_greetings_thanks_and_well_wishes_are_left_out(text, problem):
    assert without_courtesy(text) == problem


@pytest.mark.parametrize("text", [
    "thanks",  # courtesy alone: the intents read it, so it is kept
    "Hello",
    "Thanks for the tip about the fuse, it was blown.",  # a report that thanks
    "I hope the gasket is not gone. It leaks oil.",  # a hope about the car is the customer's worry
    "The hiss goes away when I let off the gas.",
])
def test_what_says_anything_about_the_car_is_kept(text):
    assert without_courtesy(text) == text


def test_the_plan_is_built_from_the_problem_alone(tmp_path):
    """Found by trying the chat: "hope you're all well" was an Attribution an answer had to address, and "hope" and
    "well" were search words."""
    problem = without_courtesy(FOCUS)
    parser = TableParser([problem])
    selector = AnswerSelector(index=make_index(tmp_path / "a.sqlite", {"x#1": "Check the battery."}), parser=parser)
    plan = selector.plan(FOCUS)
    assert plan.question == problem and plan.tree.text == build_tree(problem).text
    assert not any("hope" in part.text.lower() or "thanks" in part.text.lower() for part in plan.parts)
