"""A turn searches the dense store twice with one query vector (scope gate k=1, generator top k): the second search
is answered from the first (``AnnIndex.search`` keeps the graph's rows, ``DenseStore`` the exact scores), and must
give exactly what a search of its own gives, whatever the order of the calls."""

from __future__ import annotations

import numpy as np
import pytest
from test_dense_ann import clustered_rows, usearch_installed  # noqa: F401 - the fixture is used by name

from index import dense_ann
from index.dense_ann import AnnIndex, AnnSettings
from index.dense_store import RECENT_QUERIES, DenseStore

KS = (1, 40, 2, 64, 5, 1, 70, 300)


def plain_graph_rows(ann: AnnIndex, query: np.ndarray, k: int) -> np.ndarray:
    """The graph's rows for ``k``, asked of usearch for exactly that many (no memory of earlier queries)."""
    count = min(k * ann.settings.oversample, len(ann))
    return np.asarray(ann._raw.search(np.asarray(query, dtype=np.float32), count, threads=1).keys, dtype=np.int64)


@pytest.mark.parametrize("beam", [500, 100])
def test_graph_rows_of_a_repeated_query_are_the_rows_of_its_own_search(beam, usearch_installed):  # noqa: F811
    vectors = clustered_rows(3000)
    ann = AnnIndex.build(vectors, AnnSettings(expansion_search=beam))
    queries = clustered_rows(30, seed=5)
    for i, q in enumerate(queries):
        for k in (KS if i % 2 else KS[::-1]):  # the small count first, or the large one
            assert np.array_equal(ann.search(q, k), plain_graph_rows(ann, q, k)), (i, k)
    assert len(ann._recent) == dense_ann.RECENT_QUERIES
    # a changed beam is a different walk: never answered from rows kept under the old one
    q = queries[-1]
    ann._raw.expansion_search = 20
    assert np.array_equal(ann.search(q, 5), plain_graph_rows(ann, q, 5))


def test_store_search_through_the_graph_is_unchanged_by_the_kept_rows(monkeypatch, usearch_installed):  # noqa: F811
    monkeypatch.setenv(dense_ann.THRESHOLD_ENV, "1000")
    vectors = clustered_rows(2500)
    ids = [f"a{i}" for i in range(2500)]
    store = DenseStore(ids=ids, vectors=vectors, hub=np.zeros(2500))
    store.attach_ann()
    q = clustered_rows(1, seed=9)[0]
    fresh = [DenseStore(ids=ids, vectors=vectors, hub=np.zeros(2500)) for _ in range(3)]
    for other in fresh:
        other.ann = store.ann
    expected = []
    for other, (k, exclude) in zip(fresh, ((1, ()), (40, ("a3", "a7")), (10, ()))):
        other.ann._recent.clear()
        expected.append(other.search(q, k=k, exclude_ids=exclude))
    store.ann._recent.clear()
    assert [store.search(q, k=k, exclude_ids=ex) for k, ex in ((1, ()), (40, ("a3", "a7")), (10, ()))] == expected


def test_exact_search_reuses_the_scores_and_never_changes_them():
    vectors = clustered_rows(3000)
    ids = [f"a{i}" for i in range(3000)]
    store = DenseStore(ids=ids, vectors=vectors, hub=np.zeros(3000))
    queries = clustered_rows(RECENT_QUERIES + 2, seed=3)
    for _ in range(2):  # the second round reads the kept scores
        for q in queries:
            for k, exclude in ((1, ()), (40, tuple(ids[:50:7])), (40, ()), (3000, ("a0",))):
                plain = DenseStore(ids=ids, vectors=vectors, hub=np.zeros(3000))  # nothing remembered
                assert store.search(q, k=k, exclude_ids=exclude) == plain.search(q, k=k, exclude_ids=exclude)
    assert len(store._recent) == RECENT_QUERIES
    kept = next(iter(store._recent.values()))
    assert not kept.flags.writeable  # an exclusion works on a copy, the kept scores stay as computed
    q = queries[-1]
    np.testing.assert_array_equal(store._all_scores(q), np.asarray(vectors) @ q)
