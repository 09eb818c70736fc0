"""The hybrid generator: lexical hits first, dense-only hits appended with score 0, exclusions honoured."""

from __future__ import annotations

import numpy as np
import pytest

from dtdialog.ranking.dense_signals import dense_query_text
from dtdialog.ranking.hybrid_generator import HybridGenerator
from parsers.errors import ConfigError

pytestmark = pytest.mark.dense


@pytest.fixture(scope="module")
def selector_parts(dense_index, dense_signals):
    from dtdialog.setup.assembly import engine_parser_name
    from dtdialog.understanding.query_builder import build_query
    from dtdialog.understanding.subtrees import split_question
    from index.registry import open_index
    from parsers.base import get_parser

    index = open_index(backend="sqlite", path=dense_index)
    question = "My car will not start and the battery is new. What should I check?"
    plan = split_question(get_parser(engine_parser_name()).parse(question), question=question)
    yield index, plan, build_query(plan, part_index=0, size=5)
    index.close()


def test_union_of_lexical_and_dense(selector_parts, dense_signals):
    index, plan, query = selector_parts
    gen = HybridGenerator(index=index, dense=dense_signals, dense_k=5, lexical_k=5)
    hits = gen.generate(plan=plan, part_index=0, query=query, followups=[], size=5)
    ids = [h.document.id for h in hits]
    assert len(ids) == len(set(ids))
    lexical = [h.document.id for h in index.search(query.with_size(5))] if not query.is_empty() else []
    assert ids[:len(lexical)] == lexical
    dense_top = [i for i, _ in dense_signals.search(dense_query_text(plan.question), k=5)]
    assert set(dense_top) <= set(ids)
    assert all(h.score == 0.0 and "dense" in h.matched for h in hits[len(lexical):])
    assert len(ids) <= 10


def test_exclusions_and_followups(selector_parts, dense_signals):
    index, plan, query = selector_parts
    gen = HybridGenerator(index=index, dense=dense_signals, dense_k=3)
    first = gen.generate(plan=plan, part_index=0, query=query, followups=[], size=3)
    banned = first[0].document.id
    again = gen.generate(plan=plan, part_index=0, query=query.excluding(banned), followups=["It clicks."], size=3)
    assert banned not in {h.document.id for h in again}


def test_bad_depths(selector_parts, dense_signals):
    index, _, _ = selector_parts
    with pytest.raises(ConfigError):
        HybridGenerator(index=index, dense=dense_signals, dense_k=0)
    with pytest.raises(ConfigError):
        HybridGenerator(index=index, dense=dense_signals, lexical_k=-1)


def test_prepare_starts_the_step_query_encoding_before_the_step_is_planned(selector_parts, dense_signals):
    index, plan, query = selector_parts
    gen = HybridGenerator(index=index, dense=dense_signals, dense_k=3)
    followups = ["It clicks once and the dash lights dim."]
    text = dense_query_text(plan.question, followups)
    assert text not in dense_signals._cache
    gen.prepare(question=plan.question, followups=followups)
    with dense_signals._lock:
        assert text in dense_signals._cache or text in dense_signals._pending  # encoding, or already encoded
    expected = dense_signals.search(text, k=3)  # waits for the encoding the prepare started
    hits = gen.generate(plan=plan, part_index=0, query=query, followups=followups, size=3)
    assert {i for i, _ in expected} <= {h.document.id for h in hits}


def test_a_selector_starts_the_question_encoding_before_it_parses_the_question(selector_parts, dense_signals):
    from dtdialog.selection.selector import AnswerSelector
    from dtdialog.setup.assembly import engine_parser_name
    from parsers.base import get_parser

    index, _, _ = selector_parts
    question = "The heater blows cold air after I flushed the coolant. What did I miss?"
    seen: list[bool] = []
    parser = get_parser(engine_parser_name())

    class Watching:  # the parser notes whether the encoding was under way when the parse began
        def parse(self, text):
            with dense_signals._lock:
                seen.append(text in dense_signals._pending or text in dense_signals._cache)
            return parser.parse(text)

    selector = AnswerSelector(index=index, parser=Watching(),
                              generator=HybridGenerator(index=index, dense=dense_signals, dense_k=3))
    plan = selector.plan(question)
    assert seen == [True] and plan.question == question
    assert np.allclose(dense_signals.query_vector(question), dense_signals.encoder.encode([question])[0], atol=1e-6)


def test_an_encoding_in_progress_is_never_started_twice(dense_signals, monkeypatch):
    """The scope gate's ``query_vector`` and a planner's ``prefetch`` of the same text, from two threads: one
    forward pass, both get its vector."""
    import threading

    text = "The wipers stop halfway across the glass."
    calls: list[str] = []
    started, release = threading.Event(), threading.Event()
    real = dense_signals._encode_and_cache

    def slow(t):
        calls.append(t)
        started.set()
        release.wait(5)
        return real(t)

    monkeypatch.setattr(dense_signals, "_encode_and_cache", slow)
    out: list = []
    gate = threading.Thread(target=lambda: out.append(dense_signals.query_vector(text)))
    gate.start()
    assert started.wait(5)
    dense_signals.prefetch(text)  # while the gate's encoding is under way
    waiter = threading.Thread(target=lambda: out.append(dense_signals.query_vector(text)))
    waiter.start()
    release.set()
    gate.join(5)
    waiter.join(5)
    assert calls == [text] and len(out) == 2 and np.array_equal(out[0], out[1])
    with dense_signals._lock:
        assert text not in dense_signals._pending and text in dense_signals._cache
