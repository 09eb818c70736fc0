"""Out-of-fold scoring lives in eval: fold models in their own file, chosen per question by the eval's scorer."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from dtdialog.ranking.learned_scorer import DEFAULT_MODEL, MODELS_DIR, LearnedScorer, RankerModel
from eval.out_of_fold import (
    FOLDS_DIR,
    FoldModels,
    OutOfFoldScorer,
    folds_for,
    folds_path,
    out_of_fold,
    question_key,
    split_model_file,
    with_openings,
)
from parsers.errors import ModelNotAvailableError

NAMES = ("lexical", "agreement_score", "term_overlap")  # no dense feature: the scorer needs no vectors


def _fitted(tmp_path):
    rng = np.random.RandomState(0)
    X = rng.rand(300, 3)
    y = (2 * X[:, 0] + X[:, 1] + 0.2 * rng.randn(300) > 1.6).astype(int)
    fit = lambda a, b: make_pipeline(StandardScaler(), LogisticRegression()).fit(a, b)  # noqa: E731
    model = RankerModel(estimator=fit(X, y), feature_names=NAMES, manifest={"name": "m"})
    folds = FoldModels(model_name="m", feature_names=NAMES, fold_estimators=(fit(X[:150], y[:150]), fit(X[150:], y[150:])),
                       held_out={question_key("Why does my  car\nstall?"): 1})
    return X, model, folds


def test_fold_models_score_their_held_out_questions(tmp_path):
    X, model, folds = _fitted(tmp_path)
    model_path = model.save(tmp_path / "m.joblib")
    assert folds_path(model_path) == tmp_path / "m-folds.joblib"  # a model trained elsewhere keeps them beside it
    folds.save(folds_path(model_path))
    again = folds_for(RankerModel.load(model_path), model_path)
    held = again.model_for("Why does my car stall?", model)  # whitespace does not change the key
    assert held.estimator is not model.estimator and held.feature_names == NAMES
    np.testing.assert_allclose(held.logits(X[:5]), folds.fold_estimators[1].decision_function(X[:5]))
    assert again.model_for("A question nobody trained on", model) is model


def test_an_opening_is_held_out_with_its_question(tmp_path):
    # a simulated customer opens with the title alone: the shipped model trained on that question must not score it
    _, model, folds = _fitted(tmp_path)
    assert folds.model_for("Car stalls", model) is model
    other = FoldModels(model_name="m", feature_names=NAMES, fold_estimators=folds.fold_estimators,
                       held_out={**folds.held_out, question_key("Car stalls at idle\nbody two"): 0})
    keyed = with_openings(other, {"Car stalls": "Why does my car\nstall?", "Unknown": "Never trained on"})
    assert keyed.model_for("Car  stalls", model).estimator is folds.fold_estimators[1]
    assert keyed.model_for("Unknown", model) is model
    assert other.model_for("Car stalls", model) is model  # the folds given are left as they were
    # an opening that is itself a training question keeps its own fold
    both = with_openings(other, {"Car stalls at idle\nbody two": "Why does my car\nstall?"})
    assert both.model_for("Car stalls at idle body two", model).estimator is folds.fold_estimators[0]


def test_folds_of_another_model_are_not_used(tmp_path):
    _, model, folds = _fitted(tmp_path)
    model_path = model.save(tmp_path / "m.joblib")
    FoldModels(model_name="other", feature_names=NAMES, fold_estimators=folds.fold_estimators,
               held_out=folds.held_out).save(folds_path(model_path))
    assert folds_for(model, model_path) is None
    with pytest.raises(ModelNotAvailableError):
        FoldModels.load(tmp_path / "missing.joblib")


def test_out_of_fold_wrapper_picks_the_fold_model_per_question(tmp_path):
    from types import SimpleNamespace

    from dtdialog.ranking.signals import SignalExtractor

    X, model, folds = _fitted(tmp_path)
    model_path = model.save(tmp_path / "m.joblib")
    scorer = LearnedScorer(model=model, extractor=SignalExtractor(use_sg=False))
    assert out_of_fold(model_path)(scorer) is scorer  # no folds written yet: the shipped model scores everything
    folds.save(folds_path(model_path))
    wrapped = out_of_fold(model_path)(scorer)
    assert isinstance(wrapped, OutOfFoldScorer) and wrapped.model is model
    trained = wrapped.model_for(SimpleNamespace(question="Why does my car stall?"))
    np.testing.assert_allclose(trained.logits(X[:5]), folds.fold_estimators[1].decision_function(X[:5]))
    assert wrapped.model_for(SimpleNamespace(question="Something new")) is model


def test_split_moves_fold_models_out_of_an_old_model_file(tmp_path):
    import joblib

    X, model, folds = _fitted(tmp_path)
    old = tmp_path / "old.joblib"
    joblib.dump({"estimator": model.estimator, "feature_names": list(NAMES), "manifest": model.manifest,
                 "fold_estimators": list(folds.fold_estimators), "held_out": folds.held_out}, old)
    written = split_model_file(old, tmp_path / "eval-models")
    assert written == tmp_path / "eval-models" / "old-folds.joblib"
    assert set(joblib.load(old)) == {"format", "estimator", "feature_names", "manifest"}
    moved = FoldModels.load(written)
    assert moved.held_out == folds.held_out and moved.model_name == "m"
    np.testing.assert_allclose(RankerModel.load(old).logits(X[:5]), model.logits(X[:5]))
    np.testing.assert_allclose(moved.fold_estimators[0].decision_function(X[:5]),
                               folds.fold_estimators[0].decision_function(X[:5]))
    assert split_model_file(old, tmp_path / "eval-models") is None  # nothing left to move


def test_shipped_models_have_their_fold_models_in_eval():
    if not DEFAULT_MODEL.is_file():
        pytest.skip("no shipped ranker model")
    for path in sorted(MODELS_DIR.glob("*.joblib")):
        folds = folds_for(RankerModel.load(path), path)
        assert folds is not None and folds_path(path).parent == FOLDS_DIR
        assert len(folds.fold_estimators) == 5 and len(folds.held_out) > 400


def test_a_shipped_model_loaded_without_its_path_finds_its_own_folds():
    """The engine without the tree loads ``ranker-v1-hybrid`` by itself: its questions must still be out-of-fold."""
    from dtdialog.ranking.learned_scorer import TREELESS_MODEL

    if not TREELESS_MODEL.is_file():
        pytest.skip("no shipped hybrid ranker model")
    folds = folds_for(RankerModel.load(TREELESS_MODEL), None)
    assert folds is not None and folds.model_name == "ranker-v1-hybrid"


def test_every_first_message_of_the_mechanics_dialogues_is_scored_out_of_fold(shared_data):
    """The simulated customer opens with a mechanics title; until ad71154 no title resolved to a fold, so the shipped
    ranker, which trained on every one of these questions, scored them all."""
    from eval.datasets import load_eval_set
    from eval.dialogue.run import openings_of

    if not DEFAULT_MODEL.is_file():
        pytest.skip("no shipped ranker model")
    mechanics = load_eval_set("mechanics", data_dir=shared_data)
    openings = [d.opening_and_body()[0] for d in mechanics.dialogues]
    for path in sorted(MODELS_DIR.glob("*.joblib")):
        model = RankerModel.load(path)
        folds = folds_for(model, path)
        keyed = with_openings(folds, openings_of(mechanics))
        assert all(keyed.model_for(o, model) is not model for o in openings), path.name
