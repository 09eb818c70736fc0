"""Stage 6: the answers offered - the scorer's first choice plus its on-topic alternatives; the rest is rejected."""

from __future__ import annotations

from dataclasses import dataclass, field

from dtdialog.selection.scoring import RankedCandidate
from dtdialog.selection.stages.record import StepRecord
from dtdialog.selection.stages.scoring_stage import Scored

#: A candidate whose topical coverage of the question is below this share of the best candidate's is off topic:
#: it shares a word or two with the question (one agreeing EDU pair on "battery") but is about something else.
TOPIC_RATIO = 0.35


@dataclass
class Choice:
    """The kept candidates (best first), the rejected ones (unscored, retrieval order) and the off-topic ids."""

    kept: list[RankedCandidate]
    rejected: list[RankedCandidate]
    off_topic: list[str] = field(default_factory=list)


def choose(candidates: list[RankedCandidate], scored: Scored, *, record: StepRecord) -> Choice:
    """Return the step's choice: topical coherence whatever the scorer, so another system's answer never competes.

    The scorer's own first choice stays (a learned scorer may know better); only its alternatives are held to
    the topic, so an answer about another system is never offered next to it nor delivered after a retry.
    """
    best_topic = max((c.features.get("topic", 0.0) for c in scored.kept), default=0.0)
    alternatives = scored.kept[1:]
    kept = scored.kept[:1] + [c for c in alternatives if on_topic(c, best_topic)]
    kept_ids = {c.document.id for c in kept}
    removed = {c.document.id: c for c in scored.removed}  # as scored: a trace and a topic check read their scores
    rejected = [removed.get(c.document.id, c) for c in candidates if c.document.id not in kept_ids]
    off_topic = [c.document.id for c in alternatives if c.document.id not in kept_ids]
    record.candidates, record.rejected, record.off_topic = kept, rejected, off_topic
    record.rejected_reasons = {c.document.id: scored.dropped.get(c.document.id)
                               or rejection_reason(c, off_topic=c.document.id in off_topic) for c in rejected}
    return Choice(kept=kept, rejected=rejected, off_topic=off_topic)


def on_topic(cand: RankedCandidate, best_topic: float) -> bool:
    """Return False for a candidate far below the best kept one's topical coverage (the logged successor is exempt).

    The reference is the best candidate the scorer kept, so an answer dropped for a constraint does not
    make the remaining ones look off topic.
    """
    if cand.features.get("continuation", 0.0) > 0 or "topic" not in cand.features or best_topic <= 0:
        return True
    return cand.features["topic"] >= TOPIC_RATIO * best_topic


def rejection_reason(cand: RankedCandidate, *, off_topic: bool) -> str:
    """Return why a candidate was not offered, in the words the trace shows (``rejected_reasons``).

    A scorer drops a candidate for a constraint it violates or for failing rhetorical agreement (the only
    two rules ``RuleScorer`` and ``LearnedScorer`` drop by); ``choose`` drops off-topic alternatives.
    """
    if off_topic:
        return "off topic"
    if cand.features.get("constraint_violations", 0.0) > 0:
        return "constraint"
    if not cand.agreement.verdict:
        return "no agreement"
    return "not kept by the ranker"
