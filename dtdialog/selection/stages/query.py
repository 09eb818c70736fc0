"""Stage 2: the step's search query - keywords plus ``RR [phrase]`` terms (paper section 3.4)."""

from __future__ import annotations

from collections.abc import Sequence

from dtdialog.selection.stages.plan import StepPlan
from dtdialog.selection.stages.record import StepRecord
from dtdialog.understanding.query_builder import build_query
from index.base import SearchQuery


def form_query(step: StepPlan, *, exclude_ids: Sequence[str], size: int, whole_question: bool,
               record: StepRecord) -> SearchQuery:
    """Return the query for the step's part, its reply C_i and the previous answer's keywords."""
    query = build_query(step.plan, part_index=step.part_index,
                        followups=[step.followup_tree] if step.followup_tree else [],
                        exclude_ids=exclude_ids, size=size,
                        context_keywords=list(step.previous.keywords) if step.previous is not None else (),
                        whole_question=whole_question)
    record.query = query.to_dict()
    return query
