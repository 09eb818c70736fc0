"""The logged dialogue as a tested path, on the built-in corpus under both rankers: its next answer goes first when
the customer's reply took the branch it was written for, and never when the reply went elsewhere.

Before: to "The outer pad on the front left is only about 2 mm thick" (the reply the logged next answer was written
for, in other words) the bot asked for a detail; "Follow a bedding procedure", two steps further on in the same
dialogue, outranked the next answer. And "14.3 volts is a good charging voltage" followed a reply with no voltage.
"""

from __future__ import annotations

import pytest

from dtdialog.selection.stages.branch_clash import SKIPS_AHEAD

pytestmark = [pytest.mark.slow, pytest.mark.dense]

SQUEAL = ("My brakes make a high-pitched squeal while I drive, and it goes away when I press the brake pedal. "
          "The car still stops fine. Should I worry?")
DRAIN = "Battery keeps dying overnight. New battery 2 months ago, alternator tested fine at the shop."


@pytest.fixture(scope="module")
def selectors(builtin_learned_index, tmp_path_factory):
    from dtdialog.setup.assembly import EngineSpec, build_engine

    path, parser = builtin_learned_index
    built = {r: build_engine(EngineSpec(index_path=str(path), ranker=r), parser=parser, progress=False)
             for r in ("rules", "learned")}
    yield {r: e.selector for r, e in built.items()}
    for engine in built.values():
        engine.close()


def _next(selector, question: str, shown: str, reply: str):
    return selector.rank_outcome(question=question, step=1, followups=[reply], exclude_ids=[shown],
                                 context_ids=[shown], size=10)


@pytest.mark.parametrize("ranker", ["rules", "learned"])
def test_a_reply_on_the_logged_branch_gets_the_logged_next_answer(selectors, ranker):
    outcome = _next(selectors[ranker], SQUEAL, "brakes-001#1", "The outer pad on the front left is only about 2 mm thick.")
    assert outcome.candidates[0].document.id == "brakes-001#3" == outcome.record.branch_follows
    assert outcome.record.branch_clash.get("brakes-001#5") == SKIPS_AHEAD


@pytest.mark.parametrize("ranker", ["rules", "learned"])
def test_a_reading_the_customer_never_gave_is_no_branch_to_follow(selectors, ranker):
    gave = _next(selectors[ranker], DRAIN, "electrical-014#1", "I measured 14.3 volts with the engine running.")
    assert gave.candidates[0].document.id == "electrical-014#3"
    other = _next(selectors[ranker], DRAIN, "electrical-014#1",
                  "I did the fuse pull test and the drain stopped when I pulled the radio fuse")
    assert "electrical-014#3" not in {c.document.id for c in other.candidates}
    assert "14.3 volts" in other.record.presupposition["electrical-014#3"]
    assert other.record.branch_follows is None
