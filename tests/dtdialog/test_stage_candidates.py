"""Stage 3, candidates: the generator's hits with their matched fields and analyses, the logged successor, no repeats."""

from __future__ import annotations

from engine_helpers import ANSWERS, PAPER_C1, text_of
from stage_helpers import car_stage_world, plan_of

from dtdialog.selection.stages import LexicalGenerator, StepRecord, form_query, gather_candidates
from dtdialog.selection.stages.candidates import drop_repeats, logged_successor
from index.base import SearchHit


def _gather(parser, index, tools, *, step=0, followups=(), exclude=(), context_ids=()):
    plan, _ = plan_of(parser, tools, step=step, followups=followups, context_ids=context_ids)
    record = StepRecord()
    query = form_query(plan, exclude_ids=list(exclude), size=20, whole_question=False, record=record)
    pool = gather_candidates(plan, query, generator=LexicalGenerator(index=index), followups=list(followups),
                             exclude_ids=list(exclude), size=20, tools=tools, record=record)
    return pool, record, query


def test_candidates_keep_their_hit_fields_and_analysis_in_retrieval_order(tmp_path):
    parser, index, tools = car_stage_world(tmp_path)
    pool, record, query = _gather(parser, index, tools, exclude=["coil#1"])
    ids = [c.document.id for c in pool.candidates]
    searched = [h.document.id for h in index.search(query.with_size(20))]
    assert ids == searched and "coil#1" not in ids and ids[0] == "nostart#1"
    for cand in pool.candidates:
        assert cand.hit.matched                                        # what the index matched, kept for the API
        assert cand.analysis.terms == tools.analyze(cand.document).terms
        assert cand.analysis.tree.text == cand.document.text
    assert record.retrieved == len(ids) and record.successor is None and record.duplicates == []
    index.close()


def test_a_near_duplicate_answer_is_dropped_after_the_first(tmp_path):
    answers = dict(ANSWERS)
    answers["nostart-copy#1"] = ANSWERS["nostart#1"]                  # the same answer logged twice
    parser, index, tools = car_stage_world(tmp_path, answers)
    pool, record, _ = _gather(parser, index, tools)
    ids = [c.document.id for c in pool.candidates]
    assert len({"nostart#1", "nostart-copy#1"} & set(ids)) == 1
    assert len(record.duplicates) == 1 and record.duplicates[0] in {"nostart#1", "nostart-copy#1"}
    assert record.retrieved == len(ids) + 1
    index.close()


def test_a_reply_adds_the_logged_successor_even_without_a_shared_word(tmp_path):
    answers = {**ANSWERS, "wiring#1": ("Elaboration", "NS", ["Check the spark plugs and the battery of the car.",
                                                             "Look at the coils too."]),
               "wiring#3": ("Elaboration", "NS", ["Swap the harness connector.", "Reseat its latch."])}
    parser, index, tools = car_stage_world(tmp_path, answers)
    reply = text_of(PAPER_C1)
    pool, record, _ = _gather(parser, index, tools, step=1, followups=[reply], exclude=["wiring#1"],
                              context_ids=["wiring#1"])
    last = pool.candidates[-1]
    assert last.document.id == "wiring#3" and last.hit.score == 0.0
    assert record.successor == "wiring#3" == pool.successor
    excluded, record2, _ = _gather(parser, index, tools, step=1, followups=[reply], exclude=["wiring#1", "wiring#3"],
                                   context_ids=["wiring#1"])
    assert "wiring#3" not in [c.document.id for c in excluded.candidates] and record2.successor is None
    index.close()


def test_logged_successor_and_drop_repeats_on_their_own(tmp_path):
    parser, index, tools = car_stage_world(tmp_path)
    first, third = index.get("nostart#1"), index.get("nostart#3")
    assert logged_successor([], None, set(), index.get) is None
    assert logged_successor([], first, set(), index.get).document.id == "nostart#3"
    assert logged_successor([SearchHit(document=third, score=2.0)], first, set(), index.get) is None
    assert logged_successor([], first, {"nostart#3"}, index.get) is None
    pool = drop_repeats([SearchHit(document=first, score=1.0), SearchHit(document=third, score=0.5)], {"nostart#1"},
                        tools.analyze)
    assert [c.document.id for c in pool.candidates] == ["nostart#3"] and pool.duplicates == []
    index.close()


def test_near_duplicate_size_bound_agrees_with_every_pairwise_jaccard():
    """The size bound skips only pairs that cannot reach the threshold: the verdicts equal the plain pairwise
    test, including pairs exactly at it (9 of 10 shared terms) and empty term sets (Jaccard 1)."""
    import random

    from dtdialog.selection.stages.candidates import DUPLICATE_JACCARD, _near_duplicate, jaccard

    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(14)]
    sets = [frozenset(), frozenset(vocab[:9]), frozenset(vocab[:10]), frozenset(vocab[:1])]
    sets += [frozenset(rng.sample(vocab, rng.randint(0, 14))) for _ in range(300)]
    verdicts = set()
    for i, terms in enumerate(sets):
        kept = [(len(s), s) for s in sets[max(0, i - 6):i]]
        expected = any(jaccard(terms, s) >= DUPLICATE_JACCARD for _, s in kept)
        assert _near_duplicate(terms, kept) == expected
        verdicts.add(expected)
    assert verdicts == {True, False}
    assert jaccard(frozenset(vocab[:9]), frozenset(vocab[:10])) == DUPLICATE_JACCARD
    assert _near_duplicate(frozenset(vocab[:10]), [(9, frozenset(vocab[:9]))])

