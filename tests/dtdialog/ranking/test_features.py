"""List-normalised ranking features: names, gaps, reciprocal ranks, missing signals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dtdialog.ranking.features import (
    DT_FEATURES,
    FEATURE_SETS,
    HYBRID_FEATURES,
    CandidateSignals,
    feature_matrix,
    list_features,
)


def sig(doc_id, **kw) -> CandidateSignals:
    return CandidateSignals(doc_id=doc_id, **kw)


def test_feature_sets_nest_and_are_unique():
    assert FEATURE_SETS["hybrid"] == HYBRID_FEATURES
    assert FEATURE_SETS["hybrid+dt"] == HYBRID_FEATURES + DT_FEATURES
    assert len(set(FEATURE_SETS["hybrid+dt"])) == len(FEATURE_SETS["hybrid+dt"])
    assert not any(n.startswith("dense") for n in DT_FEATURES)


def test_query_normalisation():
    rows = list_features([
        sig("a", lexical=10.0, dense=0.5, hub=0.4),
        sig("b", lexical=5.0, dense=0.7, hub=0.2),
        sig("c", lexical=None, dense=0.6, hub=0.6),  # found by the dense retriever only
    ])
    assert set(rows[0]) >= set(FEATURE_SETS["hybrid+dt"])
    assert [r["lexical"] for r in rows] == [1.0, 0.5, 0.0]
    assert [r["lexical_rr"] for r in rows] == [1.0, 0.5, 0.0]
    assert [r["dense_rr"] for r in rows] == [pytest.approx(1 / 3), 1.0, 0.5]
    assert max(r["dense_gap"] for r in rows) == 0.0
    assert rows[0]["dense_gap"] == pytest.approx(-0.2)
    csls = [r["dense_csls"] for r in rows]
    assert csls == pytest.approx([0.3, 0.6, 0.3])
    assert rows[1]["dense_csls_rr"] == 1.0 and rows[1]["dense_csls_gap"] == 0.0
    assert sum(r["dense_z"] for r in rows) == pytest.approx(0.0, abs=1e-9)


def test_missing_dense_and_dt_signals_are_zero():
    rows = list_features([sig("a", lexical=3.0), sig("b", lexical=1.0, dense=float("nan"))])
    for row in rows:
        assert all(row[n] == 0.0 for n in HYBRID_FEATURES if n.startswith("dense"))
        assert row["sg"] == 0.0 and row["agreement_verdict"] == 0.0
        assert row["addressed_share"] == 1.0  # no relation to address
    assert list_features([]) == []


def test_dt_and_length_features():
    row = list_features([sig("a", lexical=1.0, dense=0.5, agreement_verdict=True, agreement_score=0.8, addressed=1,
                             required=2, rr_edu_matches=2, entity_overlap=9, compat_any=True, sg=0.3,
                             answer_words=99, query_words=9, query_terms=4, shared_terms=3)])[0]
    assert row["agreement_verdict"] == 1.0 and row["addressed_share"] == 0.5
    assert row["entity_overlap"] == 5.0  # capped
    assert row["compat_any"] == 1.0 and row["compat_all"] == 0.0
    assert row["term_overlap"] == 0.75 and row["sg"] == 0.3
    assert row["log_answer_words"] == pytest.approx(math.log(100))
    assert row["length_ratio"] == pytest.approx(math.log(100) - math.log(10))


def test_feature_matrix_orders_columns():
    rows = [{"a": 1.0, "b": 2.0}, {"b": 3.0}]
    np.testing.assert_array_equal(feature_matrix(rows, ["b", "a"]), [[2.0, 1.0], [3.0, 0.0]])
    assert feature_matrix([], ["a"]).shape == (0, 1)
