"""The dense store: atomic save, memory-mapped load, search order, hubness, bad files, the builder hook."""

from __future__ import annotations

import json

import numpy as np
import pytest
from index_helpers import CountingEncoder

from index.dense_store import DenseStore, build_dense_store, dense_paths, hubness
from parsers.errors import InputError, ModelNotAvailableError


def unit_rows(n: int, dim: int = 16, seed: int = 0) -> np.ndarray:
    v = np.random.RandomState(seed).randn(n, dim).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_save_load_round_trip_is_memory_mapped(tmp_path):
    vectors = unit_rows(30)
    store = DenseStore(ids=[f"d{i}#1" for i in range(30)], vectors=vectors)
    matrix, ids = store.save(tmp_path / "answers.sqlite")
    assert (matrix, ids) == dense_paths(tmp_path / "answers.sqlite")
    loaded = DenseStore.load(tmp_path / "answers.sqlite")
    assert isinstance(loaded.vectors, np.memmap)
    assert loaded.ids == store.ids
    np.testing.assert_allclose(np.asarray(loaded.vectors), vectors)
    np.testing.assert_allclose(loaded.hub, store.hub, atol=1e-5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answers.sqlite.dense.ids.json", "answers.sqlite.dense.npy"]


def test_search_orders_by_cosine_and_excludes(tmp_path):
    vectors = unit_rows(50, seed=1)
    ids = [f"a{i}" for i in range(50)]
    store = DenseStore(ids=ids, vectors=vectors)
    query = vectors[7]
    hits = store.search(query, k=5)
    brute = np.argsort(-(vectors @ query))[:5]
    assert [h[0] for h in hits] == [ids[i] for i in brute]
    assert hits[0] == ("a7", pytest.approx(1.0, abs=1e-5))
    assert "a7" not in [h[0] for h in store.search(query, k=5, exclude_ids=["a7", "unknown"])]
    assert len(store.search(query, k=500)) == 50
    assert store.search(query, k=0) == []


def test_cosines_and_hub_of_unknown_ids():
    vectors = unit_rows(10, seed=2)
    store = DenseStore(ids=[str(i) for i in range(10)], vectors=vectors)
    cos = store.cosines(vectors[0], ["0", "missing", "3"])
    assert cos[0] == pytest.approx(1.0, abs=1e-5) and np.isnan(cos[1])
    assert cos[2] == pytest.approx(float(vectors[3] @ vectors[0]), abs=1e-5)
    assert store.hub_of(["missing"])[0] == 0.0


def test_hubness_matches_brute_force_across_blocks(monkeypatch):
    import index.dense_store as ds

    monkeypatch.setattr(ds, "_BLOCK", 7)  # force several blocks
    vectors = unit_rows(40, seed=3)
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    expected = np.sort(sims, axis=1)[:, -10:].mean(axis=1)
    np.testing.assert_allclose(hubness(vectors, k=10), expected, atol=1e-5)
    assert hubness(vectors[:1]).tolist() == [0.0]


def test_missing_and_corrupt_stores(tmp_path):
    with pytest.raises(ModelNotAvailableError, match="--dense"):
        DenseStore.load(tmp_path / "none.sqlite")
    DenseStore(ids=["a", "b"], vectors=unit_rows(2)).save(tmp_path / "x.sqlite")
    matrix, ids = dense_paths(tmp_path / "x.sqlite")
    ids.write_text(json.dumps({"ids": ["a"]}))
    with pytest.raises(InputError, match="disagree"):
        DenseStore.load(tmp_path / "x.sqlite")
    matrix.write_bytes(b"\x00garbage")
    with pytest.raises(InputError, match="corrupt"):
        DenseStore.load(tmp_path / "x.sqlite")


def test_bad_construction():
    with pytest.raises(InputError):
        DenseStore(ids=["a"], vectors=unit_rows(2))
    with pytest.raises(InputError, match="duplicate"):
        DenseStore(ids=["a", "a"], vectors=unit_rows(2))
    with pytest.raises(InputError):
        build_dense_store(ids=["a"], texts=[], encoder=None)


@pytest.mark.dense
def test_build_with_minilm_and_the_index_builder_hook(tmp_path):
    from index.dense import dense_available

    if not dense_available():
        pytest.skip("the [dense] extra is not installed")
    from index_helpers import StandInParser, small_corpus

    from index.builder import build_index

    out = tmp_path / "idx.sqlite"
    report = build_index(dialogues=small_corpus(), parser=StandInParser(), backend="sqlite", out=out,
                         progress=False, dense=True)
    store = DenseStore.load(out)
    assert len(store) == report.indexed and store.dimension == 384
    np.testing.assert_allclose(np.linalg.norm(np.asarray(store.vectors), axis=1), 1.0, atol=1e-4)
    from index.sqlite_index import SqliteIndex

    with SqliteIndex(out) as index:
        assert store.ids == index.ids()
        battery = [d for d in (index.get(i) for i in index.ids()) if "battery" in d.text.lower()]
    if battery:
        from index.dense import DenseEncoder

        query = DenseEncoder().encode([battery[0].text])[0]
        assert store.search(query, k=1)[0][0] == battery[0].id


def test_refresh_reencodes_only_new_and_edited_answers(tmp_path):
    from index.dense_store import refresh_dense_store

    enc = CountingEncoder()
    store = build_dense_store(ids=["a", "b", "c"], texts=["alpha text", "beta text", "gamma text"], encoder=enc,
                              progress=False)
    store.save(tmp_path / "i.sqlite")
    loaded = DenseStore.load(tmp_path / "i.sqlite")
    assert loaded.digests == store.digests and len(loaded.digests) == 3
    enc.seen.clear()
    refreshed, encoded = refresh_dense_store(loaded, ids=["a", "c", "d"], texts=["alpha text", "gamma EDITED", "delta"],
                                             encoder=enc, progress=False)
    assert encoded == 2 and enc.seen == ["gamma EDITED", "delta"]  # "a" kept its vector, "b" dropped
    assert refreshed.ids == ["a", "c", "d"]
    np.testing.assert_array_equal(refreshed.vectors[0], np.asarray(store.vectors)[0])
    np.testing.assert_allclose(refreshed.vectors[1], enc.encode(["gamma EDITED"])[0], atol=1e-6)
    assert refreshed.terms.n == 3 and "delta" in refreshed.terms.df and "beta" not in refreshed.terms.df
    # a store saved without digests cannot tell edited answers apart: everything is encoded again
    legacy = DenseStore(ids=store.ids, vectors=np.asarray(store.vectors), terms=store.terms)
    _, encoded = refresh_dense_store(legacy, ids=["a"], texts=["alpha text"], encoder=enc, progress=False)
    assert encoded == 1


def test_sqlite_generation_changes_on_every_add(tmp_path):
    from index_helpers import StandInParser, small_corpus

    from index.builder import build_index
    from index.sqlite_index import SqliteIndex

    out = tmp_path / "g.sqlite"
    build_index(dialogues=small_corpus(), parser=StandInParser(), backend="sqlite", out=out, progress=False)
    with SqliteIndex(out, readonly=False) as index:
        first = index.generation()
        doc = index.get(index.ids()[0])
        index.add([doc])  # the same answer again, same id: still a write the derived stores must notice
        second = index.generation()
    assert first and second and first != second
    rebuilt = tmp_path / "g2.sqlite"
    build_index(dialogues=small_corpus(), parser=StandInParser(), backend="sqlite", out=rebuilt, progress=False)
    with SqliteIndex(rebuilt) as index:
        assert index.generation() not in ("", first, second)  # a rebuilt file never repeats a generation



def _blas_threads(threadpoolctl) -> int:
    """Return the threads of numpy's own BLAS (other libraries loaded later may bring theirs)."""
    infos = threadpoolctl.ThreadpoolController().select(user_api="blas").info()
    return next(i for i in infos if "numpy" in i["filepath"])["num_threads"]


def test_search_runs_blas_on_one_thread_with_the_same_scores_and_restores_the_setting():
    """An idle OpenBLAS worker busy-waits after each call, so the query product runs on one thread: the scores
    are the multi-threaded product's bit for bit, and the process's BLAS setting is left as it was found,
    also when two blocks overlap (the API's engine threads)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not any("numpy" in i["filepath"] for i in threadpoolctl.ThreadpoolController().select(user_api="blas").info()):
        pytest.skip("numpy has no BLAS threadpoolctl can see")
    from index.dense_store import _OneBlasThread

    vectors = unit_rows(3000, dim=384, seed=3)
    ids = [f"a{i}" for i in range(3000)]
    store = DenseStore(ids=ids, vectors=vectors)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        expected = vectors @ vectors[5]
        hits = store.search(vectors[5], k=10)
        assert _blas_threads(threadpoolctl) == 2
        rows = [ids.index(doc_id) for doc_id, _ in hits]
        expected_cos = vectors[rows] @ vectors[5]
        cos = store.cosines(vectors[5], [h[0] for h in hits])
        assert _blas_threads(threadpoolctl) == 2
        first, second = _OneBlasThread(), _OneBlasThread()
        first.__enter__()
        second.__enter__()
        first.__exit__(None, None, None)
        assert _blas_threads(threadpoolctl) == 1  # still inside the second block
        second.__exit__(None, None, None)
        assert _blas_threads(threadpoolctl) == 2
    assert [score for _, score in hits] == [float(expected[r]) for r in rows]
    assert cos.tolist() == expected_cos.tolist()
