"""Every method ranks the hand-made pool sensibly: the right answer first, exclusions honoured, k respected."""

import pytest

from eval.methods import available_methods, get_method, register_method
from eval.methods.base import MethodUnavailable, RankingMethod
from parsers.errors import ConfigError, InputError


def check_method(method: RankingMethod, pool, dialogues, *, min_right: int = 4) -> None:
    method.fit(pool=pool)
    right = 0
    for d in dialogues:
        ranked = method.rank(question=d.question, followups=(), step=0, exclude_ids=(), k=3)
        assert len(ranked) <= 3
        assert all(isinstance(s, float) for _, s in ranked)
        assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)
        right += bool(ranked) and ranked[0][0] == d.answer_ids[0]
    assert right >= min_right, f"{method.name}: {right} of {len(dialogues)} right"
    battery = dialogues[1]
    second = method.rank(question=battery.question, followups=battery.followups[:1], step=1,
                         exclude_ids=("battery#1",), k=5)
    assert "battery#1" not in [i for i, _ in second]
    method.close()


def test_registry_lists_the_four_methods_and_rejects_unknown():
    assert {"keyword", "syntactic", "dtq", "dense"} <= set(available_methods())
    with pytest.raises(InputError, match="unknown method"):
        get_method("nope")


def test_registry_takes_new_methods():
    class Fixed(RankingMethod):
        name = "fixed"

        def fit(self, *, pool):
            self.ids = [a.id for a in pool]

        def rank(self, *, question, followups, step, exclude_ids, k):
            return [(i, 0.0) for i in self.ids if i not in exclude_ids][:k]

    register_method("fixed-test", Fixed)
    assert isinstance(get_method("fixed-test"), Fixed)


def test_keyword_ranks_the_toy_pool(toy_pool, toy_dialogues):
    check_method(get_method("keyword"), toy_pool, toy_dialogues)
    with pytest.raises(ConfigError):
        get_method("keyword", variant="nope")


def test_keyword_reproduces_the_plain_bm25_order(toy_pool):
    m = get_method("keyword")
    m.fit(pool=toy_pool)
    ranked = m.rank(question="tire pressure", followups=(), step=0, exclude_ids=(), k=10)
    assert ranked[0][0] == "tires#1" and len(ranked) == len(toy_pool)


def test_keyword_without_rank_bm25_says_which_extra_to_install(toy_pool, monkeypatch):
    import sys

    from parsers.errors import ModelNotAvailableError

    monkeypatch.setitem(sys.modules, "rank_bm25", None)  # not installed: the base install lacks it
    with pytest.raises(ModelNotAvailableError, match=r"pip install 'dtdialog\[eval\]'"):
        get_method("keyword").fit(pool=toy_pool)


def test_syntactic_ranks_the_toy_pool(toy_pool, toy_dialogues):
    m = get_method("syntactic", depth=3)
    check_method(m, toy_pool, toy_dialogues)
    with pytest.raises(ConfigError):
        get_method("syntactic", depth=0)


def test_dtq_ranks_the_toy_pool_through_the_engine(toy_pool, toy_dialogues):
    m = get_method("dtq-rules")
    check_method(m, toy_pool, toy_dialogues, min_right=3)
    assert m.build_report.indexed == len(toy_pool)
    assert m._index is None  # close() closed the shared pool index
    assert m.resolved_ranker == "rules" and "rules ranker" in m.label
    # another engine method of the same run reuses the pool's index instead of parsing the pool again
    other = get_method("dtq-nocontext")
    other.fit(pool=toy_pool)
    try:
        assert other.build_report is m.build_report
        assert other.rank(question="tire pressure", followups=(), step=0, exclude_ids=(), k=3)
    finally:
        other.close()


@pytest.mark.dense
def test_dense_ranks_the_toy_pool(toy_pool, toy_dialogues):
    try:
        m = get_method("dense")
    except MethodUnavailable as exc:
        pytest.skip(str(exc))
    check_method(m, toy_pool, toy_dialogues)
