"""The metrics on a hand-made set of reconstructed dialogues whose values are computed by hand below."""

import math

import pytest

from eval.metrics import DialogueResult, StepResult, bootstrap_ratio, compute_metrics


def step(n: int, rank: int | None, gold: str = "gold") -> StepResult:
    """A step whose actual answer sits at 1-based ``rank`` of a 10-item list (None: not returned)."""
    ids = [f"other{i}" for i in range(10)]
    if rank is not None:
        ids[rank - 1] = gold
    return StepResult(step=n, gold_id=gold, ranked_ids=tuple(ids))


def dialogue(did: str, ranks: list[int | None], *, followup: bool) -> DialogueResult:
    return DialogueResult(dialogue_id=did, steps=tuple(step(i + 1, r) for i, r in enumerate(ranks)),
                          has_followup=followup)


# D1 all right; D2 A1 right, A2 second, A3 missing; D3 A1 third, A2 right;
# D4 single answer right, no C1; D5 single answer at rank 6 but the customer replied (C1).
RESULTS = [
    dialogue("D1", [1, 1, 1], followup=True),
    dialogue("D2", [1, 2, None], followup=True),
    dialogue("D3", [3, 1], followup=True),
    dialogue("D4", [1], followup=False),
    dialogue("D5", [6], followup=True),
]


def test_step_rank_and_correctness():
    assert step(1, 1).correct and step(1, 1).rank == 1
    assert not step(1, 3).correct and step(1, 3).rank == 3
    assert step(1, None).rank is None and not step(1, None).correct
    assert not StepResult(step=1, gold_id="g", ranked_ids=()).correct


def test_table1_columns_by_hand():
    m = compute_metrics(RESULTS)
    t = m.table1
    assert t["Q-A"].value == pytest.approx(3 / 5) and t["Q-A"].n == 5  # D1, D2, D4
    assert t["Q-A1-C1"].value == pytest.approx(2 / 4) and t["Q-A1-C1"].n == 4  # D1, D2 of D1, D2, D3, D5
    assert t["Q-A1-C1-A2"].value == pytest.approx(1 / 3) and t["Q-A1-C1-A2"].n == 3  # D1 of D1-D3
    assert t["Q-A1-C1-A2-C2-A3"].value == pytest.approx(1 / 2) and t["Q-A1-C1-A2-C2-A3"].n == 2  # D1 of D1, D2
    assert m.primary.value == pytest.approx(2 / 5) and m.primary.n == 5  # D1, D4 fully right
    assert m.primary.n_steps == 10


def test_per_step_accuracy_by_hand():
    m = compute_metrics(RESULTS)
    assert m.per_step[1].value == pytest.approx(3 / 5) and m.per_step[1].n == 5
    assert m.per_step[2].value == pytest.approx(2 / 3) and m.per_step[2].n == 3
    assert m.per_step[3].value == pytest.approx(1 / 2) and m.per_step[3].n == 2


def test_p1_recall_mrr_by_hand():
    m = compute_metrics(RESULTS)
    assert m.p_at_1.value == pytest.approx(6 / 10) and m.p_at_1.n_steps == 10
    assert m.recall.name == "R@5" and m.recall.value == pytest.approx(8 / 10)
    mrr = (3 + (1 + 1 / 2) + (1 / 3 + 1) + 1 + 1 / 6) / 10
    assert m.mrr.value == pytest.approx(mrr)
    assert compute_metrics(RESULTS, recall_k=1).recall.value == pytest.approx(m.p_at_1.value)


def test_every_ci_contains_its_point_and_lies_in_0_1():
    for v in compute_metrics(RESULTS).all_values():
        assert v.low <= v.value <= v.high, v
        assert 0.0 <= v.low and v.high <= 1.0


def test_ci_is_deterministic_under_the_seed():
    a = compute_metrics(RESULTS, seed=7)
    b = compute_metrics(RESULTS, seed=7)
    assert a == b
    c = compute_metrics(RESULTS * 5, seed=7)
    d = compute_metrics(RESULTS * 5, seed=8)
    assert (c.mrr.low, c.mrr.high) != (d.mrr.low, d.mrr.high)


def test_ci_degenerates_to_a_point_when_all_outcomes_are_equal():
    right = [dialogue(f"R{i}", [1, 1], followup=True) for i in range(20)]
    m = compute_metrics(right)
    assert (m.p_at_1.low, m.p_at_1.value, m.p_at_1.high) == (1.0, 1.0, 1.0)
    wrong = [dialogue(f"W{i}", [None], followup=False) for i in range(20)]
    m = compute_metrics(wrong)
    assert (m.table1["Q-A"].low, m.table1["Q-A"].high) == (0.0, 0.0)
    assert math.isnan(m.table1["Q-A1-C1"].value) and m.table1["Q-A1-C1"].n == 0


def test_ci_narrows_with_more_dialogues():
    small = compute_metrics(RESULTS).p_at_1
    big = compute_metrics(RESULTS * 20).p_at_1
    assert big.value == pytest.approx(small.value)
    assert big.high - big.low < small.high - small.low


def test_bootstrap_ratio_drops_units_outside_the_metric():
    point, low, high = bootstrap_ratio([1, 0, 5], [1, 1, 0], n_resamples=200, seed=1)
    assert point == pytest.approx(0.5)
    assert low == 0.0 and high == 1.0
    assert all(math.isnan(x) for x in bootstrap_ratio([1], [0]))
