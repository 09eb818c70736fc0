"""Keep the loaded engine, and what its caches keep, out of the cyclic garbage collector's full collections.

A loaded engine (spaCy pipeline, MiniLM, stores, caches of the index) is hundreds of thousands of objects that
live as long as the process; every full collection that scans them lands inside some user's turn.
``freeze_loaded`` moves everything alive now to the permanent generation and spaces full collections out, and
each later full collection freezes what survived it, so caches that grow with traffic are not rescanned either.
The price: an object alive at a full collection that later becomes garbage *inside a reference cycle* is never
collected. A turn leaves no such structures; ``eval.gc_bench`` counts what the freezes keep (figures in
``docs/scale.md``).
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
    # frozen, the collector's "25% new long-lived objects" rule would otherwise run a full collection every few turns
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
