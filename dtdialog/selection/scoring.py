"""Ranked candidates, the scorer hook, and the default ``RuleScorer``.

``RuleScorer`` combines the retrieval score (normalised by the best hit of the step) with the
agreement score, adds the continuation bonus, and applies constraint penalties. The selector
fills ``features`` with ``continuation``, ``question_match``, ``step_match``, ``topic``, ``topic_ratio`` and
``constraint_violations`` before scoring, so a learned
scorer sees the same inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from dtdialog.selection.agreement import AgreementResult, AnswerAnalysis
from dtdialog.setup.engine_config import EngineConfig
from dtdialog.understanding.subtrees import QuestionPlan
from index.base import AnswerDocument

#: the features a demotion stage sets on an answer it has a stated reason against: it repeats what was tried, takes for
#: granted what was never said, or is for a symptom or branch the customer ruled out (``stages.scoring_stage.demote``)
ALREADY_TRIED, PRESUPPOSITION, CONDITION_CLASH, BRANCH_CLASH = (
    "already_tried", "presupposition", "condition_clash", "branch_clash")
OBJECTIONS = (ALREADY_TRIED, PRESUPPOSITION, CONDITION_CLASH, BRANCH_CLASH)


@dataclass
class RankedCandidate:
    """A candidate answer with its retrieval score, agreement with the question part, final score and features.

    ``matched`` (the index fields its search hit matched) and ``analysis`` (its analysed DT) are what the
    engine already found, kept so that callers (the API) never search or parse the answer again.
    """

    document: AnswerDocument
    retrieval_score: float
    agreement: AgreementResult
    score: float = 0.0
    features: dict[str, float] = field(default_factory=dict)
    matched: dict[str, list[str]] = field(default_factory=dict, compare=False)
    analysis: AnswerAnalysis | None = field(default=None, compare=False, repr=False)

    @property
    def id(self) -> str:
        return self.document.id

    @property
    def objected(self) -> bool:
        """True when a stage demoted it for contradicting what the customer said (``OBJECTIONS``)."""
        return any(self.features.get(name) for name in OBJECTIONS)

    def to_dict(self, *, text_chars: int = 160) -> dict[str, Any]:
        """Return a JSON-ready view for traces (the answer text cut to ``text_chars``)."""
        text = self.document.text
        return {"id": self.document.id, "dialogue_id": self.document.dialogue_id,
                "text": text if len(text) <= text_chars else text[:text_chars].rstrip() + "...",
                "retrieval_score": round(self.retrieval_score, 6), "score": round(self.score, 6),
                "features": {k: round(v, 6) for k, v in self.features.items()},
                "agreement": self.agreement.to_dict()}


class CandidateScorer(Protocol):
    """Fills ``score`` (and ``features``) of candidates and returns the ones to keep, best first."""

    def score(self, *, plan: QuestionPlan, part_index: int, followups: Sequence[str],
              candidates: list[RankedCandidate]) -> list[RankedCandidate]: ...


class RuleScorer:
    """score = (1-w)·retrieval/best + w·agreement + c·continuation + q·question_match + s·step_match + t·topic_ratio.

    The sum is multiplied by (1-penalty) per constraint violation.

    Candidates failing agreement are dropped when ``config.rules.require_agreement`` (except on the first
    step when ``config.rules.soft_first_step``, where ``first_step_agreement_weight`` replaces ``w``), else their
    score is multiplied by ``1 - w``; with ``constraint_penalty == 1`` violators are dropped.
    """

    def __init__(self, *, config: EngineConfig | None = None) -> None:
        self.config = config or EngineConfig()

    def score(self, *, plan: QuestionPlan, part_index: int, followups: Sequence[str],
              candidates: list[RankedCandidate]) -> list[RankedCandidate]:
        """Return the kept candidates with ``score`` and ``features`` filled, best first (ties by id)."""
        cfg = self.config
        best = max((c.retrieval_score for c in candidates), default=0.0)
        soft = cfg.rules.soft_first_step and not followups
        weight = cfg.rules.first_step_agreement_weight if soft else cfg.rules.agreement_weight
        kept: list[RankedCandidate] = []
        for cand in candidates:
            retrieval = max(0.0, min(1.0, cand.retrieval_score / best)) if best > 0 else 0.0
            features = dict(cand.features)
            continuation = features.get("continuation", 0.0)
            violations = features.get("constraint_violations", 0.0)
            value = (1 - weight) * retrieval + weight * cand.agreement.score
            value += cfg.scoring.continuation_weight * continuation
            value += cfg.scoring.question_weight * features.get("question_match", 0.0)
            value += cfg.scoring.step_weight * features.get("step_match", 0.0)
            # how much of the question the answer is about, relative to the most on-topic candidate
            value += cfg.rules.topic_weight * features.get("topic_ratio", 0.0)
            if violations:
                if cfg.scoring.constraint_penalty >= 1.0:
                    continue
                value *= (1 - cfg.scoring.constraint_penalty) ** violations
            if not cand.agreement.verdict:
                if cfg.rules.require_agreement and not soft:
                    continue
                value *= 1 - weight
            features.update(retrieval=retrieval, agreement=cand.agreement.score,
                            verdict=1.0 if cand.agreement.verdict else 0.0)
            kept.append(replace(cand, score=value, features=features))
        kept.sort(key=lambda c: (-c.score, c.document.id))
        return kept
