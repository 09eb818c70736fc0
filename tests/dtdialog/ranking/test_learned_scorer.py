"""RankerModel persistence and per-feature contributions; the scorer end to end on a small dense index."""

from __future__ import annotations

import json

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


def _decision(estimator, X) -> np.ndarray:
    return np.asarray(estimator.decision_function(X), dtype=float).reshape(-1)


def test_the_shipped_model_scores_as_scikit_learn_does_and_leaves_no_garbage():
    import gc

    model = RankerModel.load()
    X = np.random.default_rng(1).normal(size=(400, len(model.feature_names))) * 2.0
    assert model._linear() is not None  # its Pipeline is computed as the linear function it is
    np.testing.assert_allclose(model.logits(X), _decision(model.estimator, X), rtol=1e-12, atol=1e-12)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(5):
            model.logits(X[:40])
        assert gc.collect() == 0  # scikit-learn's Pipeline leaves a new class per call for the collector
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.parametrize("estimator", [make_pipeline(StandardScaler(with_mean=False), LogisticRegression()),
                                       make_pipeline(StandardScaler(), HistGradientBoostingClassifier(max_iter=5))])
def test_a_model_its_linear_parts_do_not_reproduce_is_scored_by_scikit_learn(estimator):
    X, y = training_data()
    model = RankerModel(estimator=estimator.fit(X, y), feature_names=NAMES)
    assert model._linear() is None  # the scaler does not centre: its mean_ must not be subtracted
    assert model.contributions(X[0])[1] == "occlusion"  # nor explained with it
    expected = _decision(model.estimator, X) if hasattr(model.estimator, "decision_function") else None
    if expected is not None:
        np.testing.assert_allclose(model.logits(X), expected, rtol=1e-12, atol=1e-12)


def test_a_replaced_estimator_is_checked_again():
    X, y = training_data()
    model = RankerModel(estimator=make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y), feature_names=NAMES)
    first = model.logits(X)
    model.estimator = make_pipeline(StandardScaler(), LogisticRegression(C=0.01)).fit(X, y)
    np.testing.assert_allclose(model.logits(X), _decision(model.estimator, X), rtol=1e-12, atol=1e-12)
    assert not np.allclose(model.logits(X), first)


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
    assert model.manifest["feature_set"] == "hybrid+dt" and set(model.feature_names) <= set(FEATURE_SETS["hybrid+dt"])
    assert DEFAULT_MODEL.stat().st_size < 200_000
    assert model.manifest["cv"]["p1"] > 0 and "command" in model.manifest
    assert DEFAULT_MODEL.with_suffix(".json").is_file()


def test_saved_model_holds_only_what_serving_needs(tmp_path):
    import joblib

    from dtdialog.ranking.learned_scorer import MODEL_FORMAT

    X, y = training_data()
    model = RankerModel(estimator=LogisticRegression().fit(X, y), feature_names=NAMES, manifest={"k": 40})
    data = joblib.load(model.save(tmp_path / "m.joblib"))
    assert set(data) == {"format", "estimator", "feature_names", "manifest"} and data["format"] == MODEL_FORMAT
    for shipped in DEFAULT_MODEL.parent.glob("*.joblib"):  # the evaluation's fold models live in eval/models
        assert set(joblib.load(shipped)) == {"format", "estimator", "feature_names", "manifest"}
    data["format"] = MODEL_FORMAT + 1
    joblib.dump(data, tmp_path / "newer.joblib")
    with pytest.raises(ModelNotAvailableError, match="newer"):
        RankerModel.load(tmp_path / "newer.joblib")


def test_a_deferred_model_reads_its_manifest_now_and_its_estimator_on_first_use(tmp_path):
    from dtdialog.ranking.learned_scorer import DeferredEstimator

    X, y = training_data()
    model = RankerModel(estimator=make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y),
                        feature_names=NAMES, manifest={"k": 40, "name": "m"})
    path = model.save(tmp_path / "m.joblib")
    deferred = RankerModel.load_deferred(path)
    assert isinstance(deferred.estimator, DeferredEstimator) and deferred.estimator._estimator is None
    assert deferred.feature_names == NAMES and deferred.manifest == {"k": 40, "name": "m"}
    np.testing.assert_allclose(deferred.logits(X[:10]), model.logits(X[:10]))
    assert deferred.contributions(X[3])[1] == "linear"  # the pipeline's parts are reached through it
    (tmp_path / "lone.joblib").write_bytes(path.read_bytes())  # no manifest beside it: loaded at once, as before
    assert not isinstance(RankerModel.load_deferred(tmp_path / "lone.joblib").estimator, DeferredEstimator)


def test_a_deferred_model_whose_file_disagrees_with_its_manifest_is_refused_on_use(tmp_path):
    X, y = training_data()
    path = RankerModel(estimator=LogisticRegression().fit(X, y), feature_names=NAMES).save(tmp_path / "m.joblib")
    manifest = json.loads(path.with_suffix(".json").read_text())
    manifest["feature_names"] = list(reversed(NAMES))
    path.with_suffix(".json").write_text(json.dumps(manifest))
    deferred = RankerModel.load_deferred(path)
    with pytest.raises(ModelNotAvailableError, match="does not match its manifest"):
        deferred.logits(X[:2])
    path.write_bytes(b"not a joblib file")
    with pytest.raises(ModelNotAvailableError, match="cannot read ranker model"):
        RankerModel.load_deferred(path).logits(X[:2])

