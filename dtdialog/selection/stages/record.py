"""The trace record of one ranking step, written by the stages as they decide."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dtdialog.selection.scoring import RankedCandidate


@dataclass
class StepRecord:
    """What each stage of one step decided; ``to_dict`` is the step's JSON trace.

    plan: ``part_index``, ``requirements``, ``constraints``, ``followup_dt``; query: ``query``;
    candidates: ``retrieved``, ``successor``, ``duplicates``; agreement: ``agreeing``;
    scoring: ``rescued``; already tried: ``tried``, ``already_tried``, ``mentions_tried``; condition clash: ``condition_clash``; presupposition: ``presupposition``, ``unreported_evidence``; branch clash: ``branch_clash``, ``branch_follows``, ``unanswered``; logged opening: ``logged_question``; choose: ``candidates``, ``rejected``,
    ``rejected_reasons``, ``off_topic``; position: ``position`` (the first-step candidates moved behind the openers, a later step's
    answers pointing back to another dialogue, and why; empty
    when nothing moved).
    """

    part_index: int = 0
    requirements: list[str] = field(default_factory=list)
    constraints: list[dict[str, Any]] = field(default_factory=list)
    followup_dt: str | None = None
    query: dict[str, Any] = field(default_factory=dict)
    retrieved: int = 0
    successor: str | None = None
    duplicates: list[str] = field(default_factory=list)
    agreeing: int = 0
    rescued: list[str] = field(default_factory=list)
    off_topic: list[str] = field(default_factory=list)
    position: dict[str, Any] = field(default_factory=dict)
    # candidates are serialised only when a trace is asked for: most rankings (evaluation) never are
    candidates: list[RankedCandidate] = field(default_factory=list)
    rejected: list[RankedCandidate] = field(default_factory=list)
    # already tried: what the customer reported done, and answer id -> why it was demoted
    tried: list[dict[str, Any]] = field(default_factory=list)
    already_tried: dict[str, str] = field(default_factory=dict)
    # answer id -> the positions in ``tried`` of the parts found fine that its main clause is about (it suspects them)
    mentions_tried: dict[str, list[int]] = field(default_factory=dict)
    # condition clash: answer id -> why it was demoted (it stops when the customer says it happens)
    condition_clash: dict[str, str] = field(default_factory=dict)
    # presupposition: answer id -> the fact its opening takes for granted that nobody stated
    presupposition: dict[str, str] = field(default_factory=dict)
    # answer id -> the kind of evidence it needs that the customer never reported ("light"), for the answers that led
    # before the presupposition stage, best first: the detail an abstention asks for
    unreported_evidence: dict[str, str] = field(default_factory=dict)
    # branch clash: answer id -> the logged reply it was written for, which the customer's reply contradicts
    branch_clash: dict[str, str] = field(default_factory=dict)
    # branch: the logged next answer put first because the customer's reply took the branch it was written for
    branch_follows: str | None = None
    # branch: the yes/no question of the answer just given that the customer's reply left open, so its logged next
    # answer could not follow: the question an abstention asks again
    unanswered: str | None = None
    # logged opening: the one nearest the customer's first words, its cosine, gap and probability (first step only)
    logged_question: dict[str, Any] = field(default_factory=dict)
    # choose: rejected answer id -> why it was not offered (off topic, constraint, no agreement)
    rejected_reasons: dict[str, str] = field(default_factory=dict)

    def to_dict(self, *, limit: int = 10) -> dict[str, Any]:
        """Return the JSON trace of this step (top ``limit`` kept and rejected candidates)."""
        return {
            "part_index": self.part_index, "requirements": self.requirements, "query": self.query,
            "constraints": self.constraints, "followup_dt": self.followup_dt,
            "candidates": [c.to_dict() for c in self.candidates[:limit]],
            "rejected": [{**c.to_dict(), "reason": self.rejected_reasons.get(c.id, "")} for c in self.rejected[:limit]],
            "rejected_total": len(self.rejected),
            "retrieved": self.retrieved, "successor": self.successor, "duplicates": self.duplicates,
            "agreeing": self.agreeing, "rescued": self.rescued, "off_topic": self.off_topic,
            "tried": self.tried, "already_tried": self.already_tried, "mentions_tried": self.mentions_tried,
            "condition_clash": self.condition_clash,
            "presupposition": self.presupposition, "unreported_evidence": self.unreported_evidence,
            "branch_clash": self.branch_clash,
            "branch_follows": self.branch_follows, "unanswered": self.unanswered, "position": self.position,
            "logged_question": self.logged_question,
        }
