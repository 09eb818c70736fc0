"""Freezing the loaded engine, and each full collection's survivors: out of the collector's view, still freed."""

from __future__ import annotations

import gc
import weakref

import pytest

from dtdialog.runtime.gc_tuning import GEN2_THRESHOLD, freeze_loaded, freeze_survivors


class Entry:
    """Stands for a cache entry (an answer's analysis): tracked by the collector, acyclic."""

    def __init__(self, i: int) -> None:
        self.terms = {f"term{i}"}


@pytest.fixture
def collector():
    """Everything frozen by the test is unfrozen after it (tests/conftest.py puts the callbacks and thresholds back)."""
    yield
    gc.unfreeze()


def test_freeze_loaded_moves_live_objects_and_raises_the_full_collection_threshold(collector):
    before = gc.get_threshold()
    loaded = [{"answer": i} for i in range(1000)]  # stands for a loaded engine
    freeze_loaded()
    assert gc.get_freeze_count() >= len(loaded)
    assert gc.get_threshold()[2] >= GEN2_THRESHOLD
    assert gc.get_threshold()[:2] == before[:2]
    freeze_loaded()
    assert gc.callbacks.count(freeze_survivors) == 1  # installed once, however many engines a process loads


def test_a_full_collection_freezes_what_survived_it_and_still_collects_cycles(collector):
    freeze_loaded()
    frozen = gc.get_freeze_count()
    cache = [Entry(i) for i in range(2000)]  # grown by turns after the load
    cycle = [Entry(-1)]
    cycle.append(cycle)  # garbage in a cycle, dropped before the collection
    dead = weakref.ref(cycle[0])
    del cycle
    assert gc.collect() >= 2 and dead() is None  # the collection took the cycle, and froze nothing of it
    assert gc.get_freeze_count() >= frozen + len(cache)  # the survivors left the collector's view
    tracked = {id(o) for o in gc.get_objects()}
    assert not any(id(e) in tracked for e in cache[:50])
    evicted = weakref.ref(cache[0])
    del cache[0]
    assert evicted() is None  # a frozen entry evicted from its cache is still freed (reference counting)


def test_without_the_hook_survivors_stay_in_view(collector):
    freeze_loaded()
    gc.callbacks.remove(freeze_survivors)
    frozen = gc.get_freeze_count()
    cache = [Entry(i) for i in range(2000)]
    gc.collect()
    assert gc.get_freeze_count() < frozen + len(cache)
