"""Keep the loaded engine, and what its caches keep, out of the cyclic garbage collector's full collections.

A loaded engine (spaCy pipeline, MiniLM, stores, caches of the index) is hundreds of thousands of
objects that live as long as the process. Left in the collector's view, every full collection
scans them, 250-450 ms that land inside some user's turn (the p99 and, on the rule path, the p95
of the turn benchmarks). ``freeze_loaded`` moves everything alive now to the permanent
generation and spaces full collections out.

The caches then grow as turns meet new answers: at 100k answers with 45,000 answer analyses cached, a full
collection scanned ~1.8M objects and took 626-943 ms, three times in 500 turns (``eval.gc_bench``). So each full
collection also freezes what survived it: the next one scans only what survived since (157-264 ms in the same
runs), and a cache entry evicted later is still freed when its last reference goes. The price: an object alive at
a full collection that later becomes garbage *inside a reference cycle* is never collected. A turn leaves no such
structures (the scikit-learn Pipeline that made one per turn is no longer called while serving), and
``eval.gc_bench`` counts what the freezes kept: 20 objects over 500 turns with or without the re-freezing, what
the freeze at load already kept.
"""

from __future__ import annotations

import gc
from typing import Any

#: gen-1 collections between full collections once the engine is frozen (Python's default is 10)
GEN2_THRESHOLD = 100


def freeze_loaded() -> None:
    """Collect once, freeze every live object, consider full collections every ``GEN2_THRESHOLD`` gen-1 ones, and
    freeze the survivors of each full collection from now on (process-wide, installed once)."""
    gc.collect()
    gc.freeze()
    # With the loaded engine frozen, a full collection scans only what grew since, but the collector's
    # "25% new long-lived objects" rule then fires every ~8 turns (+100-150 ms each: hybrid_bench's p95).
    # Every 100 gen-1 collections measured p95 196-200 ms vs 217-260 without freezing and 296-309 frozen
    # at the default (10k answers, load ~3, 113 turns per run).
    young, middle, old = gc.get_threshold()
    gc.set_threshold(young, middle, max(old, GEN2_THRESHOLD))
    if freeze_survivors not in gc.callbacks:
        gc.callbacks.append(freeze_survivors)


def freeze_survivors(phase: str, info: dict[str, Any]) -> None:
    """A ``gc.callbacks`` hook: once a full collection ends, move what it left alive to the permanent generation."""
    # at "stop" the collection is over and the generations are consistent; a collection cannot start inside
    # a callback, and ``gc.freeze`` only moves the lists
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()
