"""The readable trace: the learned ranker's per-feature contributions for the chosen answer."""

from __future__ import annotations

from dtdialog.trace import contribution_summary


def test_contribution_summary_orders_by_magnitude_and_skips_bookkeeping():
    features = {"dense": 0.61, "contribution.dense": 0.4, "contribution.bm25": -1.3, "contribution.sg": 0.05,
                "contribution.intercept": -2.0, "contribution.linear": 1.0, "model_logit": -2.85}
    text = contribution_summary(features, top=2)
    assert text == "learned ranker logit -2.85: bm25 -1.30, dense +0.40"
    assert contribution_summary({"dense": 0.5, "retrieval": 3.0}) == ""  # the rule scorer has no contributions
