"""Keep the loaded engine out of the cyclic garbage collector's full collections (a process-wide setting).

A loaded engine (spaCy pipeline, MiniLM, stores, caches of the index) is hundreds of thousands of
objects that live as long as the process. Left in the collector's view, every full collection
scans them, 250-450 ms that land inside some user's turn (the p99 and, on the rule path, the p95
of the turn benchmarks). ``freeze_loaded`` moves everything alive now to the permanent
generation and spaces full collections out; objects made later are collected as usual.
"""

from __future__ import annotations

import gc

#: gen-1 collections between full collections once the engine is frozen (Python's default is 10)
GEN2_THRESHOLD = 100


def freeze_loaded() -> None:
    """Collect once, freeze every live object, and consider full collections every ``GEN2_THRESHOLD`` gen-1 ones."""
    gc.collect()
    gc.freeze()
    # With the loaded engine frozen, a full collection scans only what grew since, but the collector's
    # "25% new long-lived objects" rule then fires every ~8 turns (+100-150 ms each: hybrid_bench's p95).
    # Every 100 gen-1 collections measured p95 196-200 ms vs 217-260 without freezing and 296-309 frozen
    # at the default (10k answers, load ~3, 113 turns per run).
    young, middle, old = gc.get_threshold()
    gc.set_threshold(young, middle, max(old, GEN2_THRESHOLD))
