"""Stage 7: dialogue position - the first step delivers answers that can open a dialogue.

A stored answer that points back to earlier turns ("Then focus on the range switch", "That confirms ...") reads
as nonsense when it is the first thing a customer sees. On the first step (the question alone, no follow-up yet)
such candidates are moved behind every candidate that can open a dialogue and scores within ``margin`` of the
best one; when no such opener is confident (none within the margin) the scorer's order stands, since a
follow-up that fits beats an opening that does not. Later steps are left alone: the ``continuation`` and
``step_match`` features already prefer the follow-up that came after the answer just given.

``mode`` (``EngineConfig.step1_position``): ``off``; ``standalone`` demotes answers whose opening points back
(``index.position``, decided from their discourse tree), for an index whose dialogue roles mean nothing;
``opening`` demotes every answer that was a follow-up in its source dialogue, those that point back furthest.
"""

from __future__ import annotations

from dataclasses import replace

from dtdialog.scoring import RankedCandidate
from dtdialog.stages.choose import Choice
from dtdialog.stages.record import StepRecord
from index.position import OPENING, position_of

MODES = ("off", "standalone", "opening")


def can_open(cand: RankedCandidate, mode: str) -> bool:
    """Return True when ``cand`` may be the first answer of a dialogue under ``mode``."""
    position = position_of(cand.document)
    if mode == "opening":
        return position.role == OPENING
    return position.stands_alone


def order_by_position(choice: Choice, *, first_step: bool, mode: str, margin: float, record: StepRecord) -> Choice:
    """Return ``choice`` with first-step candidates that cannot open a dialogue behind the confident openers.

    ``first_step``: the question alone, no follow-up yet (later steps keep the scorer's order).
    A confident opener is a candidate that can open and scores within ``margin`` of the best kept candidate.
    Every candidate that cannot open gets its score capped at the lowest confident opener's minus ``margin``
    (the scorer's value stays in ``features["score_before_position"]``), so the list stays sorted by score and a
    demoted follow-up never competes with an opening in a clarification. Among the capped ones, under
    ``opening``, those that read as standalone come first. The demoted ids and why go to ``record.position``.
    """
    if mode == "off" or not first_step or len(choice.kept) < 2:
        return choice
    best = choice.kept[0].score
    openers = [c for c in choice.kept if best - c.score <= margin and can_open(c, mode)]
    if not openers or all(can_open(c, mode) for c in choice.kept):
        return choice  # nothing to demote: a single-answer FAQ index (every answer an opening) is never reordered
    cap, opener_ids = openers[-1].score - margin, {c.document.id for c in openers}
    rest = [c if can_open(c, mode) else _capped(c, cap) for c in choice.kept if c.document.id not in opener_ids]
    # a stable sort: equal capped scores keep standalone follow-ups first, then the scorer's order
    rest.sort(key=lambda c: (-c.score, not position_of(c.document).stands_alone))
    kept = openers + rest
    old_place = {c.document.id: i for i, c in enumerate(choice.kept)}
    demoted = [c for i, c in enumerate(kept) if i > old_place[c.document.id]]
    if not demoted:
        return choice
    record.position = {"mode": mode, "demoted": [c.document.id for c in demoted],
                       "reasons": {c.document.id: _why(c) for c in demoted}}
    record.candidates = kept
    return Choice(kept=kept, rejected=choice.rejected, off_topic=choice.off_topic)


def _capped(cand: RankedCandidate, cap: float) -> RankedCandidate:
    if cand.score <= cap:
        return cand
    return replace(cand, score=cap, features=cand.features | {"score_before_position": cand.score})


def _why(cand: RankedCandidate) -> str:
    position = position_of(cand.document)
    if not position.stands_alone:
        return position.reason
    if position.role != OPENING:
        return "a follow-up in its source dialogue"
    return "ranked behind the answers that can open a dialogue"
