"""Freezing the loaded engine: live objects leave the collector's view, full collections are spaced out."""

from __future__ import annotations

import gc

from dtdialog.gc_tuning import GEN2_THRESHOLD, freeze_loaded


def test_freeze_loaded_moves_live_objects_and_raises_the_full_collection_threshold():
    before = gc.get_threshold()
    loaded = [{"answer": i} for i in range(1000)]  # stands for a loaded engine
    try:
        freeze_loaded()
        assert gc.get_freeze_count() >= len(loaded)
        assert gc.get_threshold()[2] >= GEN2_THRESHOLD
        assert gc.get_threshold()[:2] == before[:2]
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
