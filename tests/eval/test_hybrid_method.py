"""The ``hybrid`` and ``hybrid+dt`` evaluation methods on the hand-made toy pool (needs the [dense] extra)."""

from __future__ import annotations

import pytest

from eval.methods import available_methods, get_method
from eval.methods.base import MethodUnavailable
from eval.methods.hybrid import pool_digest

pytestmark = pytest.mark.dense


def test_registered():
    assert {"hybrid", "hybrid+dt"} <= set(available_methods())


@pytest.mark.parametrize("name", ["hybrid", "hybrid+dt"])
def test_hybrid_methods_rank_the_toy_pool(name, toy_pool, toy_dialogues):
    try:
        m = get_method(name)
    except MethodUnavailable as exc:
        pytest.skip(str(exc))
    if not m.model_path.is_file():
        pytest.skip("no shipped ranker model")
    m.fit(pool=toy_pool)
    assert m.label.startswith("Hybrid") and name in m.label and "in-sample" not in m.label
    right = 0
    for d in toy_dialogues:
        ranked = m.rank(question=d.question, followups=(), step=0, exclude_ids=(), k=3)
        assert len(ranked) <= 3
        assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)
        right += bool(ranked) and ranked[0][0] == d.answer_ids[0]
    assert right >= 3
    battery = toy_dialogues[1]
    second = m.rank(question=battery.question, followups=battery.followups[:1], step=1, exclude_ids=("battery#1",),
                    k=5)
    assert "battery#1" not in [i for i, _ in second]
    m.close()


def test_pool_digest_depends_on_ids_and_texts(toy_pool):
    assert pool_digest(toy_pool) == pool_digest(list(toy_pool))
    assert pool_digest(toy_pool) != pool_digest(toy_pool[:-1])
