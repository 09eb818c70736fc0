"""The calibrator the engine applies: loading, versioning, which ranker it fits, and its inputs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from dtdialog.selection.confidence import (
    LEARNED_CALIBRATOR,
    RULES_CALIBRATOR,
    Calibrator,
    confidence_words,
    load_calibrator,
    step_features,
)
from parsers.errors import ModelNotAvailableError


@dataclass
class _Cand:
    score: float
    features: dict = field(default_factory=dict)


def _cal(**kw):
    base = dict(ranker="rules", feature_names=("score", "margin"), coef=(2.0, 1.0), intercept=0.0, means=(0.5, 0.1),
                scales=(0.2, 0.1))
    base.update(kw)
    return Calibrator(**base)


def test_step_features_of_each_ranker():
    learned = [_Cand(0.9, {"model_logit": 2.0, "dense": 0.7}), _Cand(0.5, {"model_logit": 0.5})]
    values = step_features(learned, "learned")
    assert values["logit"] == 2.0 and values["margin"] == 1.5 and values["dense"] == 0.7
    rules = step_features([_Cand(0.8, {"topic": 0.5}), _Cand(0.6)], "rules")
    assert rules["score"] == 0.8 and rules["margin"] == pytest.approx(0.25) and rules["topic"] == 0.5
    assert step_features([], "rules") is None
    assert step_features([_Cand(0.8)], "rules")["margin"] == 1.0  # nothing competes with a lone candidate


def test_confidence_is_a_probability_that_grows_with_the_margin():
    cal = _cal()
    close = cal.confidence([_Cand(0.6), _Cand(0.59)])
    apart = cal.confidence([_Cand(0.6), _Cand(0.2)])
    assert 0 <= close < apart <= 1
    assert cal.confidence([]) is None
    assert 0 <= cal.probability({"score": float("nan")}) <= 1  # a missing or bad number counts as its mean


def test_save_load_and_versioning(tmp_path):
    path = _cal(model_name="").save(tmp_path / "cal.json")
    assert Calibrator.load(path).coef == (2.0, 1.0)
    data = json.loads(path.read_text())
    data["format"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(ModelNotAvailableError, match="format"):
        Calibrator.load(path)
    with pytest.raises(ModelNotAvailableError, match="no calibrator"):
        Calibrator.load(tmp_path / "missing.json")
    with pytest.raises(ModelNotAvailableError):
        _cal(coef=(1.0,))


def test_shipped_calibrators_match_the_shipped_ranker():
    assert LEARNED_CALIBRATOR.is_file() and RULES_CALIBRATOR.is_file(), "python -m eval.calibrate writes them"
    learned = load_calibrator("learned", model_name="ranker-v1")
    assert learned is not None and learned.ranker == "learned" and learned.manifest.get("held_out_ece") is not None
    assert load_calibrator("learned", model_name="some-other-model") is None  # fitted for another model: no confidence
    assert load_calibrator("rules").ranker == "rules"


def test_confidence_words():
    assert confidence_words(0.83) == "I'm fairly sure (83%)"
    assert confidence_words(0.2).startswith("I'm not sure")
    assert confidence_words(None) == ""


def test_values_outside_the_fitted_range_are_clipped():
    cal = _cal(lows=(0.0, 0.0), highs=(1.0, 0.5))
    assert cal.probability({"score": 1.0, "margin": 0.5}) == cal.probability({"score": 9.0, "margin": 5.0})
    with pytest.raises(ModelNotAvailableError, match="ranges"):
        _cal(lows=(0.0,), highs=(1.0,))


def test_step_features_tell_a_first_answer_from_a_later_one():
    first = step_features([_Cand(0.9, {"model_logit": 2.0, "topic_ratio": 0.8})], "learned")
    later = step_features([_Cand(0.9, {"model_logit": 2.0, "continuation": 1.0})], "learned")
    assert (first["topic_ratio"], first["continuation"]) == (0.8, 0.0)
    assert (later["topic_ratio"], later["continuation"]) == (0.0, 1.0)


def test_the_default_threshold_is_the_one_the_shipped_calibrator_was_fitted_for():
    from dtdialog.setup.engine_config import EngineConfig

    learned = load_calibrator("learned", model_name="ranker-v1")
    assert "continuation" in learned.feature_names  # fitted on later answers too
    assert EngineConfig().abstention.abstain_below == pytest.approx(learned.manifest["abstain_below"], abs=0.005)
