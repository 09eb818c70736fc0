"""RankerModel persistence and per-feature contributions; the scorer end to end on a small dense index."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from dtdialog.ranking.features import FEATURE_SETS
from dtdialog.ranking.learned_scorer import DEFAULT_MODEL, RankerModel
from parsers.errors import ConfigError, ModelNotAvailableError

NAMES = ("dense", "lexical", "agreement_score")


def training_data(seed: int = 0):
    rng = np.random.RandomState(seed)
    X = rng.rand(300, 3)
    y = (2 * X[:, 0] + X[:, 1] + 0.2 * rng.randn(300) > 1.6).astype(int)
    return X, y


def test_linear_contributions_sum_to_the_logit(tmp_path):
    X, y = training_data()
    model = RankerModel(estimator=make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y),
                        feature_names=NAMES, manifest={"k": 40})
    x = X[5]
    contributions, method = model.contributions(x)
    assert method == "linear"
    assert sum(contributions.values()) == pytest.approx(model.logits(x[None, :])[0])
    assert contributions["dense"] > 0 or x[0] < X[:, 0].mean()  # dense pushes up when above average
    path = model.save(tmp_path / "m.joblib")
    assert (tmp_path / "m.json").is_file()
    again = RankerModel.load(path)
    assert again.feature_names == NAMES and again.manifest["k"] == 40
    np.testing.assert_allclose(again.logits(X[:10]), model.logits(X[:10]))


def test_tree_model_uses_occlusion():
    X, y = training_data(1)
    model = RankerModel(estimator=HistGradientBoostingClassifier(max_iter=20).fit(X, y), feature_names=NAMES)
    contributions, method = model.contributions(X[0], means=X.mean(axis=0))
    assert method == "occlusion" and set(contributions) == set(NAMES)
    assert np.isfinite(model.logits(X[:3])).all()


def test_bad_models(tmp_path):
    X, y = training_data()
    with pytest.raises(ConfigError, match="unknown feature"):
        RankerModel(estimator=LogisticRegression().fit(X, y), feature_names=("dense", "nonsense", "x"))
    with pytest.raises(ModelNotAvailableError):
        RankerModel.load(tmp_path / "missing.joblib")
    (tmp_path / "bad.joblib").write_bytes(b"not a joblib file")
    with pytest.raises(ModelNotAvailableError):
        RankerModel.load(tmp_path / "bad.joblib")


def test_shipped_model_is_small_and_documented():
    if not DEFAULT_MODEL.is_file():
        pytest.skip("no shipped ranker model yet (python -m eval.train_ranker)")
    model = RankerModel.load()
    assert model.feature_names == FEATURE_SETS["hybrid+dt"]
    assert DEFAULT_MODEL.stat().st_size < 200_000
    assert model.manifest["cv"]["p1"] > 0 and "command" in model.manifest
    assert DEFAULT_MODEL.with_suffix(".json").is_file()


def test_fold_models_score_their_held_out_questions(tmp_path):
    from dtdialog.ranking.learned_scorer import question_key

    X, y = training_data()
    full = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    folds = (make_pipeline(StandardScaler(), LogisticRegression()).fit(X[:150], y[:150]),
             make_pipeline(StandardScaler(), LogisticRegression()).fit(X[150:], y[150:]))
    model = RankerModel(estimator=full, feature_names=NAMES, fold_estimators=folds,
                        held_out={question_key("Why does my  car\nstall?"): 1})
    again = RankerModel.load(model.save(tmp_path / "m.joblib"))
    held = again.for_question("Why does my car stall?")  # whitespace does not change the key
    assert held.estimator is not again.estimator and held.feature_names == NAMES
    np.testing.assert_allclose(held.logits(X[:5]), folds[1].decision_function(X[:5]))
    assert again.for_question("A question nobody trained on") is again
