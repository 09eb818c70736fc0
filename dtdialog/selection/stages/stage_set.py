"""Which stages read the discourse tree: the engine's, or the ablation's without it (``EngineSpec.use_tree``).

``AnswerSelector`` runs the same stages either way; three of them are swapped here, chosen once at assembly:

* ``shape``: the question's and replies' trees as parsed, or flattened into one multinuclear Joint over the same
  EDUs (``flat_tree``), so DT-Q is one factual part and no query carries an ``RR [phrase]`` term;
* ``agreement``: rhetorical agreement (``check_agreement``), or none (``no_agreement``: a neutral verdict, score 0);
* ``tried``: what the customer reported done (``known_tried``), or nothing (``nothing_tried``: no memory, no demotion).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dtdialog.selection.agreement import AgreementResult
from dtdialog.selection.stages.agreement_stage import AgreedCandidate, check_agreement
from dtdialog.selection.stages.already_tried import known_tried
from dtdialog.selection.stages.candidates import CandidatePool
from dtdialog.selection.stages.plan import StepPlan
from dtdialog.selection.stages.record import StepRecord
from dtdialog.selection.stages.tools import StageTools
from dtdialog.understanding.tried import TriedAction
from parsers.tree import DiscourseTree, Node

#: what a candidate carries when agreement is not checked: it passes every filter and adds nothing to a score
NOT_CHECKED = AgreementResult(verdict=True, score=0.0, addressed=0, required=0)


def flat_tree(tree: DiscourseTree) -> DiscourseTree:
    """Return ``tree`` with its relations removed: its EDUs as the nuclei of one Joint (a one-EDU tree as it is)."""
    if len(tree.edus) < 2:
        return tree
    root = Node.relate("Joint", [Node.leaf(e.index) for e in tree.edus], "N" * len(tree.edus))
    return DiscourseTree(text=tree.text, edus=tree.edus, root=root, parser=tree.parser, meta=tree.meta)


def no_agreement(step: StepPlan, pool: CandidatePool, *, agreement, record: StepRecord) -> list[AgreedCandidate]:
    """Return every candidate of ``pool`` with the neutral ``NOT_CHECKED`` verdict, in pool order."""
    record.agreeing = 0
    return [AgreedCandidate(candidate=c, agreement=NOT_CHECKED) for c in pool.candidates]


def nothing_tried(step: StepPlan, remembered: Sequence[TriedAction], *, tools: StageTools,
                  record: StepRecord) -> list[TriedAction]:
    """Return no tried action: neither the session's memory nor the question's or reply's reports are read."""
    return []


@dataclass(frozen=True)
class StageSet:
    """The tree-reading stages an ``AnswerSelector`` runs (see the module docstring)."""

    shape: Callable[[DiscourseTree], DiscourseTree]
    agreement: Callable[..., list[AgreedCandidate]]
    tried: Callable[..., list[TriedAction]]
    uses_tree: bool


def _as_parsed(tree: DiscourseTree) -> DiscourseTree:
    return tree


TREE_STAGES = StageSet(shape=_as_parsed, agreement=check_agreement, tried=known_tried, uses_tree=True)
FLAT_STAGES = StageSet(shape=flat_tree, agreement=no_agreement, tried=nothing_tried, uses_tree=False)


def stage_set(use_tree: bool) -> StageSet:
    """Return the stages of an engine with (``TREE_STAGES``) or without (``FLAT_STAGES``) the discourse tree."""
    return TREE_STAGES if use_tree else FLAT_STAGES
