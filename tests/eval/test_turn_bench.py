"""The turn benchmark's pieces: percentiles and the replicated index (no timing assertions)."""

from __future__ import annotations

import sys
from pathlib import Path

# the hand-built answers are shared with the engine tests
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dtdialog"))
from engine_helpers import ANSWERS, make_index  # noqa: E402

from eval.latency import TimedCall, percentile, summarize  # noqa: E402
from eval.turn_bench import replicated_index  # noqa: E402


def test_percentile_and_summary():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.5
    assert percentile(values, 95) == 95.05
    assert percentile([7.0], 99) == 7.0
    s = summarize(values)
    assert s["turns"] == 100 and s["p50_ms"] == 50.5 and s["max_ms"] == 100.0


def test_replicated_index_has_unique_ids_and_the_asked_size(tmp_path):
    source = make_index(tmp_path / "src.sqlite", ANSWERS)
    target = replicated_index(source, tmp_path / "big.sqlite", 50)
    assert target.count() == 50
    ids = target.ids()
    assert len(set(ids)) == 50 and "nostart#1~r1" in ids
    copy = target.get("nostart#1~r1")
    assert copy.dialogue_id == "nostart~r1" and copy.tree == source.get("nostart#1").tree
    target.close()
    source.close()


def test_timed_call_counts_calls_on_other_threads_apart():
    """Work done ahead on a worker thread overlaps the turn: it must not be added to the turn's own stages."""
    import threading

    timed = TimedCall(lambda x: x * 2)
    assert timed(2) == 4
    worker = threading.Thread(target=timed, args=(3,))
    worker.start()
    worker.join()
    assert timed.calls == 2
    assert timed.seconds > 0 and timed.elsewhere_seconds > 0
    assert timed.all_seconds == timed.seconds + timed.elsewhere_seconds
