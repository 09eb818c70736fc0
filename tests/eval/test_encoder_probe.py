"""The encoder probe's ranking and list-feature helpers (no model needed)."""

from __future__ import annotations

import numpy as np
import pytest

from eval.encoder_probe import cosine_features, feature_names, full_pool_ranks, main


def _unit(rows: list[list[float]]) -> np.ndarray:
    m = np.asarray(rows, dtype=float)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_full_pool_ranks_counts_better_answers_and_ties_against_gold():
    answers = _unit([[1, 0], [0, 1], [1, 0]])  # answers 0 and 2 are identical
    queries = _unit([[1, 0.1], [0, 1]])
    ranks = full_pool_ranks(queries, answers, np.array([0, 1]))
    assert ranks.tolist() == [1, 0]  # the tie with answer 2 counts against gold answer 0


def test_full_pool_ranks_csls_demotes_a_hub():
    answers = _unit([[1, 0.05], [1, 0.3]])
    queries = _unit([[1, 0.2]])
    assert full_pool_ranks(queries, answers, np.array([0]))[0] == 1
    hub = np.array([0.0, 0.5])  # answer 1 is close to everything
    assert full_pool_ranks(queries, answers, np.array([0]), hub=hub)[0] == 0


def test_cosine_features_are_list_normalised():
    f = cosine_features("alt", [0.2, 0.6, 0.4])
    assert f["alt_gap"].tolist() == pytest.approx([-0.4, 0.0, -0.2])
    assert f["alt_rr"].tolist() == pytest.approx([1 / 3, 1.0, 1 / 2])
    assert f["alt_z"].mean() == pytest.approx(0.0)
    assert set(f) <= set(feature_names())


def test_cosine_features_of_an_empty_list():
    assert all(v.size == 0 for v in cosine_features("alt", []).values())


def test_missing_model_directory_is_a_one_line_error(tmp_path, capsys):
    assert main(["--model", str(tmp_path / "nope"), "--cache", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: ")
