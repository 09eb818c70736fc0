"""The index benchmark's building blocks: replication with unique ids, percentiles, a small latency run."""

from __future__ import annotations

from pathlib import Path

from eval.index_bench import measure_search, percentile, replicated
from index.base import SearchQuery
from index.documents import build_document
from parsers.tree import EDU, DiscourseTree


def docs():
    texts = ["Check the starter relay.", "Replace the brake pads.", "Inspect the serpentine belt."]
    return [build_document(doc_id=f"d{i}#1", dialogue_id=f"d{i}", position=1, text=t,
                           tree=DiscourseTree.single(t, EDU(0, t, 0, len(t), 0)))
            for i, t in enumerate(texts)]


def test_replicated_ids_are_unique_and_sized() -> None:
    out = list(replicated(docs(), 8))
    assert len(out) == 8 and len({d.id for d in out}) == 8
    assert [d.id for d in out[:4]] == ["d0#1", "d1#1", "d2#1", "d0#1@1"]
    assert out[3].text == out[0].text and out[3].dialogue_id == "d0@1"


def test_percentile_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 95), percentile(values, 100)) == (50.0, 95.0, 100.0)
    assert percentile([], 50) == 0.0


def test_measure_search_reports_percentiles(tmp_path: Path) -> None:
    queries = [SearchQuery(keywords=("belt",)), SearchQuery(keywords=("brake", "relay"))]
    result = measure_search(docs(), queries, 30, tmp_path)
    assert result["answers"] == 30 and result["queries"] == 2 and result["queries_without_hits"] == 0
    assert 0 < result["p50_ms"] <= result["p95_ms"] <= result["max_ms"]
    assert list(tmp_path.iterdir()) == [] or all(p.name.endswith(("-wal", "-shm")) for p in tmp_path.iterdir())
