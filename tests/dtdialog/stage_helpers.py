"""The stages' collaborators over the hand-built car world: a real agreement checker, table parser and SQLite index."""

from __future__ import annotations

from pathlib import Path

from engine_helpers import ANSWERS, PAPER_C1, PAPER_Q, TableParser, make_index, text_of

from dtdialog.selection.agreement import RhetoricalAgreement
from dtdialog.selection.stages import StageTools, StepPlan, StepRecord, plan_step
from dtdialog.understanding.subtrees import QuestionPlan, split_question
from parsers.tree import DiscourseTree


def stage_tools(parser: TableParser, index) -> StageTools:
    """Return stage tools whose analyses come from the answers' stored DTs (as the selector's cache does)."""
    agreement = RhetoricalAgreement()
    return StageTools(normalizer=agreement.normalizer, agreement=agreement, parse=parser.parse,
                      analyze=lambda doc: agreement.analyze(DiscourseTree.from_dict(doc.tree)), document=index.get)


def car_stage_world(tmp_path: Path, answers=None):
    """Return (parser, index, tools) over ``answers`` (default: the car world's)."""
    parser = TableParser([PAPER_Q, PAPER_C1])
    index = make_index(tmp_path / "answers.sqlite", answers or ANSWERS)
    return parser, index, stage_tools(parser, index)


def paper_plan(parser: TableParser) -> QuestionPlan:
    text = text_of(PAPER_Q)
    return split_question(parser.parse(text), question=text)


def plan_of(parser: TableParser, tools: StageTools, *, step: int = 0, followups=(), context_ids=(),
            constraints=()) -> tuple[StepPlan, StepRecord]:
    """Return the paper question's plan for ``step`` and the record the plan stage wrote."""
    record = StepRecord()
    step_plan = plan_step(paper_plan(parser), step=step, followups=list(followups), constraints=list(constraints),
                          context_ids=list(context_ids), tools=tools, record=record)
    return step_plan, record
