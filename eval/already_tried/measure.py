"""Each method's first answer among a question's judged candidates, and the shares that repeat or help.

A method indexes the whole pool and ranks it for the question; its first answer is the best-ranked of the question's
candidates (the candidates are what the judges read). A method that ranks none of them gives no first answer: it
counts as neither repeating nor relevant, and the report says how often that happened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from eval.already_tried.gold import Candidate, GoldSet, TriedQuestion
from eval.methods.base import RankingMethod
from eval.metrics import bootstrap_ratio

#: how deep a method's ranking of the pool is read to find the question's candidates
RANK_DEPTH = 200


@dataclass(frozen=True)
class Share:
    """A share of questions with its 95% bootstrap CI."""

    value: float
    low: float
    high: float
    n: int

    def to_dict(self) -> dict:
        return {"value": round(self.value, 4), "low": round(self.low, 4), "high": round(self.high, 4), "n": self.n}


@dataclass
class MethodResult:
    """One method's first answers (candidate id or None per question) and its shares."""

    method: str
    label: str
    first: list[str | None]
    repeats: Share | None = None
    relevant_new: Share | None = None
    relevant: Share | None = None
    unranked: int = 0


def first_answers(gold: GoldSet, method: RankingMethod, *, progress=None) -> list[str | None]:
    """Return, per question, the id of the candidate ``method`` ranks first (None when it ranks none of them)."""
    out: list[str | None] = []
    for q in gold.questions:
        ranked = method.rank(question=q.question, followups=(), step=0, exclude_ids=(), k=RANK_DEPTH)
        ids = {c.id for c in q.candidates}
        out.append(next((cid for cid, _ in ranked if cid in ids), None))
        if progress is not None:
            progress.update(1)
    return out


def flags(questions: Sequence[TriedQuestion], first: Sequence[str | None], attribute: str) -> np.ndarray:
    """Return 1.0 per question whose first answer has ``attribute`` (``repeats_tried``, ``relevant_and_new``, ...)."""
    out = np.zeros(len(questions))
    for i, (q, cid) in enumerate(zip(questions, first, strict=True)):
        chosen: Candidate | None = next((c for c in q.candidates if c.id == cid), None)
        out[i] = float(bool(chosen is not None and getattr(chosen, attribute)))
    return out


def share(values: np.ndarray, *, seed: int = 13) -> Share:
    value, low, high = bootstrap_ratio(values, np.ones(len(values)), seed=seed)
    return Share(value=value, low=low, high=high, n=len(values))


def score(result: MethodResult, questions: Sequence[TriedQuestion]) -> MethodResult:
    """Fill in ``result``'s shares from its first answers."""
    result.repeats = share(flags(questions, result.first, "repeats_tried"))
    result.relevant_new = share(flags(questions, result.first, "relevant_and_new"))
    result.relevant = share(flags(questions, result.first, "relevant"))
    result.unranked = sum(1 for f in result.first if f is None)
    return result


def paired(a: np.ndarray, b: np.ndarray, *, n_resamples: int = 2000, seed: int = 13) -> dict:
    """Return mean(a) − mean(b) and the ratio mean(a) / mean(b), each with a paired bootstrap 95% CI over questions."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(a), size=(n_resamples, len(a)))
    diffs = a[idx].mean(axis=1) - b[idx].mean(axis=1)
    den = b[idx].mean(axis=1)
    ratios = np.divide(a[idx].mean(axis=1), den, out=np.full(n_resamples, np.nan), where=den > 0)
    d_lo, d_hi = np.percentile(diffs, [2.5, 97.5])
    out = {"diff": round(float(a.mean() - b.mean()), 4), "diff_low": round(float(d_lo), 4), "diff_high": round(float(d_hi), 4)}
    if b.mean() > 0 and np.isfinite(ratios).any():
        r_lo, r_hi = np.nanpercentile(ratios, [2.5, 97.5])
        out |= {"ratio": round(float(a.mean() / b.mean()), 3), "ratio_low": round(float(r_lo), 3),
                "ratio_high": round(float(r_hi), 3)}
    return out


def paired_against(result: MethodResult, base: MethodResult, questions: Sequence[TriedQuestion]) -> dict:
    """Return ``result`` − ``base`` for repeats and relevant-and-new, paired over the same questions."""
    return {name: paired(flags(questions, result.first, attr), flags(questions, base.first, attr))
            for name, attr in (("repeats", "repeats_tried"), ("relevant_new", "relevant_and_new"))}


def subset(questions: Sequence[TriedQuestion], result: MethodResult, keep: Sequence[bool]) -> MethodResult:
    """Return ``result`` restricted to the questions ``keep`` marks, scored again."""
    chosen = [q for q, k in zip(questions, keep, strict=True) if k]
    first = [f for f, k in zip(result.first, keep, strict=True) if k]
    return score(MethodResult(method=result.method, label=result.label, first=first), chosen)
