"""The logged-opening evidence: the nearest logged opening, the model's probability, the stage and the confidence."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pytest

from dtdialog.ranking.logged_questions import (
    LoggedQuestionModel,
    LoggedQuestions,
    QuestionMatch,
    encoder_family,
    nearest,
    term_coverage,
)
from dtdialog.selection.confidence import Calibrator
from dtdialog.selection.stages.logged_question_stage import mark_logged_opening
from dtdialog.selection.stages.record import StepRecord
from dtdialog.selection.stages.scoring_stage import Scored
from parsers.errors import ModelNotAvailableError

VOCAB = ("battery", "coil", "plug", "solenoid", "start", "brake", "squeal", "pad", "tire", "leak")


def _vector(text: str) -> np.ndarray:
    """A unit bag-of-words vector over ``VOCAB``: cosines that a reader can work out by hand."""
    v = np.array([float(w in text.lower()) for w in VOCAB], dtype=np.float32)
    return v / (np.linalg.norm(v) or 1.0)


class _Encoder:
    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts):
        self.calls += 1
        return np.stack([_vector(t) for t in texts])


@dataclass
class _Dense:
    encoder: _Encoder = field(default_factory=_Encoder)

    def query_vector(self, text: str) -> np.ndarray:
        return _vector(text)


@dataclass
class _Doc:
    id: str
    dialogue_id: str
    position: int
    meta: dict


class _Index:
    def __init__(self, docs):
        self.docs = docs

    def documents(self):
        return iter(self.docs)


MODEL = LoggedQuestionModel(coef=(4.0, 4.0, 4.0), intercept=-5.6, encoder="all-MiniLM-L6-v2")
DOCS = [_Doc("nostart#3", "nostart", 3, {"question": "battery coil plug solenoid, still no start"}),
        _Doc("nostart#1", "nostart", 1, {"question": "battery coil plug solenoid, still no start"}),
        _Doc("brakes#1", "brakes", 1, {"question": "brake squeal after new pad"}),
        _Doc("tires#1", "tires", 1, {"question": "tire leak"}),
        _Doc("manual#1", "manual", 1, {})]


def test_the_nearest_opening_and_its_lead_over_the_next_dialogue():
    logged = LoggedQuestions(index=_Index(DOCS), dense=_Dense(), model=MODEL)
    assert not logged.ready
    match = logged.match("I changed the battery, coil and plug and the solenoid; it won't start")
    assert logged.ready
    # the dialogue's first stored answer, whatever order the index lists its answers in
    assert (match.dialogue_id, match.answer_id) == ("nostart", "nostart#1")
    assert match.cosine == pytest.approx(1.0) and match.gap == pytest.approx(1.0)
    brakes = logged.match("brake squeal, or is it the tire")
    assert brakes.answer_id == "brakes#1" and 0 < brakes.gap < brakes.cosine
    # encoded once, in the warm-up or the first match
    assert logged.dense.encoder.calls == 1


def test_no_evidence_without_two_logged_openings_or_over_the_limit():
    assert LoggedQuestions(index=_Index(DOCS[:2] + DOCS[4:]), dense=_Dense(), model=MODEL).match("battery") is None
    over = LoggedQuestions(index=_Index(DOCS), dense=_Dense(), model=MODEL, limit=2)
    assert over.match("battery coil") is None and over.dense.encoder.calls == 0


def test_nearest_and_coverage_by_hand():
    rows = np.stack([_vector("battery"), _vector("battery coil"), _vector("tire")])
    row, cosine, gap = nearest(_vector("battery"), rows)
    assert row == 0 and cosine == pytest.approx(1.0) and gap == pytest.approx(1 - 1 / np.sqrt(2), abs=1e-6)
    assert term_coverage(frozenset({"batteri", "coil", "spark plug", "plug"}), frozenset({"batteri", "plug"})) == 2 / 3
    assert term_coverage(frozenset({"spark plug"}), frozenset({"plug"})) == 0.0


def test_the_model_is_monotone_clipped_and_round_trips(tmp_path):
    low, high = MODEL.probability(0.5, 0.05, 0.3), MODEL.probability(0.75, 0.2, 0.8)
    assert 0 < low < 0.5 < high < 1
    assert MODEL.probability(0.7, 0.1, 0.5) < MODEL.probability(0.7, 0.2, 0.5) < MODEL.probability(0.7, 0.2, 0.9)
    clipped = LoggedQuestionModel(coef=MODEL.coef, intercept=MODEL.intercept, encoder=MODEL.encoder,
                                  lows=(0.0, 0.0, 0.0), highs=(0.8, 0.3, 1.0))
    assert clipped.probability(5.0, 0.2, 0.5) == clipped.probability(0.8, 0.2, 0.5)
    path = MODEL.save(tmp_path / "m.json")
    assert LoggedQuestionModel.load(path) == MODEL
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "features": ["cosine", "gap"]}))
    with pytest.raises(ModelNotAvailableError, match="features"):
        LoggedQuestionModel.load(path)
    with pytest.raises(ModelNotAvailableError, match="no logged-question model"):
        LoggedQuestionModel.load(tmp_path / "missing.json")


def test_the_shipped_model_names_its_encoder_and_fitting():
    model = LoggedQuestionModel.load()
    assert model.encoder == encoder_family("all-MiniLM-L6-v2-onnx-int8-ebf0a140e53d/openvino-bf16")
    assert "titles against bodies" in model.manifest["fitted_on"] and model.manifest["held_out_auc"] > 0.8


@dataclass
class _Cand:
    document: _Doc
    score: float
    features: dict = field(default_factory=dict)


class _Tools:
    class normalizer:  # noqa: N801 - the stage reads ``tools.normalizer.terms_of_text``
        @staticmethod
        def terms_of_text(text: str) -> frozenset[str]:
            return frozenset(w for w in VOCAB if w in text.lower())


def _stage(question: str, *, first_step: bool = True, at: float = 0.5, kept=None):
    logged = LoggedQuestions(index=_Index(DOCS), dense=_Dense(), model=MODEL)
    kept = kept if kept is not None else [_Cand(DOCS[2], 0.9), _Cand(DOCS[1], 0.8)]
    record = StepRecord()
    mark_logged_opening(Scored(kept=kept), question, (), first_step=first_step, logged=logged, at=at, tools=_Tools(),
                        record=record)
    return kept, record


def test_the_stage_marks_the_matched_first_answer_only_from_the_bar():
    kept, record = _stage("battery coil plug solenoid and it won't start")
    assert kept[1].features["logged_question"] == record.logged_question["probability"] > 0.5
    assert "logged_question" not in kept[0].features and [c.score for c in kept] == [0.9, 0.8]
    assert record.logged_question["counts"] and record.logged_question["coverage"] == 1.0
    # the same match under a bar it does not reach: recorded, not counted
    kept, record = _stage("battery coil plug solenoid and it won't start", at=0.999)
    assert not kept[1].features and record.logged_question["counts"] is False
    # later steps, or the matched answer not among the candidates: nothing
    kept, record = _stage("battery coil plug solenoid start", first_step=False)
    assert not kept[1].features and record.logged_question == {}
    kept, record = _stage("battery coil plug solenoid start", kept=[_Cand(DOCS[2], 0.9)])
    assert record.logged_question["candidate"] is False and not kept[0].features


def test_the_confidence_takes_the_logged_opening_when_higher():
    calibrator = Calibrator(ranker="rules", feature_names=("score",), coef=(1.0,), intercept=-3.0, means=(0.0,),
                            scales=(1.0,))
    plain = [_Cand(DOCS[1], 0.5)]
    base = calibrator.confidence(plain)
    assert base < 0.1
    assert calibrator.confidence([_Cand(DOCS[1], 0.5, {"logged_question": 0.8})]) == 0.8
    assert calibrator.confidence([_Cand(DOCS[1], 0.5, {"logged_question": 0.01})]) == base


def test_a_match_is_a_plain_value():
    match = QuestionMatch(dialogue_id="d", answer_id="d#1", opening="o", cosine=0.7, gap=0.1)
    assert match == QuestionMatch("d", "d#1", "o", 0.7, 0.1)
