"""Stage 5b: the scorer's ranking, and the partial-agreement rescue when only off-topic answers agreed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from dtdialog.selection.scoring import CandidateScorer, RankedCandidate
from dtdialog.selection.stages.plan import StepPlan
from dtdialog.selection.stages.record import StepRecord

#: When the best answer that passed agreement covers less than this share of the best retrieved answer's topic,
#: the parse probably asks for one relation too many: answers addressing at least ``RESCUE_AGREEMENT`` of the
#: required relations and on topic are admitted too (feature ``partial_agreement``), so a shifted parse never
#: leaves only off-topic answers that happened to match every relation.
RESCUE_TOPIC = 0.75
RESCUE_AGREEMENT = 0.5


@dataclass
class Scored:
    """The scorer's kept candidates, best first, and the ids admitted by the rescue."""

    kept: list[RankedCandidate]
    rescued: list[str] = field(default_factory=list)
    #: the candidates a demotion of factor 1 took out of the ranking, scores kept (``demote``), and its reasons
    removed: list[RankedCandidate] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)

    def resorted(self) -> Scored:
        """Return these candidates sorted by score again, equal scores in their present order (after a stage
        changed some scores: the already-tried and condition-clash demotions)."""
        order = {c.document.id: i for i, c in enumerate(self.kept)}
        return replace(self, kept=sorted(self.kept, key=lambda c: (-c.score, order[c.document.id])))


def demote(scored: Scored, reason: Callable[[RankedCandidate], str | None], *, penalty: float,
           feature: str) -> tuple[Scored, dict[str, str]]:
    """Return ``scored`` with every candidate ``reason`` explains multiplied by ``1 - penalty``, marked in
    ``features[feature]`` and re-sorted (stable), and ``{answer id: the reason}`` for the trace.

    A penalty of 1 takes those candidates out, their scores as the scorer left them (``Scored.removed``), as a
    constraint penalty of 1 does: an answer with score 0 would still be offered, and its model logit would still make
    the runner-up look doubtful.
    """
    why: dict[str, str] = {}
    for cand in scored.kept:
        found = reason(cand)
        if found is not None:
            cand.score *= 1.0 if penalty >= 1.0 else 1.0 - penalty
            cand.features[feature] = 1.0
            why[cand.document.id] = found
    if not why:
        return scored, why
    if penalty >= 1.0:
        return replace(scored, kept=[c for c in scored.kept if c.document.id not in why],
                       removed=[*scored.removed, *(c for c in scored.kept if c.document.id in why)],
                       dropped={**scored.dropped, **why}), why
    return scored.resorted(), why


def score_candidates(step: StepPlan, candidates: list[RankedCandidate], *, scorer: CandidateScorer,
                     followups: Sequence[str], record: StepRecord) -> Scored:
    """Return the scorer's kept candidates; scored once more with the rescued ones when the rescue applies."""
    kept = scorer.score(plan=step.plan, part_index=step.part_index, followups=list(followups), candidates=candidates)
    rescued = partial_rescue(candidates, kept)
    if rescued:
        kept = scorer.score(plan=step.plan, part_index=step.part_index, followups=list(followups),
                            candidates=[c for c in candidates if c.document.id not in rescued]
                            + list(rescued.values()))
    record.rescued = list(rescued)
    return Scored(kept=kept, rescued=list(rescued))


def partial_rescue(candidates: list[RankedCandidate], kept: list[RankedCandidate]) -> dict[str, RankedCandidate]:
    """Return on-topic candidates with partial agreement (verdict set, ``partial_agreement`` = 1) by id, or {}.

    Only when every kept candidate is far less on topic than the best retrieved one (``RESCUE_TOPIC``).
    """
    best_any = max((c.features.get("topic", 0.0) for c in candidates), default=0.0)
    best_kept = max((c.features.get("topic", 0.0) for c in kept), default=0.0)
    if best_any <= 0 or best_kept >= RESCUE_TOPIC * best_any:
        return {}
    kept_ids = {c.document.id for c in kept}
    out: dict[str, RankedCandidate] = {}
    for cand in candidates:
        agreement = cand.agreement
        if cand.document.id in kept_ids or agreement.verdict or agreement.required == 0:
            continue
        if agreement.addressed / agreement.required < RESCUE_AGREEMENT:
            continue
        if cand.features.get("topic", 0.0) < RESCUE_TOPIC * best_any:
            continue
        features = {**cand.features, "partial_agreement": 1.0}
        out[cand.document.id] = replace(cand, agreement=replace(agreement, verdict=True), features=features)
    return out
