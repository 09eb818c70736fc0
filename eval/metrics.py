"""Dialogue-reconstruction metrics: Table-1 dialogue correctness, per-step accuracy, P@1, R@k and MRR.

Every metric is a ratio of per-dialogue sums (numerator, denominator), so its 95% confidence
interval comes from one cluster bootstrap: resample whole dialogues with replacement
(``n_resamples`` times, fixed ``seed``) and take the 2.5 / 97.5 percentiles of the ratio.
Resampling dialogues, not steps, keeps the steps of one dialogue together (they are not independent).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

# Table 1 of the paper: the dialogue types and the number of answers each one needs.
DIALOGUE_TYPES = ("Q-A", "Q-A1-C1", "Q-A1-C1-A2", "Q-A1-C1-A2-C2-A3")
MAX_STEPS = 3


@dataclass(frozen=True)
class StepResult:
    """One step of one dialogue: the actual answer id and the ranked ids the method returned (best first)."""

    step: int
    gold_id: str
    ranked_ids: tuple[str, ...]

    @property
    def rank(self) -> int | None:
        """Return the 1-based rank of the actual answer, or None when it was not returned."""
        try:
            return self.ranked_ids.index(self.gold_id) + 1
        except ValueError:
            return None

    @property
    def correct(self) -> bool:
        """Return True when the selected (top-1) answer is the actual one."""
        return bool(self.ranked_ids) and self.ranked_ids[0] == self.gold_id


@dataclass(frozen=True)
class DialogueResult:
    """The steps of one reconstructed dialogue; ``has_followup`` says whether the dialogue has a C1."""

    dialogue_id: str
    steps: tuple[StepResult, ...]
    has_followup: bool = False

    @property
    def n_answers(self) -> int:
        return len(self.steps)

    def all_correct(self, upto: int) -> bool:
        """Return True when the first ``upto`` steps all selected the actual answer."""
        return all(s.correct for s in self.steps[:upto])


@dataclass(frozen=True)
class MetricValue:
    """A point estimate with its 95% bootstrap interval; ``n`` counts dialogues, ``n_steps`` the steps behind it."""

    name: str
    value: float
    low: float
    high: float
    n: int
    n_steps: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class MetricReport:
    """All metrics of one method on one dataset."""

    table1: dict[str, MetricValue]
    primary: MetricValue
    per_step: dict[int, MetricValue]
    p_at_1: MetricValue
    recall: MetricValue
    mrr: MetricValue
    extra: dict[str, MetricValue] = field(default_factory=dict)

    def all_values(self) -> list[MetricValue]:
        """Return every metric value, Table-1 columns first."""
        return [*self.table1.values(), self.primary, *self.per_step.values(), self.p_at_1, self.recall, self.mrr,
                *self.extra.values()]


def bootstrap_ratio(num: Sequence[float], den: Sequence[float], *, n_resamples: int = 1000, seed: int = 13,
                    alpha: float = 0.05) -> tuple[float, float, float]:
    """Return (point, low, high): ``sum(num) / sum(den)`` and its percentile bootstrap interval over units.

    Units with ``den == 0`` do not belong to the metric and are dropped first. Returns NaNs when none is left.
    """
    num_a = np.asarray(num, dtype=float)
    den_a = np.asarray(den, dtype=float)
    keep = den_a > 0
    num_a, den_a = num_a[keep], den_a[keep]
    if len(den_a) == 0:
        return float("nan"), float("nan"), float("nan")
    point = float(num_a.sum() / den_a.sum())
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(den_a), size=(n_resamples, len(den_a)))
    stats = num_a[idx].sum(axis=1) / den_a[idx].sum(axis=1)
    low, high = np.percentile(stats, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    # Percentiles of a degenerate sample can be off by float rounding; an interval must contain its point.
    return point, float(min(low, point)), float(max(high, point))


def _metric(name: str, num: Sequence[float], den: Sequence[float], *, n_steps: Sequence[float] | None = None,
            n_resamples: int, seed: int) -> MetricValue:
    value, low, high = bootstrap_ratio(num, den, n_resamples=n_resamples, seed=seed)
    n = int(sum(1 for d in den if d > 0))
    steps = int(sum(n_steps)) if n_steps is not None else int(sum(den))
    return MetricValue(name=name, value=value, low=low, high=high, n=n, n_steps=steps)


def metric_units(results: Sequence[DialogueResult], *, recall_k: int = 5) -> dict[str, tuple[list[float], list[float]]]:
    """Return every metric of ``compute_metrics`` as its per-dialogue ``(numerators, denominators)``, by name.

    Table-1 columns (each a share of dialogues):
      * ``Q-A``: step 1 correct, over all dialogues;
      * ``Q-A1-C1``: step 1 correct, over dialogues that have a follow-up C1;
      * ``Q-A1-C1-A2``: steps 1 and 2 correct, over dialogues with at least 2 answers;
      * ``Q-A1-C1-A2-C2-A3``: steps 1-3 correct, over dialogues with at least 3 answers.
    ``dialogue correct``: every one of a dialogue's (at most 3) answers is the actual one.
    P@1, R@k and MRR pool all steps of all dialogues (MRR counts 0 when the answer was not returned).
    """
    n_steps = [float(r.n_answers) for r in results]
    units = {
        "Q-A": ([float(r.all_correct(1)) for r in results], [1.0 if r.n_answers >= 1 else 0.0 for r in results]),
        "Q-A1-C1": ([float(r.all_correct(1)) for r in results],
                    [1.0 if r.has_followup and r.n_answers >= 1 else 0.0 for r in results]),
        "Q-A1-C1-A2": ([float(r.all_correct(2)) for r in results], [1.0 if r.n_answers >= 2 else 0.0 for r in results]),
        "Q-A1-C1-A2-C2-A3": ([float(r.all_correct(3)) for r in results],
                             [1.0 if r.n_answers >= 3 else 0.0 for r in results]),
        "dialogue correct": ([float(r.all_correct(r.n_answers)) for r in results],
                             [1.0 if r.n_answers else 0.0 for r in results]),
    }
    for i in range(MAX_STEPS):
        units[f"step {i + 1} accuracy"] = ([float(r.steps[i].correct) if r.n_answers > i else 0.0 for r in results],
                                           [1.0 if r.n_answers > i else 0.0 for r in results])
    units["P@1"] = ([float(sum(s.correct for s in r.steps)) for r in results], n_steps)
    units[f"R@{recall_k}"] = ([float(sum(1 for s in r.steps if s.rank is not None and s.rank <= recall_k))
                               for r in results], n_steps)
    units["MRR"] = ([float(sum(1.0 / s.rank for s in r.steps if s.rank is not None)) for r in results], n_steps)
    return units


def compute_metrics(results: Sequence[DialogueResult], *, recall_k: int = 5, n_resamples: int = 1000,
                    seed: int = 13) -> MetricReport:
    """Return the Table-1 columns, per-step accuracy, P@1, R@``recall_k`` and MRR of ``results`` (``metric_units``)."""
    boot = {"n_resamples": n_resamples, "seed": seed}
    units = metric_units(results, recall_k=recall_k)
    metric = {name: _metric(name, num, den, **boot) for name, (num, den) in units.items()}
    primary = _metric("dialogue correct", *units["dialogue correct"], n_steps=[float(r.n_answers) for r in results],
                      **boot)
    return MetricReport(table1={name: metric[name] for name in DIALOGUE_TYPES}, primary=primary,
                        per_step={i + 1: metric[f"step {i + 1} accuracy"] for i in range(MAX_STEPS)},
                        p_at_1=metric["P@1"], recall=metric[f"R@{recall_k}"], mrr=metric["MRR"])


def paired_metrics(a: Sequence[DialogueResult], b: Sequence[DialogueResult], *, recall_k: int = 5,
                   n_resamples: int = 1000, seed: int = 13) -> dict[str, MetricValue]:
    """Return every metric of ``a`` minus the same metric of ``b`` over the dialogues both reconstructed, by name.

    Both runs share each dialogue's denominator (its steps), so the difference of two ratios is the ratio of the
    per-dialogue differences, and its 95% interval is the same cluster bootstrap: a paired bootstrap over dialogues.
    """
    by_id = {r.dialogue_id: r for r in b}
    pairs = [(r, by_id[r.dialogue_id]) for r in a if r.dialogue_id in by_id]
    units_a = metric_units([x for x, _ in pairs], recall_k=recall_k)
    units_b = metric_units([y for _, y in pairs], recall_k=recall_k)
    return {name: _metric(f"{name} difference", [x - y for x, y in zip(num, units_b[name][0])], den,
                          n_resamples=n_resamples, seed=seed)
            for name, (num, den) in units_a.items()}
