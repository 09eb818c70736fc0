"""What the stages borrow from the selector: its vocabulary, agreement checker, parser and cached answer analyses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dtdialog.selection.agreement import AnswerAnalysis, RhetoricalAgreement
from dtdialog.understanding.entities import EntityNormalizer
from index.base import AnswerDocument
from parsers.tree import DiscourseTree


@dataclass(frozen=True)
class StageTools:
    """The selector's shared services, passed to the stages that need them.

    ``analyze`` and ``document`` are the selector's cached, failure-tolerant lookups, so a stage never
    parses an answer the engine already analysed nor fails on an answer that left the index.
    """

    normalizer: EntityNormalizer
    agreement: RhetoricalAgreement
    parse: Callable[[str], DiscourseTree]
    analyze: Callable[[AnswerDocument], AnswerAnalysis]
    document: Callable[[str], AnswerDocument | None]
