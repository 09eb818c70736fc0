"""Latency figures shared by the benchmarks: percentiles, a per-kind summary and a timer for one stage of a turn."""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any


def percentile(values: list[float], q: float) -> float:
    """Return the ``q``-th percentile (0-100) of ``values`` by linear interpolation."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q / 100.0
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summarize(values: list[float]) -> dict[str, float]:
    """Return count, mean and p50/p95/p99 of latencies in ms."""
    return {"turns": len(values), "mean_ms": round(statistics.fmean(values), 2) if values else float("nan"),
            "p50_ms": round(percentile(values, 50), 2), "p95_ms": round(percentile(values, 95), 2),
            "p99_ms": round(percentile(values, 99), 2), "max_ms": round(max(values), 2) if values else float("nan")}


def sg_alignment() -> str:
    """Return how this process aligns the SG feature's phrases, "compiled" or "python": a report's turn times
    depend on it (``dtdialog.selection.syntactic_generalization.ALIGNMENT``)."""
    from dtdialog.selection.syntactic_generalization import ALIGNMENT

    return ALIGNMENT


class TimedCall:
    """Wraps a callable, summing the wall time spent in it and its calls (to split a turn into stages).

    ``seconds`` counts the calls made on the thread that created the wrapper (the turn's thread) and
    ``elsewhere_seconds`` the calls made on other threads (work done ahead, overlapping the turn's own):
    only the first kind adds up to a turn's wall time.
    """

    def __init__(self, fn) -> None:
        self.fn = fn
        self.seconds = 0.0
        self.elsewhere_seconds = 0.0
        self.calls = 0
        self._thread = threading.get_ident()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            if threading.get_ident() == self._thread:
                self.seconds += time.perf_counter() - start
            else:
                self.elsewhere_seconds += time.perf_counter() - start
            self.calls += 1

    @property
    def all_seconds(self) -> float:
        return self.seconds + self.elsewhere_seconds
