"""The ANN (HNSW) path of the dense store: near-exact top-k, the threshold, the fallback, the generation swap."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest

from index.dense_ann import THRESHOLD_ENV, AnnIndex, AnnSettings, ann_available, ann_threshold
from index.dense_store import DenseStore, ann_path
from parsers.errors import ConfigError, ModelNotAvailableError


def clustered_rows(n: int, dim: int = 64, clusters: int = 40, seed: int = 0) -> np.ndarray:
    """Unit rows around a few centres: like sentence embeddings, not uniform on the sphere."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim))
    v = centres[rng.integers(0, clusters, n)] + 0.6 * rng.standard_normal((n, dim))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def exact_ids(store: DenseStore, query: np.ndarray, k: int) -> list[str]:
    order = np.argsort(-(np.asarray(store.vectors) @ query), kind="stable")[:k]
    return [store.ids[i] for i in order]


@pytest.fixture
def usearch_installed():
    # not importorskip: importing usearch before onnxruntime makes the process crash when the encoder loads
    # later (index.dense_ann._usearch); ann_available() only looks the package up
    if not ann_available():
        pytest.skip("the [ann] extra (usearch) is not installed")


def test_ann_top_k_is_the_exact_top_k_within_a_recall_bound(tmp_path, monkeypatch, usearch_installed):
    monkeypatch.setenv(THRESHOLD_ENV, "1000")
    vectors = clustered_rows(4000)
    store = DenseStore(ids=[f"a{i}" for i in range(4000)], vectors=vectors, hub=np.zeros(4000))
    store.save(tmp_path / "answers.sqlite")
    assert ann_path(tmp_path / "answers.sqlite").is_file()
    loaded = DenseStore.load(tmp_path / "answers.sqlite")
    assert loaded.ann is not None and len(loaded.ann) == 4000
    queries = clustered_rows(60, seed=1)
    recalls = []
    for q in queries:
        hits = loaded.search(q, k=20)
        truth = exact_ids(loaded, q, 20)
        recalls.append(len({h for h, _ in hits} & set(truth)) / 20)
        # scores are exact cosines of the rows returned, best first
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        for doc_id, score in hits[:3]:
            assert score == pytest.approx(float(vectors[int(doc_id[1:])] @ q), abs=1e-5)
    assert np.mean(recalls) >= 0.95 and min(recalls) >= 0.8
    excluded = [h for h, _ in loaded.search(queries[0], k=5)]
    hits = loaded.search(queries[0], k=5, exclude_ids=excluded)
    assert len(hits) == 5 and not set(excluded) & {h for h, _ in hits}


def test_small_stores_and_a_missing_library_search_exactly(tmp_path, monkeypatch, caplog, usearch_installed):
    import index.dense_ann as dense_ann

    monkeypatch.setenv(THRESHOLD_ENV, "1000")
    small = DenseStore(ids=[f"s{i}" for i in range(999)], vectors=clustered_rows(999), hub=np.zeros(999))
    small.save(tmp_path / "small.sqlite")
    assert not ann_path(tmp_path / "small.sqlite").exists() and DenseStore.load(tmp_path / "small.sqlite").ann is None

    big = DenseStore(ids=[f"b{i}" for i in range(1500)], vectors=clustered_rows(1500), hub=np.zeros(1500))
    big.save(tmp_path / "big.sqlite")
    monkeypatch.setattr(dense_ann, "ann_available", lambda: False)
    loaded = DenseStore.load(tmp_path / "big.sqlite")
    assert loaded.ann is None
    q = clustered_rows(1, seed=5)[0]
    assert [h for h, _ in loaded.search(q, k=10)] == exact_ids(loaded, q, 10)
    with pytest.raises(ModelNotAvailableError, match=r"dtdialog\[ann\]"):
        monkeypatch.setattr("builtins.__import__", _refuse_usearch(__import__))
        AnnIndex.build(clustered_rows(10))


def _refuse_usearch(real_import):
    def fake(name, *args, **kwargs):
        if name.startswith("usearch"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)
    return fake


def test_a_damaged_or_foreign_graph_falls_back_to_exact(tmp_path, monkeypatch, caplog, usearch_installed):
    monkeypatch.setenv(THRESHOLD_ENV, "1000")
    store = DenseStore(ids=[f"d{i}" for i in range(1200)], vectors=clustered_rows(1200), hub=np.zeros(1200))
    store.save(tmp_path / "answers.sqlite")
    other = AnnIndex.build(clustered_rows(1100, seed=3))  # a graph of other vectors, e.g. left by another build
    other.save(ann_path(tmp_path / "answers.sqlite"))
    with caplog.at_level(logging.WARNING, logger="index.dense_store"):
        assert DenseStore.load(tmp_path / "answers.sqlite").ann is None
    assert "1100 vectors" in caplog.text
    ann_path(tmp_path / "answers.sqlite").write_bytes(b"not a graph")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="index.dense_store"):
        loaded = DenseStore.load(tmp_path / "answers.sqlite")
    assert loaded.ann is None and "searching exactly" in caplog.text
    q = clustered_rows(1, seed=6)[0]
    assert [h for h, _ in loaded.search(q, k=5)] == exact_ids(loaded, q, 5)


def test_the_graph_is_named_by_generation_and_swapped_by_a_rebuild(tmp_path, monkeypatch, usearch_installed):
    from index_helpers import CountingEncoder, StandInParser, small_corpus

    from index.builder import build_index
    from index.index_files import index_generation

    monkeypatch.setenv(THRESHOLD_ENV, "2")
    out = tmp_path / "idx.sqlite"
    build_index(dialogues=small_corpus(), parser=StandInParser(), backend="sqlite", out=out, progress=False,
                dense=True, encoder=CountingEncoder())
    first = index_generation(out)
    assert ann_path(out, first).is_file() and DenseStore.load(out).ann is not None
    build_index(dialogues=small_corpus()[:3], parser=StandInParser(), backend="sqlite", out=out, progress=False,
                dense=True, encoder=CountingEncoder())
    second = index_generation(out)
    assert second != first and ann_path(out, second).is_file()
    assert not ann_path(out, first).exists()  # pruned with the old generation's vectors
    loaded = DenseStore.load(out)
    assert len(loaded.ann) == len(loaded)


def test_settings_and_threshold_are_validated(monkeypatch):
    with pytest.raises(ConfigError, match="connectivity"):
        AnnSettings(connectivity=1)
    with pytest.raises(ConfigError, match="dtype"):
        AnnSettings(dtype="b1")
    monkeypatch.setenv(THRESHOLD_ENV, "zero")
    with pytest.raises(ConfigError, match=THRESHOLD_ENV):
        ann_threshold()


def test_hubness_from_the_graph_is_close_to_the_exact_one(monkeypatch, usearch_installed):
    from index.dense_store import hubness

    monkeypatch.setenv(THRESHOLD_ENV, "1000")
    vectors = clustered_rows(3000, seed=4)
    exact = hubness(vectors)
    store = DenseStore(ids=[f"h{i}" for i in range(3000)], vectors=vectors)  # no hub given: computed with the graph
    assert store.ann is not None
    assert np.abs(store.hub - exact).max() < 0.02 and np.abs(store.hub - exact).mean() < 0.002
    assert not np.array_equal(store.hub, np.zeros(3000))


def test_a_killed_builds_temporary_graph_is_a_leftover_the_next_build_removes(tmp_path):
    import tempfile

    from index.index_files import clean_leftovers

    out = tmp_path / "answers.sqlite"
    fd, tmp = tempfile.mkstemp(dir=tmp_path, prefix=f".{ann_path(out, 'ab12').name}.", suffix=".tmp")
    os.close(fd)
    stale = ann_path(out, "cd34")
    stale.write_bytes(b"graph of a generation that never went live")
    removed = clean_leftovers(out)
    assert {p.name for p in removed} == {tmp_path.joinpath(tmp).name, stale.name}
    assert not list(tmp_path.iterdir())
