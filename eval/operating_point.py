"""Choosing the abstention threshold so that it carries over: ``python -m eval.selective --crossfit``.

The operating point is "answer 80% of the questions that have a right answer in the pool" (``--coverage``).
A threshold read off the very rows the calibrator was fitted on answers that share of those rows, not of new
ones, so here every figure is held out:

* each set's dialogues are split into K seeded folds, grouped by dialogue (``grouped_folds``; on mechanics,
  the learned ranker's training pool, the ranker's own folds, so a held-out question is also unseen by the
  fold model that scored it);
* for each fold, the calibrator and the threshold are fitted on the other folds (``fit_operating``: the
  threshold is the coverage quantile of *cross-fitted* confidences, as a served calibrator meets questions it
  was not fitted on) and measured on the held-out fold: coverage of the answerable questions, false-answer
  rate on the questions without a right answer, precision of the answers given;
* schemes: one set alone (``alone``), all sets pooled (``pooled``), and across sets (fit on A, measure on B,
  ``cross``), with a cluster bootstrap CI over dialogues of every held-out rate.

Later steps (a follow-up ranked with the earlier answers excluded) are rows too (``later_step_rows``), so the
one confidence rule of every answer is checked where it is applied.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from eval.calibrator import fit_calibrator
from eval.metrics import bootstrap_ratio
from eval.open_pool import EngineSystem, OpenPoolRow, open_pool_coin, system_rows
from eval.provenance import provenance, provenance_lines
from eval.report import save_figure
from parsers.errors import InputError
from parsers.files import atomic_write_text, check_out_dir

#: The half-width of the band the held-out coverage should land in around its target.
BAND = 0.05


def grouped_folds(groups: Sequence[str], *, k: int, seed: int) -> list[int]:
    """Return a fold in ``0..k-1`` per row: all rows of one group (dialogue) share a fold, folds differ by at
    most one group in size, and the same seed gives the same folds whatever order the rows come in."""
    if k < 2:
        raise InputError(f"--folds must be at least 2, got {k}")
    distinct = sorted(set(groups))
    random.Random(seed).shuffle(distinct)
    fold_of = {g: i % k for i, g in enumerate(distinct)}
    return [fold_of[g] for g in groups]


def _confidences(calibrator, rows: Sequence) -> np.ndarray:
    # a row without candidates never answers, whatever the threshold
    return np.array([calibrator.probability(r.values) if r.values else -1.0 for r in rows], dtype=float)


def coverage_quantile(confidence: Sequence[float], answerable: Sequence[bool], coverage: float) -> float:
    """Return the highest threshold at which at least ``coverage`` of the answerable rows are answered."""
    conf = np.sort(np.asarray(confidence, dtype=float)[np.asarray(answerable, dtype=bool)])[::-1]
    if not len(conf):
        return float("-inf")
    return float(conf[max(1, int(np.ceil(coverage * len(conf)))) - 1])


def balanced_threshold(confidence: Sequence[float], rows: Sequence, labels: Sequence[str], coverage: float) -> float:
    """Return the threshold whose worst coverage gap over the sets in ``labels`` is smallest: the one number
    that serves every set as evenly as it can when their confidences sit at different heights."""
    conf = np.asarray(confidence, dtype=float)
    candidates = np.unique(conf[conf >= 0])
    if not len(candidates):
        return float("-inf")
    worst = np.zeros(len(candidates))
    for name in sorted(set(labels)):
        mine = np.sort([c for c, r, g in zip(conf, rows, labels) if g == name and r.answerable])
        if len(mine):
            answered = (len(mine) - np.searchsorted(mine, candidates, side="left")) / len(mine)
            worst = np.maximum(worst, np.abs(answered - coverage))
    return float(candidates[int(np.argmin(worst))])


@dataclass
class OperatingFit:
    """A calibrator fitted on some rows and the threshold that answers ``coverage`` of their answerable ones."""

    calibrator: object
    threshold: float
    n: int


def fit_operating(rows: Sequence, folds: Sequence[int], *, ranker: str, coverage: float,
                  balance: Sequence[str] | None = None) -> OperatingFit:
    """Fit the calibrator on all ``rows`` and the threshold on their cross-fitted confidences (over ``folds``).

    The threshold is read off confidences each from a calibrator that did not see the row: what the served
    calibrator gives a new question. With a single fold there is nothing to cross-fit: in-sample confidences.
    ``balance`` (a set name per row): the threshold with the smallest worst-set gap instead of the pooled one.
    """
    calibrator = fit_calibrator(rows, ranker=ranker)
    if len(set(folds)) < 2:
        conf = _confidences(calibrator, rows)
    else:
        conf = np.full(len(rows), -1.0)
        for f in sorted(set(folds)):
            inner = fit_calibrator([r for r, g in zip(rows, folds) if g != f], ranker=ranker)
            idx = [i for i, g in enumerate(folds) if g == f]
            conf[idx] = _confidences(inner, [rows[i] for i in idx])
    threshold = (coverage_quantile(conf, [r.answerable for r in rows], coverage) if balance is None
                 else balanced_threshold(conf, rows, balance, coverage))
    return OperatingFit(calibrator=calibrator, threshold=threshold, n=len(rows))


@dataclass
class HeldOut:
    """What a threshold fitted elsewhere does on some rows: per-row decisions and the rates with their CIs."""

    name: str
    threshold: float | list[float]
    n: int
    coverage: tuple[float, float, float]
    false_answer_rate: tuple[float, float, float]
    precision: tuple[float, float, float]
    folds: list[dict] = field(default_factory=list)
    target: float = 0.8

    @property
    def gap(self) -> float:
        """|held-out coverage - target|, in points of share."""
        return abs(self.coverage[0] - self.target)

    def to_dict(self) -> dict:
        return {"name": self.name, "threshold": self.threshold, "n": self.n, "target": self.target,
                "coverage": list(self.coverage), "coverage_gap": self.gap, "within_band": self.gap <= BAND,
                "false_answer_rate": list(self.false_answer_rate), "precision": list(self.precision),
                "folds": self.folds}


def rates(rows: Sequence, answered: Sequence[bool], *, n_resamples: int, seed: int) -> dict[str, tuple]:
    """Return coverage, false-answer rate and precision of ``answered`` with a bootstrap CI over dialogues."""
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(r.dialogue_id, []).append(i)

    def ratio(num, den) -> tuple[float, float, float]:
        nums = [sum(num(i) for i in idx) for idx in groups.values()]
        dens = [sum(den(i) for i in idx) for idx in groups.values()]
        return bootstrap_ratio(nums, dens, n_resamples=n_resamples, seed=seed)

    ok = [bool(a) and r.top_id is not None for r, a in zip(rows, answered)]
    return {"coverage": ratio(lambda i: ok[i] and rows[i].answerable, lambda i: rows[i].answerable),
            "false_answer_rate": ratio(lambda i: ok[i] and not rows[i].answerable, lambda i: not rows[i].answerable),
            "precision": ratio(lambda i: ok[i] and rows[i].correct, lambda i: ok[i])}


def fold_figures(rows: Sequence, answered: Sequence[bool], threshold: float, fold: int) -> dict:
    """Return one held-out fold's counts and rates (no CI: the folds themselves show the spread)."""
    answerable = [a and r.top_id is not None for r, a in zip(rows, answered) if r.answerable]
    absent = [a and r.top_id is not None for r, a in zip(rows, answered) if not r.answerable]
    given = [r.correct for r, a in zip(rows, answered) if a and r.top_id is not None]
    return {"fold": fold, "threshold": threshold, "n": len(rows), "answerable": len(answerable),
            "coverage": float(np.mean(answerable)) if answerable else float("nan"),
            "false_answer_rate": float(np.mean(absent)) if absent else float("nan"),
            "precision": float(np.mean(given)) if given else float("nan")}


def crossfit(rows: Sequence, folds: Sequence[int], *, ranker: str, coverage: float, name: str,
             n_resamples: int = 1000, seed: int = 13, measure: Sequence[bool] | None = None,
             fit_on: Sequence[bool] | None = None, balance: Sequence[str] | None = None) -> HeldOut:
    """Fit on all folds but one, measure on that one, for every fold; return the held-out figures.

    ``measure`` (default: every row) picks the rows the figures are about (a set within pooled rows, or later
    steps only); ``fit_on`` (default: every row) the rows of the other folds that are fitting data; ``balance``
    as in ``fit_operating``.
    """
    measure = [True] * len(rows) if measure is None else list(measure)
    fit_on = [True] * len(rows) if fit_on is None else list(fit_on)
    answered = [False] * len(rows)
    per_fold, thresholds = [], []
    for f in sorted(set(folds)):
        train = [i for i, g in enumerate(folds) if g != f and fit_on[i]]
        test = [i for i, g in enumerate(folds) if g == f and measure[i]]
        if not test:
            continue
        fit = fit_operating([rows[i] for i in train], [folds[i] for i in train], ranker=ranker, coverage=coverage,
                            balance=None if balance is None else [balance[i] for i in train])
        conf = _confidences(fit.calibrator, [rows[i] for i in test])
        for i, c in zip(test, conf):
            answered[i] = bool(c >= fit.threshold)
        thresholds.append(fit.threshold)
        per_fold.append(fold_figures([rows[i] for i in test], [answered[i] for i in test], fit.threshold, f))
    keep = [i for i in range(len(rows)) if measure[i]]
    figures = rates([rows[i] for i in keep], [answered[i] for i in keep], n_resamples=n_resamples, seed=seed)
    return HeldOut(name=name, threshold=thresholds, n=len(keep), folds=per_fold, target=coverage, **figures)


def transfer(fit_rows: Sequence, fit_folds: Sequence[int], test_rows: Sequence, *, ranker: str, coverage: float,
             name: str, n_resamples: int = 1000, seed: int = 13) -> HeldOut:
    """Fit the calibrator and threshold on ``fit_rows`` (cross-fitted over ``fit_folds``) and measure on
    ``test_rows``, which share no dialogue with them (another set)."""
    fit = fit_operating(fit_rows, fit_folds, ranker=ranker, coverage=coverage)
    answered = [bool(c >= fit.threshold) for c in _confidences(fit.calibrator, test_rows)]
    figures = rates(test_rows, answered, n_resamples=n_resamples, seed=seed)
    return HeldOut(name=name, threshold=fit.threshold, n=len(test_rows), target=coverage, **figures)


def at_threshold(rows: Sequence, confidence: Sequence[float], threshold: float, *, coverage: float, name: str,
                 n_resamples: int = 1000, seed: int = 13) -> HeldOut:
    """Return what a fixed threshold (the shipped one) does on rows with given confidences."""
    answered = [c >= threshold for c in confidence]
    return HeldOut(name=name, threshold=threshold, n=len(rows), target=coverage,
                   **rates(rows, answered, n_resamples=n_resamples, seed=seed))


# --- the rows -----------------------------------------------------------------------------------------------

def later_step_rows(system, eval_set, *, seed: int, progress: bool = False) -> list:
    """Return one open-pool row per later step of every dialogue: the answer after the i-th follow-up.

    The step is ranked as the engine ranks it in a session that went as logged (the question, the follow-ups so
    far, the earlier answers delivered and excluded); a seeded coin per step also excludes the step's own
    answer for about half of the steps, so "no right answer here" is in later steps too.
    """
    from tqdm import tqdm

    from dtdialog.selection.confidence import step_features

    keys = [(d, i) for d in eval_set.dialogues for i in range(1, min(len(d.answer_ids), len(d.followups) + 1))]
    removed = open_pool_coin([f"{d.id}#{i}" for d, i in keys], seed=seed)
    rows = []
    for d, i in tqdm(keys, desc=f"{eval_set.name}/later steps", unit="step", file=sys.stderr, disable=not progress):
        gold, earlier = d.answer_ids[i], list(d.answer_ids[:i])
        answerable = f"{d.id}#{i}" not in removed
        try:
            plan = system.method._plan(d.question)
            ranked = system.method._selector.rank(question=plan, step=i, followups=list(d.followups[:i]),
                                                  exclude_ids=earlier + ([] if answerable else [gold]), size=100,
                                                  context_ids=earlier)
        except InputError:
            ranked = []
        values = step_features(ranked, system.ranker) or {}
        top = ranked[0] if ranked else None
        if top is not None:
            values = {**{k: float(v) for k, v in top.features.items() if isinstance(v, (int, float))}, **values}
        rows.append(OpenPoolRow(dialogue_id=d.id, question=d.followups[i - 1], answerable=answerable,
                                correct=answerable and top is not None and top.document.id == gold,
                                top_id=top.document.id if top else None, score=float(top.score) if top else 0.0,
                                values=values, step=i))
    return rows


@dataclass
class SetRows:
    """One set's rows under the open pool: first answers and later ones, each with its dialogue's fold."""

    name: str
    ranker: str
    model_name: str
    first: list
    first_folds: list[int]
    later: list = field(default_factory=list)
    later_folds: list[int] = field(default_factory=list)


def set_rows(eval_set, *, k: int, seed: int, ranker: str | None, rows_dir, reuse: bool, progress: bool,
             use_tree: bool = True, parser: str | None = None) -> SetRows:
    """Return a set's scored rows (ranked now, or read from ``rows_dir`` with ``reuse``) and their folds.

    On mechanics, the learned ranker's training pool, the folds are the ranker's own; elsewhere ``k`` seeded
    folds of the dialogues. ``use_tree=False``: the engine without the discourse tree ranks.
    """
    import json

    removed = open_pool_coin([d.id for d in eval_set.dialogues], seed=seed)
    system = "dtq" if use_tree else "dtq-no-dt"
    cache = rows_dir / f"rows_{eval_set.name}_{system}.json"
    first, _ = system_rows(system, eval_set, removed=removed, progress=progress, ranker=ranker, cache=cache,
                           reuse=reuse, parser=parser)
    info = json.loads(cache.read_text(encoding="utf-8"))["engine"]
    if eval_set.name == "mechanics" and info["has_folds"]:  # the ranker's training pool: keep its folds
        folds = [int(f) for f in info["folds"]]
    else:
        folds = grouped_folds([r.dialogue_id for r in first], k=k, seed=seed)
    out = SetRows(name=eval_set.name, ranker=info["ranker"], model_name=info["model_name"], first=first,
                  first_folds=folds)
    if not any(len(d.answer_ids) > 1 and d.followups for d in eval_set.dialogues):
        return out
    later_cache = rows_dir / f"rows_{eval_set.name}_{system}_later.json"
    if reuse and later_cache.is_file():
        out.later = [OpenPoolRow(**r) for r in json.loads(later_cache.read_text(encoding="utf-8"))["rows"]]
    else:
        out.later = _rank_later(eval_set, ranker=ranker, seed=seed, progress=progress, use_tree=use_tree,
                                parser=parser)
        atomic_write_text(later_cache, json.dumps({"rows": [r.__dict__ for r in out.later]}) + "\n")
    fold_of = dict(zip((r.dialogue_id for r in first), folds))
    out.later_folds = [fold_of[r.dialogue_id] for r in out.later]
    return out


def _rank_later(eval_set, *, ranker: str | None, seed: int, progress: bool, use_tree: bool = True,
                parser: str | None = None) -> list:
    system = EngineSystem(ranker=ranker, progress=progress, use_tree=use_tree, parser=parser)
    try:
        system.fit(eval_set)
        return later_step_rows(system, eval_set, seed=seed, progress=progress)
    finally:
        system.close()


def unseen_rows(eval_set, questions: Sequence[str], *, ranker: str | None, rows_dir, reuse: bool,
                progress: bool, parser: str | None = None) -> list:
    """Return one row per real car question with no logged answer (Reddit posts), ranked against the set's pool
    as a served engine ranks a new question; whether a right answer is there is unknown."""
    import json

    cache = rows_dir / f"rows_{eval_set.name}_unseen.json"
    if reuse and cache.is_file():
        return [OpenPoolRow(**r) for r in json.loads(cache.read_text(encoding="utf-8"))["rows"]]
    system = EngineSystem(ranker=ranker, progress=progress, parser=parser)
    try:
        system.fit(eval_set)
        rows = []
        for i, q in enumerate(questions):
            top_id, score, values = system.top(q, ())
            rows.append(OpenPoolRow(dialogue_id=f"unseen-{i}", question=q, answerable=False, correct=False,
                                    top_id=top_id, score=score, values=values))
    finally:
        system.close()
    atomic_write_text(cache, json.dumps({"rows": [r.__dict__ for r in rows]}) + "\n")
    return rows


def unseen_figures(sets: Sequence[SetRows], unseen: dict[str, list], *, threshold: float) -> list[dict]:
    """Return the share of unseen car questions the shipped calibrator and threshold answer, per pool."""
    from dtdialog.selection.confidence import load_calibrator

    calibrator = load_calibrator(sets[0].ranker, model_name=sets[0].model_name)
    if calibrator is None:
        return []
    out = []
    for name, rows in unseen.items():
        conf = _confidences(calibrator, rows)
        out.append({"pool": name, "n": len(rows), "threshold": threshold,
                    "answered": float(np.mean([c >= threshold and r.top_id is not None for c, r in zip(conf, rows)])),
                    "median_confidence": float(np.median(conf)) if len(conf) else float("nan")})
    return out


# --- the schemes --------------------------------------------------------------------------------------------

@dataclass
class Table:
    """Every set's rows side by side: ``set_of`` and ``step_of`` say where a row comes from."""

    rows: list
    folds: list[int]
    set_of: list[str]
    step_of: list[int]

    @classmethod
    def of(cls, sets: Sequence[SetRows], *, later: bool) -> Table:
        t = cls([], [], [], [])
        for s in sets:
            for rows, folds in ((s.first, s.first_folds), (s.later, s.later_folds) if later else ((), ())):
                t.rows += rows
                t.folds += folds
                t.set_of += [s.name] * len(rows)
                t.step_of += [r.step for r in rows]
        return t

    def mask(self, *, name: str | None = None, later: bool | None = None, exclude: str | None = None) -> list[bool]:
        return [(name is None or s == name) and (exclude is None or s != exclude)
                and (later is None or (st > 0) == later) for s, st in zip(self.set_of, self.step_of)]

    def take(self, mask: Sequence[bool]) -> tuple[list, list[int]]:
        return [r for r, m in zip(self.rows, mask) if m], [f for f, m in zip(self.folds, mask) if m]


def first_step_schemes(sets: Sequence[SetRows], *, coverage: float, n_resamples: int, seed: int) -> list[HeldOut]:
    """Return the held-out figures of first answers: each set alone, all pooled, and across sets."""
    t = Table.of(sets, later=False)
    kw = {"ranker": sets[0].ranker, "coverage": coverage, "n_resamples": n_resamples, "seed": seed}
    out = []
    for s in sets:
        out.append(crossfit(s.first, s.first_folds, name=f"alone | {s.name}", **kw))
    if len(sets) > 1:
        for s in sets:
            out.append(crossfit(t.rows, t.folds, name=f"pooled | {s.name}", measure=t.mask(name=s.name), **kw))
        out.append(crossfit(t.rows, t.folds, name="pooled | all", **kw))
        for s in sets:
            out.append(crossfit(t.rows, t.folds, name=f"balanced | {s.name}", measure=t.mask(name=s.name),
                                balance=t.set_of, **kw))
    for a in sets:
        for b in sets:
            if a is not b:
                out.append(transfer(a.first, a.first_folds, b.first, name=f"{a.name} -> {b.name}", **kw))
    if len(sets) > 2:
        for b in sets:
            rows, folds = t.take(t.mask(exclude=b.name))
            out.append(transfer(rows, folds, b.first, name=f"others -> {b.name}", **kw))
    return out


def later_step_schemes(sets: Sequence[SetRows], *, coverage: float, n_resamples: int,
                       seed: int) -> list[HeldOut]:
    """Return the held-out figures of later answers: with the operating point fitted on first answers only,
    and fitted on every step (dialogue-grouped folds, so a dialogue's steps are never split)."""
    t = Table.of(sets, later=True)
    kw = {"ranker": sets[0].ranker, "coverage": coverage, "n_resamples": n_resamples, "seed": seed}
    out = []
    if not any(s.later for s in sets):
        return []
    for s in sets:
        if s.later:
            out.append(crossfit(t.rows, t.folds, name=f"first-step fit | {s.name} later",
                                fit_on=t.mask(later=False), measure=t.mask(name=s.name, later=True), **kw))
        for later in (False, True) if s.later else (False,):
            where = f"{s.name} {'later' if later else 'first'}"
            out.append(crossfit(t.rows, t.folds, name=f"all-steps fit | {where}",
                                measure=t.mask(name=s.name, later=later), **kw))
    out.append(crossfit(t.rows, t.folds, name="all-steps fit | all later", measure=t.mask(later=True), **kw))
    # one number for first and later answers of every set, as evenly as it can
    parts = [f"{s} {'later' if st else 'first'}" for s, st in zip(t.set_of, t.step_of)]
    for part in dict.fromkeys(parts):
        out.append(crossfit(t.rows, t.folds, name=f"all-steps balanced | {part}",
                            measure=[p == part for p in parts], balance=parts, **kw))
    return out


def shipped_figures(sets: Sequence[SetRows], *, threshold: float, coverage: float, n_resamples: int,
                    seed: int) -> list[HeldOut]:
    """Return what the shipped calibrator and threshold do on each set (on mechanics the calibrator was fitted
    on these very rows, so that one is in-sample)."""
    from dtdialog.selection.confidence import load_calibrator

    calibrator = load_calibrator(sets[0].ranker, model_name=sets[0].model_name)
    if calibrator is None:
        return []
    out = []
    for s in sets:
        for rows, label in ((s.first, "first"), (s.later, "later")):
            if rows:
                conf = _confidences(calibrator, rows)
                seen = " (in-sample)" if s.name in str(calibrator.manifest.get("fitted_on", "")) else ""
                out.append(at_threshold(rows, conf, threshold, coverage=coverage,
                                        name=f"shipped | {s.name} {label}{seen}", n_resamples=n_resamples, seed=seed))
    return out


def fitted_thresholds(sets: Sequence[SetRows], *, coverage: float) -> dict[str, float]:
    """Return the threshold each scheme fits on all of its data: the candidates to ship."""
    kw = {"ranker": sets[0].ranker, "coverage": coverage}
    out = {f"alone | {s.name}": fit_operating(s.first, s.first_folds, **kw).threshold for s in sets}
    t = Table.of(sets, later=False)
    if len(sets) > 1:
        out["pooled | first steps"] = fit_operating(t.rows, t.folds, **kw).threshold
        out["balanced | first steps"] = fit_operating(t.rows, t.folds, balance=t.set_of, **kw).threshold
    t = Table.of(sets, later=True)
    if any(s.later for s in sets):
        out["pooled | all steps"] = fit_operating(t.rows, t.folds, **kw).threshold
        parts = [f"{s} {'later' if st else 'first'}" for s, st in zip(t.set_of, t.step_of)]
        out["balanced | all steps"] = fit_operating(t.rows, t.folds, balance=parts, **kw).threshold
    return out


# --- the report ---------------------------------------------------------------------------------------------

def _ci(v: Sequence[float]) -> str:
    return "n/a" if v[0] != v[0] else f"{v[0]:.1%} [{v[1]:.1%}, {v[2]:.1%}]"


def _threshold_text(t: float | list[float]) -> str:
    return ", ".join(f"{x:.3f}" for x in t) if isinstance(t, list) else f"{t:.3f}"


def markdown(result: dict, *, command: str) -> str:
    """Return the Markdown report of a cross-fit run."""
    cov, band = result["coverage"], BAND
    lines = ["# Operating point held out (open-pool protocol)", "", f"Command: `{command}`", "",
             *(provenance_lines(result["provenance"]) if "provenance" in result else []), "",
             f"Target: {cov:.0%} of the questions with a right answer in the pool are answered; band ±{band:.0%}. "
             f"Every figure is measured on rows the calibrator and threshold were not fitted on ({result['folds']} "
             "seeded dialogue folds; mechanics: the ranker's 5 folds). The threshold is the coverage quantile of "
             "cross-fitted confidences of the fitting rows. CIs: 95% bootstrap over dialogues.", "",
             "Rows: " + ", ".join(f"{s['name']} {s['first']} first + {s['later']} later answers"
                                  for s in result["sets"]), ""]
    for title, key in (("First answers", "first"),
                       ("First and later answers (after a follow-up): one rule for every answer", "later"),
                       ("The shipped calibrator and threshold (in-sample where the calibrator was fitted on the set)",
                        "shipped")):
        if not result[key]:
            continue
        lines += [f"## {title}", "", "| fitted on \\| measured on | threshold | held-out coverage [CI] | coverage per "
                  "fold | \\|coverage - target\\| | within band | false-answer rate (no right answer) [CI] | "
                  "precision [CI] | n |", "|---|---|---|---|---|---|---|---|---|"]
        for h in result[key]:
            per_fold = ", ".join("-" if f["coverage"] != f["coverage"] else f"{f['coverage']:.0%}"
                                 for f in h["folds"]) or "-"
            lines.append(f"| {h['name']} | {_threshold_text(h['threshold'])} | {_ci(h['coverage'])} | {per_fold} | "
                         f"{100 * h['coverage_gap']:.1f} pts | {'yes' if h['within_band'] else 'no'} | "
                         f"{_ci(h['false_answer_rate'])} | {_ci(h['precision'])} | {h['n']} |")
        lines.append("")
    if result.get("unseen"):
        lines += ["## Unseen real car questions (Reddit posts, no logged answer) against a car pool", "",
                  "Whether a right answer is in the pool is not known: the share answered is an upper bound of the "
                  "answers that can be right.", "",
                  "| pool | questions | threshold | answered | median confidence |", "|---|---|---|---|---|"]
        lines += [f"| {u['pool']} | {u['n']} | {u['threshold']:.3f} | {u['answered']:.1%} | "
                  f"{u['median_confidence']:.3f} |" for u in result["unseen"]]
        lines.append("")
    lines += ["## Thresholds fitted on all of each scheme's rows", "", "| scheme | threshold |", "|---|---|"]
    lines += [f"| {k} | {v:.3f} |" for k, v in result["fitted_thresholds"].items()]
    return "\n".join(lines) + "\n"


def plot(path, result: dict):
    """Draw held-out coverage per fold (dots) and overall with its CI (bar) against the target band."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    items = result["first"] + result["later"] + result["shipped"]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.42 * len(items) + 2), 4.8))
    cov = result["coverage"]
    ax.axhspan(cov - BAND, cov + BAND, color="C2", alpha=0.15, label=f"target {cov:.0%} ± {BAND:.0%}")
    ax.axhline(cov, color="C2", lw=1)
    for x, h in enumerate(items):
        ax.plot([x] * len(h["folds"]), [f["coverage"] for f in h["folds"]], "o", color="C0", alpha=0.5, ms=4)
        c = h["coverage"]
        ax.errorbar([x], [c[0]], yerr=[[c[0] - c[1]], [c[2] - c[0]]], fmt="s", color="C3" if not h["within_band"]
                    else "k", capsize=3)
    ax.set_xticks(range(len(items)))
    ax.set_xticklabels([h["name"] for h in items], rotation=75, ha="right", fontsize=7)
    ax.set_ylabel("held-out coverage of answerable questions")
    ax.set_ylim(0, 1.02)
    ax.set_title("dots: one held-out fold; squares: all folds, 95% CI (red: outside the band)", fontsize=9)
    ax.legend(loc="lower left", fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def run_crossfit(eval_sets: Sequence, *, out, command: str, k: int = 5, seed: int = 13, coverage: float = 0.8,
                 n_resamples: int = 1000, ranker: str | None = None, reuse: bool = False,
                 progress: bool = True, unseen: Sequence[str] = (), parser: str | None = None) -> list:
    """Score every set, run every scheme, write ``crossfit.json``, ``crossfit.md`` and ``crossfit.png`` to
    ``out``; return the written paths. ``unseen``: real car questions without answers, ranked against each car
    set's pool (mechanics, builtin) to see how many the shipped operating point answers."""
    import json

    from dtdialog.setup.engine_config import EngineConfig

    rows_dir = check_out_dir(check_out_dir(out) / "rows")
    rows_dir.mkdir(parents=True, exist_ok=True)
    sets = [set_rows(e, k=k, seed=seed, ranker=ranker, rows_dir=rows_dir, reuse=reuse, progress=progress,
                     parser=parser) for e in eval_sets]
    if len({s.ranker for s in sets}) > 1:
        raise InputError("the sets were scored by different rankers; give --ranker")
    kw = {"coverage": coverage, "n_resamples": n_resamples, "seed": seed}
    unseen_rows_of = {e.name: unseen_rows(e, unseen, ranker=ranker, rows_dir=rows_dir, reuse=reuse, progress=progress,
                                          parser=parser)
                      for e in eval_sets if unseen and e.name in ("mechanics", "builtin")}
    shipped = EngineConfig().abstention.abstain_below
    result = {"coverage": coverage, "band": BAND, "folds": k, "seed": seed, "ranker": sets[0].ranker,
              "command": command, "provenance": provenance(eval_sets, parser=parser, ranker=sets[0].ranker),
              "sets": [{"name": s.name, "first": len(s.first), "later": len(s.later)} for s in sets],
              "first": [h.to_dict() for h in first_step_schemes(sets, **kw)],
              "later": [h.to_dict() for h in later_step_schemes(sets, **kw)],
              "shipped": [h.to_dict() for h in shipped_figures(sets, threshold=shipped, **kw)],
              "fitted_thresholds": fitted_thresholds(sets, coverage=coverage),
              "unseen": unseen_figures(sets, unseen_rows_of, threshold=shipped)}
    atomic_write_text(out / "crossfit.json", json.dumps(result, indent=2) + "\n")
    atomic_write_text(out / "crossfit.md", markdown(result, command=command))
    written = [out / "crossfit.md", out / "crossfit.json"]
    png = plot(out / "crossfit.png", result)
    return written + ([png] if png else [])
