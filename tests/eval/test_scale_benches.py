"""The scale benches' pieces: recombined vectors and answers, exact top-k, recall, and one-line errors."""

from __future__ import annotations

import numpy as np
import pytest

from eval import ann_bench, scale_bench
from eval.datasets import default_data_dir


def unit_rows(n: int, dim: int = 24, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_recombined_keeps_the_real_rows_and_adds_unit_means_of_them():
    real = unit_rows(50)
    out = ann_bench.recombined(real, 400, seed=1)
    assert out.shape == (400, 24) and out.dtype == np.float32
    np.testing.assert_array_equal(out[:50], real)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(ann_bench.recombined(real, 20), real[:20])
    # with the basis as the real rows, a synthetic row shows which real rows it mixes: 2 or 3 (fewer on a repeat)
    basis = np.eye(20, dtype=np.float32)
    mixed = ann_bench.recombined(basis, 2000, seed=4)[20:]
    parts = (mixed > 1e-6).sum(axis=1)
    assert set(parts) <= {1, 2, 3} and (parts == 2).mean() > 0.3 and (parts == 3).mean() > 0.3
    assert (mixed >= 0).all()


def test_exact_top_matches_brute_force_across_blocks(monkeypatch):
    vectors, queries = unit_rows(3000, seed=2), unit_rows(7, seed=3)
    found = ann_bench.exact_top(vectors, queries, k=100)
    brute = np.argsort(-(queries @ vectors.T), axis=1)[:, :100]
    assert [set(f) for f in found] == [set(b) for b in brute]
    assert ann_bench.recall(list(found), brute) == 1.0
    assert ann_bench.recall([f[:50] for f in found], brute) == pytest.approx(0.5)


@pytest.mark.parametrize("argv", [["--vectors", "0"], ["--configs", "i4:16"], ["--configs", "i8:1"],
                                  ["--queries", "10", "--real", "5"]])
def test_ann_bench_bad_options_are_one_line_errors(argv, capsys, tmp_path):
    assert ann_bench.main([*argv, "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


def test_scale_bench_bad_options_and_missing_data_are_one_line_errors(capsys, tmp_path):
    assert scale_bench.main(["--answers", "0"]) == 2
    assert scale_bench.main(["--answers", "5", "--data-dir", str(tmp_path)]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 2 and all(e.startswith("error: ") for e in errors) and "no shared data" in errors[1]


@pytest.mark.shared_data
def test_real_texts_keep_the_questions_out_of_the_pool_and_recombine_distinct_answers():
    data = default_data_dir()
    if not (data / "mechanics_qa" / "mechanics_qa_dev.jsonl").is_file():
        pytest.skip(f"no shared data under {data}")
    pool, questions, counts = ann_bench.real_texts(data)
    assert len(questions) >= 500 and sum(counts.values()) == len(pool) == len(set(pool))
    assert not {" ".join(q.split()) for q in questions} & set(pool)
    answers, info = scale_bench.scale_corpus(info_size := 12_000, data)
    assert len(answers) == info_size and len({a.id for a in answers}) == info_size
    assert len({a.text.lower() for a in answers}) == info_size
    assert info["recombined_answers"] == info_size - info["real_answers"] > 0
    assert all(a.id.startswith("recombined/") for a in answers[info["real_answers"]:])
