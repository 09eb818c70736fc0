"""Stage 1: what this dialogue step must answer - the part of DT-Q, the user's reply C_i, the relations to address.

Paper steps 1-2 (DT-Q split into parts) happen once per question in ``subtrees.split_question``; this
stage picks the step's part and turns its non-default relations into ``Requirement``s. A follow-up
borrows the entities of the answer it replies to (context terms), since "It did at first" has none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dtdialog.selection.agreement import Requirement
from dtdialog.selection.stages.record import StepRecord
from dtdialog.selection.stages.tools import StageTools
from dtdialog.understanding.constraints import Constraint
from dtdialog.understanding.subtrees import QuestionPart, QuestionPlan
from index.base import AnswerDocument
from parsers.tree import DiscourseTree


@dataclass
class StepPlan:
    """One step's plan: the part it answers, the reply and previous answer it follows, and what to address."""

    plan: QuestionPlan
    step: int
    part_index: int
    constraints: list[Constraint]
    followup_tree: DiscourseTree | None
    previous: AnswerDocument | None
    context_terms: frozenset[str]
    requirements: list[Requirement]
    #: a factual part (no requirement) agrees with an answer sharing any of these terms
    fallback_terms: frozenset[str]

    @property
    def part(self) -> QuestionPart:
        return self.plan.parts[self.part_index]

    @property
    def is_followup(self) -> bool:
        """True when the step replies to the user (C_i), not to the opening question."""
        return self.followup_tree is not None


def plan_step(plan: QuestionPlan, *, step: int, followups: Sequence[str], constraints: list[Constraint],
              context_ids: Sequence[str], tools: StageTools, record: StepRecord) -> StepPlan:
    """Return the plan of step ``step`` given the replies so far and the answers delivered (last one = context)."""
    said = [f for f in followups if f and f.strip()]
    # with an answer on screen the latest reply is C_i; with none, every reply of the step is a detail the bot asked
    # for ("its P0420", then "2012 Honda Civic with 140k miles"), and the code must not drop out of the query
    followup_text = (said[-1] if context_ids else " ".join(said)) if said else None
    followup_tree = tools.parse(followup_text) if followup_text else None
    previous = tools.document(context_ids[-1]) if context_ids else None
    part_index = min(max(step, 0), len(plan.parts) - 1)
    part = plan.parts[part_index]
    context_terms = _context_terms(followup_tree, previous, tools)
    requirements = _requirements(plan, step, part, followup_tree, context_terms, tools)
    fallback_terms = tools.normalizer.terms_of_edus(part.edus) | frozenset(context_terms)
    record.part_index = part_index
    record.requirements = [r.label() for r in requirements]
    record.constraints = [c.to_dict() for c in constraints]
    record.followup_dt = followup_tree.to_compact() if followup_tree is not None else None
    return StepPlan(plan=plan, step=step, part_index=part_index, constraints=constraints, followup_tree=followup_tree,
                    previous=previous, context_terms=frozenset(context_terms), requirements=requirements,
                    fallback_terms=fallback_terms)


def _context_terms(followup_tree: DiscourseTree | None, previous: AnswerDocument | None,
                   tools: StageTools) -> set[str]:
    """Return the reply's terms plus, for a reply, the terms of the answer it replies to."""
    terms: set[str] = set()
    if followup_tree is not None:
        terms |= tools.normalizer.terms_of_edus(followup_tree.edus)
    if previous is not None and followup_tree is not None:
        terms |= tools.analyze(previous).terms
    return terms


def _requirements(plan: QuestionPlan, step: int, part: QuestionPart, followup_tree: DiscourseTree | None,
                  context_terms: set[str], tools: StageTools) -> list[Requirement]:
    """Return the relations the answer must address: the part's, plus the reply's once the plan is exhausted."""
    agreement = tools.agreement
    followup_relations = [followup_tree.instance(n) for n in followup_tree.non_default_nodes()] \
        if followup_tree is not None else []
    if step >= len(plan.parts) and followup_relations:
        # plan exhausted: A_{i+1} answers "Q_last & C_i" (paper step 7) - the last part's issues are still
        # open, and the reply adds its own ("did at first but not anymore")
        part_terms = tools.normalizer.terms_of_edus(part.edus)
        return (agreement.requirements(part.relations, context_terms=context_terms)
                + agreement.requirements(followup_relations, context_terms=context_terms | part_terms))
    return agreement.requirements(part.relations, context_terms=context_terms)
