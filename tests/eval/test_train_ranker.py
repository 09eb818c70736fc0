"""The ranker's cross-validation machinery: folds, gold ranks with ties, bootstrap summary, CV on separable data."""

from __future__ import annotations

import numpy as np
import pytest

from eval.train_ranker import QueryRows, cross_validate, folds_of, gold_ranks, main, summarize
from parsers.errors import InputError


def test_folds_partition_the_questions():
    folds = folds_of(23, folds=5, seed=13)
    together = np.concatenate(folds)
    assert sorted(together.tolist()) == list(range(23))
    assert max(len(f) for f in folds) - min(len(f) for f in folds) <= 1
    assert [f.tolist() for f in folds_of(23, folds=5, seed=13)] == [f.tolist() for f in folds]
    with pytest.raises(InputError):
        folds_of(3, folds=5, seed=0)


def test_gold_ranks_count_ties_against_gold_and_misses():
    q = [QueryRows("a", ["x", "y", "z"], [{}, {}, {}], [False, True, False]),
         QueryRows("b", ["x", "y"], [{}, {}], [False, False])]
    ranks = gold_ranks(q, [np.array([0.5, 0.5, 0.1]), np.array([1.0, 2.0])])
    assert ranks[0] == 1 and ranks[1] >= 10**6
    s = summarize(np.array([0, 0, 1, 7, 10**6]))
    assert s["p1"] == 0.4 and s["r5"] == 0.6
    assert s["mrr"] == pytest.approx((1 + 1 + 0.5 + 1 / 8) / 5)
    assert s["p1_lo"] <= s["p1"] <= s["p1_hi"]


def synthetic(n: int = 60, seed: int = 0) -> list[QueryRows]:
    rng = np.random.RandomState(seed)
    out = []
    for i in range(n):
        m = 8
        gold = rng.randint(m)
        rows = [{"dense": float(rng.rand() * 0.5 + (0.6 if j == gold else 0.0)), "lexical": float(rng.rand())}
                for j in range(m)]
        out.append(QueryRows(f"q{i}", [f"a{j}" for j in range(m)], rows, [j == gold for j in range(m)]))
    return out


def test_cross_validation_learns_a_separating_feature():
    queries = synthetic()
    models: list = []
    ranks = cross_validate(queries, ("dense", "lexical"), kind="lr", folds=5, seed=1, models_out=models)
    assert np.mean(ranks == 0) == 1.0
    assert len(models) == 5 and all(hasattr(m, "decision_function") for m in models)
    noise = cross_validate(queries, ("lexical",), kind="lr", folds=5, seed=1)
    assert np.mean(noise == 0) < 0.5


def test_cli_rejects_bad_options(capsys):
    with pytest.raises(SystemExit):
        main(["-k", "0"])
    with pytest.raises(SystemExit):
        main(["--feature-set", "bogus"])


def test_extra_rows_join_training_with_their_weight():
    from eval.train_ranker import fit

    queries = synthetic(40, seed=2)
    # an extra "dataset" whose gold answers are the ones with LOW dense: it fights the main signal
    flipped = [QueryRows(q.question_id + "x", q.ids, [{**r, "dense": 1.1 - r["dense"]} for r in q.rows], q.gold)
               for q in synthetic(40, seed=3)]
    names = ("dense", "lexical")
    alone = fit(queries, names, kind="lr")
    ignored = fit(queries, names, kind="lr", extra=flipped, extra_weight=0.0)
    X = np.array([[0.9, 0.5], [0.2, 0.5]])
    np.testing.assert_allclose(ignored.decision_function(X), alone.decision_function(X), atol=1e-6)
    heavy = fit(queries, names, kind="lr", extra=flipped, extra_weight=10.0)
    assert heavy.named_steps["logisticregression"].coef_[0][0] < alone.named_steps["logisticregression"].coef_[0][0]


def test_extra_rows_never_enter_a_test_fold():
    queries = synthetic(30, seed=4)
    ranks = cross_validate(queries, ("dense", "lexical"), kind="lr", folds=3, seed=1, extra=synthetic(10, seed=5))
    assert len(ranks) == len(queries)  # one rank per main question; the extra steps are training only


def test_subsets_are_questions_with_a_relation_and_long_questions():
    from eval.train_ranker import LONG_WORDS, subset_report, subsets_of

    queries = [QueryRows("a", ["x"], [{"has_relation": 1.0}], [True]), QueryRows("b", ["x"], [{"has_relation": 0.0}], [True]),
               QueryRows("c", [], [], [])]
    masks = subsets_of(queries, ["short", "word " * LONG_WORDS, "word " * (LONG_WORDS - 1)])
    assert masks["has_relation"].tolist() == [True, False, False]
    assert masks[f"words>={LONG_WORDS}"].tolist() == [False, True, False]
    report = subset_report(masks, {"hybrid": np.array([1, 0, 0]), "hybrid+dt": np.array([0, 0, 3])})
    assert report["has_relation"]["n"] == 1 and report["has_relation"]["results"]["hybrid+dt"]["p1"] == 1.0
    assert report["has_relation"]["dt_minus_hybrid"]["diff"] == 1.0
    assert report[f"words>={LONG_WORDS}"]["dt_minus_hybrid"]["diff"] == 0.0


def test_a_model_that_does_not_hold_its_figure_keeps_the_shipped_one(tmp_path):
    import json

    from eval.train_ranker import worse_than_shipped

    path = tmp_path / "ranker-v1.joblib"
    assert worse_than_shipped({"n": 497, "p1": 0.5}, path) is None  # nothing shipped: write
    path.with_suffix(".json").write_text(json.dumps({"cv": {"n": 497, "p1": 0.7787}}), encoding="utf-8")
    assert worse_than_shipped({"n": 497, "p1": 0.7726}, path) == 0.7787
    assert worse_than_shipped({"n": 497, "p1": 0.7787}, path) is None  # holds
    assert worse_than_shipped({"n": 50, "p1": 0.5}, path) is None  # other questions: no comparison


@pytest.mark.parametrize("name", ["ranker-v1", "ranker-v1-hybrid"])
def test_shipped_models_read_the_features_of_their_set_by_name(name):
    """A shipped model's features are its set's, in the set's order, computed by ``list_features``; its JSON manifest
    and its evaluation fold models name the same ones. A model fitted before later features joined its set reads
    only its own (``feature_matrix`` picks columns by name), so its set may hold more: never other ones."""
    import json

    from dtdialog.ranking.features import FEATURE_SETS, CandidateSignals, list_features
    from dtdialog.ranking.learned_scorer import DEFAULT_MODEL, RankerModel
    from eval.out_of_fold import FoldModels, folds_path

    path = DEFAULT_MODEL.with_name(f"{name}.joblib")
    if not path.is_file():
        pytest.skip(f"no shipped {name} model")
    model = RankerModel.load(path)
    names = FEATURE_SETS[model.manifest["feature_set"]]
    assert [n for n in names if n in model.feature_names] == list(model.feature_names)
    if model.manifest["feature_set"] == "hybrid":
        assert model.feature_names == names  # the no-tree ablation's set is complete
    assert json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))["feature_names"] == list(model.feature_names)
    assert set(model.feature_names) <= set(list_features([CandidateSignals(doc_id="a")])[0])
    folds = folds_path(path)
    if folds.is_file():
        assert FoldModels.load(folds).fits(model)
