"""Stage 7: dialogue position - the first step delivers answers that can open a dialogue.

A stored answer that points back to earlier turns ("Then focus on the range switch", "That confirms ...") reads
as nonsense when it is the first thing a customer sees. On the first step (the question alone, no follow-up yet)
such candidates are moved behind every candidate that can open a dialogue and scores within ``margin`` of the
best opening, when that opening is confident: its calibrated probability of being right, were it delivered,
reaches ``EngineConfig.abstention.abstain_below`` (the confidence at which the engine would answer at all). Without a
calibrator, or when the best opening is not confident, the margin is counted from the best candidate: a
follow-up that reads as standalone advice and is far ahead of every opening stands, since a follow-up that fits
beats an opening that does not. One whose opening points back never does: it goes behind the first candidate
that stands alone, whatever the scores. On later steps the ``continuation`` and ``step_match`` features already
prefer the follow-up that came after the answer just given; there only an answer whose opening points back and that
continues no answer on screen goes behind the first that stands alone: its "Then a stuck relay is most likely"
answers a turn of its own dialogue this customer never saw (it was given at 21% to "fuse is fine" about brake lights).

``mode`` (``EngineConfig.position.step1_position``): ``off``; ``standalone`` demotes answers whose opening points back
(``index.position``, decided from their discourse tree), for an index whose dialogue roles mean nothing;
``opening`` demotes every answer that was a follow-up in its source dialogue, those that point back furthest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from dtdialog.selection.scoring import RankedCandidate
from dtdialog.selection.stages.choose import Choice
from dtdialog.selection.stages.record import StepRecord
from index.position import OPENING, position_of

MODES = ("off", "standalone", "opening")


def can_open(cand: RankedCandidate, mode: str) -> bool:
    """Return True when ``cand`` may be the first answer of a dialogue under ``mode``."""
    position = position_of(cand.document)
    if mode == "opening":
        return position.role == OPENING
    return position.stands_alone


def order_by_position(choice: Choice, *, first_step: bool, mode: str, margin: float, record: StepRecord,
                      confidence: Callable[[Sequence[RankedCandidate]], float | None] | None = None,
                      confident_at: float = 0.0) -> Choice:
    """Return ``choice`` with first-step candidates that cannot open a dialogue behind the confident openers.

    ``first_step``: the question alone, no follow-up yet (later steps keep the scorer's order).
    The reference score is the best opening's when ``confidence`` (the calibrator: a ranked list -> P(its top is
    right)) gives that opening, put first, at least ``confident_at``; else the best candidate's. A confident
    opener is a candidate that can open and scores within ``margin`` of the reference.
    Every candidate that cannot open gets its score capped at the lowest confident opener's minus ``margin``
    (the scorer's value stays in ``features["score_before_position"]``), so the list stays sorted by score and a
    demoted follow-up never competes with an opening in a clarification. Among the capped ones, under
    ``opening``, those that read as standalone come first. Whatever the confidence, an answer whose opening points
    back ("Then ...") never goes before one that stands alone: it is capped below the first such one by ``margin``.
    The demoted ids and why go to ``record.position``.
    """
    if mode == "off" or len(choice.kept) < 2:
        return choice
    opening_confidence = None
    if first_step:
        kept, opening_confidence = _behind_openers(choice.kept, mode, margin, confidence, confident_at)
        kept = _pointing_back_behind(kept, margin)
    else:
        kept = _pointing_back_behind(choice.kept, margin, fits=_continues_or_stands_alone)
    old = {c.document.id: (i, c.score) for i, c in enumerate(choice.kept)}
    demoted = [c for i, c in enumerate(kept) if i > old[c.document.id][0] or c.score < old[c.document.id][1]]
    if not demoted:
        return choice
    record.position = {"mode": mode, "demoted": [c.document.id for c in demoted],
                       "reasons": {c.document.id: _why(c) for c in demoted}}
    if opening_confidence is not None:
        record.position["opening_confidence"] = opening_confidence
    record.candidates = kept
    return Choice(kept=kept, rejected=choice.rejected, off_topic=choice.off_topic)


def _behind_openers(kept: list[RankedCandidate], mode: str, margin: float, confidence,
                    confident_at: float) -> tuple[list[RankedCandidate], float | None]:
    """Return ``kept`` with the candidates that cannot open capped behind the confident openers, and the best
    opening's confidence (None when not asked)."""
    if all(can_open(c, mode) for c in kept):
        return kept, None  # nothing to demote: a single-answer FAQ index (every answer an opening) is never reordered
    best, opening_confidence = _reference_score(kept, mode, confidence, confident_at)
    openers = [c for c in kept if best - c.score <= margin and can_open(c, mode)]
    if not openers:
        return kept, opening_confidence
    cap, opener_ids = openers[-1].score - margin, {c.document.id for c in openers}
    rest = [c if can_open(c, mode) else _capped(c, cap) for c in kept if c.document.id not in opener_ids]
    # a stable sort: equal capped scores keep standalone follow-ups first, then the scorer's order
    rest.sort(key=lambda c: (-c.score, not position_of(c.document).stands_alone))
    return openers + rest, opening_confidence


def _stands_alone(cand: RankedCandidate) -> bool:
    return position_of(cand.document).stands_alone


def _continues_or_stands_alone(cand: RankedCandidate) -> bool:
    return cand.features.get("continuation", 0.0) > 0 or _stands_alone(cand)


def _pointing_back_behind(kept: list[RankedCandidate], margin: float,
                          fits: Callable[[RankedCandidate], bool] = _stands_alone) -> list[RankedCandidate]:
    """Return ``kept`` with every answer that does not ``fits`` (stand alone) and stands before the first that does
    capped behind it.

    A mid-dialogue answer ("Then check the fuses", "That confirms ...") is nonsense as a first answer however well
    it scores; when no candidate stands alone the order stays (the abstention judges that list).
    """
    first = next((i for i, c in enumerate(kept) if fits(c)), None)
    if not first:
        return kept
    cap = kept[first].score - margin
    pending, out = [_capped(c, cap) for c in kept[:first]], [kept[first]]
    # merged in by score without sorting the rest: a rescued candidate keeps the place the scorer gave it
    for cand in kept[first + 1:]:
        while pending and pending[0].score > cand.score:
            out.append(pending.pop(0))
        out.append(cand)
    return out + pending


def _reference_score(kept: list[RankedCandidate], mode: str, confidence, confident_at: float) -> tuple[float, float | None]:
    """Return ``(the score the margin counts from, the best opening's confidence or None)``."""
    first_opener = next((c for c in kept if can_open(c, mode)), None)
    if confidence is None or first_opener is None:
        return kept[0].score, None
    value = confidence([first_opener, *(c for c in kept if c is not first_opener)])
    if value is not None and value >= confident_at:
        return first_opener.score, value
    return kept[0].score, value


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
