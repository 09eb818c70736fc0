"""Stage 6, choose: the scorer's first choice stays, alternatives far off topic are rejected, the rest recorded."""

from __future__ import annotations

from dtdialog.selection.agreement import AgreementResult
from dtdialog.selection.scoring import RankedCandidate
from dtdialog.selection.stages import Scored, StepRecord, choose
from dtdialog.selection.stages.choose import TOPIC_RATIO
from index.base import AnswerDocument


def _cand(doc_id: str, *, topic: float | None, score: float = 0.0, continuation: float = 0.0) -> RankedCandidate:
    doc = AnswerDocument(id=doc_id, dialogue_id=doc_id.split("#")[0], position=1, text=doc_id)
    features = {"continuation": continuation} | ({"topic": topic} if topic is not None else {})
    return RankedCandidate(document=doc, retrieval_score=1.0, score=score, features=features,
                           agreement=AgreementResult(verdict=True, score=1.0, addressed=1, required=1))


def test_off_topic_alternatives_are_rejected_but_the_first_choice_and_the_successor_stay():
    best = _cand("best#1", topic=0.2, score=0.9)                     # a learned scorer's pick, kept whatever its topic
    on = _cand("on#1", topic=0.6, score=0.8)
    off = _cand("off#1", topic=0.6 * TOPIC_RATIO - 0.01, score=0.7)
    successor = _cand("next#3", topic=0.0, score=0.6, continuation=1.0)
    unscored = [_cand(c.id, topic=c.features["topic"]) for c in (best, on, off, successor)] + \
        [_cand("dropped#1", topic=0.5)]
    record = StepRecord()
    choice = choose(unscored, Scored(kept=[best, on, off, successor]), record=record)
    assert [c.id for c in choice.kept] == ["best#1", "on#1", "next#3"]
    assert choice.off_topic == ["off#1"] == record.off_topic
    assert [c.id for c in choice.rejected] == ["off#1", "dropped#1"]
    assert all(c.score == 0.0 for c in choice.rejected)              # rejected ones are the unscored candidates
    assert record.candidates == choice.kept and record.rejected == choice.rejected


def test_without_topic_features_every_kept_candidate_stays():
    kept = [_cand("a#1", topic=None, score=0.9), _cand("b#1", topic=None, score=0.1)]
    choice = choose(kept, Scored(kept=kept), record=StepRecord())
    assert [c.id for c in choice.kept] == ["a#1", "b#1"] and choice.rejected == [] and choice.off_topic == []


def test_each_rejected_candidate_is_recorded_with_why_it_was_not_offered():
    best = _cand("best#1", topic=0.6, score=0.9)
    off = _cand("off#1", topic=0.6 * TOPIC_RATIO - 0.01, score=0.7)
    violating = _cand("rule#1", topic=0.6)
    violating.features["constraint_violations"] = 1.0
    disagreeing = _cand("dis#1", topic=0.6)
    disagreeing.agreement = AgreementResult(verdict=False, score=0.0, addressed=0, required=1)
    record = StepRecord()
    choose([best, off, violating, disagreeing], Scored(kept=[best, off]), record=record)
    assert record.rejected_reasons == {"off#1": "off topic", "rule#1": "constraint", "dis#1": "no agreement"}
    assert [r["reason"] for r in record.to_dict()["rejected"]] == ["off topic", "constraint", "no agreement"]
    assert record.to_dict(limit=1)["rejected_total"] == 3 and len(record.to_dict(limit=1)["rejected"]) == 1
