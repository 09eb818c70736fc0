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
