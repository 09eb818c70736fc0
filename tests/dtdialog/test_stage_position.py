"""Stage 7, dialogue position: on the first step, answers that cannot open a dialogue go behind confident openers."""

from __future__ import annotations

import pytest

from dtdialog.selection.agreement import AgreementResult
from dtdialog.selection.scoring import RankedCandidate
from dtdialog.selection.stages import Choice, StepRecord
from dtdialog.selection.stages.position_stage import order_by_position
from dtdialog.setup.engine_config import EngineConfig
from index.base import AnswerDocument
from parsers.errors import ConfigError


def _cand(doc_id: str, score: float, *, role: str = "opening", alone: bool = True) -> RankedCandidate:
    doc = AnswerDocument(id=doc_id, dialogue_id=doc_id.split("#")[0], position=1, text=doc_id,
                         meta={"role": role, "stands_alone": alone, "position_reason": "" if alone else "opener: then"})
    return RankedCandidate(document=doc, retrieval_score=1.0, score=score,
                           agreement=AgreementResult(verdict=True, score=1.0, addressed=1, required=1))


def _order(kept, *, first_step=True, mode="opening", margin=0.2, confidence=None, confident_at=0.18):
    record = StepRecord()
    choice = order_by_position(Choice(kept=list(kept), rejected=[]), first_step=first_step, mode=mode, margin=margin,
                               record=record, confidence=confidence, confident_at=confident_at)
    return [c.id for c in choice.kept], record


def test_a_back_pointing_followup_goes_behind_an_opening_within_the_margin():
    ids, record = _order([_cand("then#3", 0.9, role="followup", alone=False), _cand("open#1", 0.8)])
    assert ids == ["open#1", "then#3"]
    assert record.position["demoted"] == ["then#3"] and record.position["reasons"]["then#3"] == "opener: then"
    assert [c.id for c in record.candidates] == ids
    # the demoted answer's score is capped below the opening's by the margin, so it cannot compete in a clarification
    scores = [c.score for c in record.candidates]
    assert scores == sorted(scores, reverse=True) and scores[0] - scores[1] >= 0.2 - 1e-9
    assert record.candidates[1].features["score_before_position"] == 0.9


def test_without_a_confident_opening_a_standalone_followup_stands():
    kept = [_cand("plain#3", 0.9, role="followup"), _cand("open#1", 0.5)]
    ids, record = _order(kept)
    assert ids == ["plain#3", "open#1"] and record.position == {}


def test_a_back_pointing_answer_never_goes_first_even_without_a_confident_opening():
    """A mid-dialogue answer ("Then ...") is never an opening: with no confident opener it still goes behind the
    first candidate that stands alone, capped by the margin, whatever its source role (a CSV of logs says opening)."""
    kept = [_cand("then#3", 0.9, role="followup", alone=False), _cand("that#1", 0.8, alone=False),
            _cand("plain#3", 0.5, role="followup"), _cand("open#1", 0.2)]
    ids, record = _order(kept, confidence=lambda ranked: 0.1)
    assert ids == ["plain#3", "that#1", "then#3", "open#1"]
    assert record.position["demoted"] == ["that#1", "then#3"]
    assert [c.score for c in record.candidates][:3] == pytest.approx([0.5, 0.3, 0.3])
    # nothing stands alone: the order stays (the abstention judges such a list)
    only = [_cand("then#3", 0.9, role="followup", alone=False), _cand("that#5", 0.8, role="followup", alone=False)]
    assert _order(only)[0] == ["then#3", "that#5"]


def test_a_confident_opening_goes_first_however_far_behind_the_followup():
    """"Openings only, unless no opening is confident": the calibrator is asked about the best opening as if it
    were delivered, and when it would be answered (>= abstain_below) no follow-up goes before it."""
    kept = [_cand("then#3", 0.9, role="followup", alone=False), _cand("open#1", 0.5), _cand("open#2", 0.45)]
    asked = []

    def confidence(ranked):
        asked.append([c.id for c in ranked])
        return 0.4 if ranked[0].id == "open#1" else 0.9

    ids, record = _order(kept, confidence=confidence)
    assert ids == ["open#1", "open#2", "then#3"]
    assert asked == [["open#1", "then#3", "open#2"]]  # the opening put first, the others in the scorer's order
    assert record.position["opening_confidence"] == 0.4
    # not confident: the margin counts from the best candidate again, and a standalone follow-up stands
    kept[0] = _cand("plain#3", 0.9, role="followup")
    ids, record = _order(kept, confidence=lambda ranked: 0.1)
    assert ids == ["plain#3", "open#1", "open#2"] and record.position == {}


def test_off_keeps_the_order():
    kept = [_cand("then#3", 0.9, role="followup", alone=False), _cand("open#1", 0.85)]
    assert _order(kept, mode="off")[0] == ["then#3", "open#1"]


def test_on_a_later_step_only_a_back_pointing_answer_of_another_dialogue_goes_behind():
    """Found by trying the chat: "fuse is fine" about brake lights and a car stuck in park got "Then a stuck relay or
    ignition switch is most likely", the next turn of a dialogue about accessories that stay on: its "then" answers a
    turn this customer never saw. The answer that continues the one on screen keeps its place, as do standalone ones."""
    stray = _cand("then#3", 0.9, role="followup", alone=False)
    ids, record = _order([stray, _cand("open#1", 0.85)], first_step=False)
    assert ids == ["open#1", "then#3"] and record.position["demoted"] == ["then#3"]
    follows = RankedCandidate(document=stray.document, retrieval_score=1.0, score=0.9, agreement=stray.agreement,
                              features={"continuation": 1.0})
    assert _order([follows, _cand("open#1", 0.85)], first_step=False)[0] == ["then#3", "open#1"]
    assert _order([_cand("plain#3", 0.9, role="followup"), _cand("open#1", 0.85)], first_step=False)[0] == \
        ["plain#3", "open#1"]


def test_opening_mode_puts_standalone_followups_between_openings_and_back_pointing_ones():
    kept = [_cand("then#3", 0.95, role="followup", alone=False), _cand("plain#3", 0.9, role="followup"),
            _cand("open#1", 0.8), _cand("far#1", 0.1)]
    assert _order(kept)[0] == ["open#1", "plain#3", "then#3", "far#1"]
    # standalone mode only looks at the text: the standalone follow-up counts as an opener
    assert _order(kept, mode="standalone")[0] == ["plain#3", "open#1", "then#3", "far#1"]


def test_record_serialises_the_position_decision():
    _, record = _order([_cand("then#3", 0.9, role="followup", alone=False), _cand("open#1", 0.8)])
    assert record.to_dict()["position"]["demoted"] == ["then#3"]


@pytest.mark.parametrize("bad", [{"step1_position": "first"}, {"opening_margin": -0.1}, {"opening_margin": True}])
def test_the_settings_are_validated(bad):
    with pytest.raises(ConfigError):
        EngineConfig.from_dict(bad)


def test_an_index_of_openings_only_is_never_reordered():
    # scores out of order (a rescued candidate) and a standalone difference: still nothing moves
    kept = [_cand("a#1", 0.5), _cand("b#1", 0.9), _cand("c#1", 0.7, alone=False)]
    ids, record = _order(kept)
    assert ids == ["a#1", "b#1", "c#1"] and record.position == {}
