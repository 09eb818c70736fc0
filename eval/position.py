"""Dialogue position (issue 13, item 4): does step 1 deliver answers that can open a dialogue?

For each dataset (built-in, Twitter, IRC: the source position of every answer is known) this

* fits the engine's ``dtq`` method on the candidate pool (``eval.methods.dtq``, as ``eval.reconstruct`` does);
* scores the follow-up detector stored in the index (``index.position``: ``stands_alone`` False = "reads as a
  follow-up") against the true role: precision and recall of "follow-up";
* ranks every test dialogue's question alone (step 1) under each ``step1_position`` mode and reports the share
  of delivered (top-1) answers that were follow-ups in their source, that read as follow-ups, and step-1
  accuracy (the logged first answer on top).

``python -m eval.position --dataset builtin,twitter,irc --out DIR`` writes ``position.md`` and ``position.json``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from eval.datasets import DatasetUnavailable, EvalSet, PoolAnswer, load_eval_set
from eval.entry import one_line_errors
from parsers.errors import ConfigError, InputError

DATASETS = ("builtin", "twitter", "irc")
MODES = ("off", "standalone", "opening")


@dataclass
class Detector:
    """Confusion counts of "reads as a follow-up" against "was a follow-up"."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0


@dataclass
class StepOne:
    """What step 1 delivered under one mode: counts over the test dialogues with a delivered answer."""

    mode: str
    margin: float = 0.0
    delivered: int = 0
    followups: int = 0
    not_standalone: int = 0
    correct: int = 0
    demoted_steps: int = 0
    #: delivered a follow-up although an opening scored within the margin of the best (the issue's target: 0)
    followups_with_opener: int = 0
    #: delivered a follow-up although the best opening, put first, was confident (calibrated P >= abstain_below)
    followups_with_confident_opener: int = 0


@dataclass
class DatasetPosition:
    dataset: str
    n_dialogues: int = 0
    n_pool: int = 0
    ranker: str = ""
    detector: Detector = field(default_factory=Detector)
    steps: list[StepOne] = field(default_factory=list)
    skipped: str = ""


def true_roles(pool: Sequence[PoolAnswer]) -> dict[str, str]:
    """Return ``id -> opening|followup``: an answer opens its dialogue when no pool answer of it sits earlier."""
    first: dict[str, int] = {}
    for a in pool:
        first[a.dialogue_id] = min(a.position, first.get(a.dialogue_id, a.position))
    return {a.id: "opening" if a.position == first[a.dialogue_id] else "followup" for a in pool}


def measure(eval_set: EvalSet, *, ranker: str | None, modes: Sequence[str], progress: bool,
            margins: Sequence[float] = ()) -> DatasetPosition:
    """Return the detector's accuracy and the step-1 position figures of ``eval_set`` under each mode and
    ``opening_margin`` (``margins``; default the engine's)."""
    from eval.methods.dtq import DTQMethod
    from index.position import position_of

    out = DatasetPosition(dataset=eval_set.name, n_dialogues=len(eval_set.dialogues), n_pool=len(eval_set.pool))
    roles = true_roles(eval_set.pool)
    method = DTQMethod(ranker=ranker, progress=progress)
    method.fit(pool=eval_set.pool)
    try:
        out.ranker = method.resolved_ranker
        selector = method._selector  # the engine the method built; only its config's position mode changes
        stands = {}
        for doc_id, role in roles.items():
            doc = selector.document(doc_id)
            if doc is None:
                continue
            stands[doc_id] = position_of(doc).stands_alone
            _count(out.detector, was=role == "followup", reads=not stands[doc_id])
        base = selector.config
        for mode in modes:
            for margin in (margins or (base.opening_margin,)) if mode != "off" else (base.opening_margin,):
                selector.config = replace(base, step1_position=mode, opening_margin=margin)
                out.steps.append(_step_one(eval_set, selector, mode, roles, stands, margin=margin))
        selector.config = base
    finally:
        method.close()
    return out


def _count(det: Detector, *, was: bool, reads: bool) -> None:
    det.tp += was and reads
    det.fp += reads and not was
    det.fn += was and not reads
    det.tn += not was and not reads


def _step_one(eval_set: EvalSet, selector, mode: str, roles: dict[str, str], stands: dict[str, bool], *,
              margin: float) -> StepOne:
    res = StepOne(mode=mode, margin=margin)
    for d in eval_set.dialogues:
        try:
            outcome = selector.rank_outcome(question=d.question, step=0, size=10)
        except InputError:
            continue
        if not outcome.candidates:
            continue
        top = outcome.candidates[0].document.id
        res.delivered += 1
        res.followups += roles.get(top) == "followup"
        res.not_standalone += not stands.get(top, True)
        res.correct += top == d.answer_ids[0]
        res.demoted_steps += bool(outcome.record.position)
        if roles.get(top) == "followup":
            best = max(c.features.get("score_before_position", c.score) for c in outcome.candidates)
            res.followups_with_opener += any(roles.get(c.document.id) == "opening" and best - c.score <= margin
                                             for c in outcome.candidates)
            res.followups_with_confident_opener += _confident_opening(selector, outcome.candidates, roles)
    return res


def _confident_opening(selector, ranked, roles: dict[str, str]) -> bool:
    """Return True when the best opening of ``ranked``, put first, reaches the engine's abstention threshold."""
    opener = next((c for c in ranked if roles.get(c.document.id) == "opening"), None)
    if opener is None or selector.calibrator is None:
        return False
    value = selector.calibrator.confidence([opener, *(c for c in ranked if c is not opener)])
    return value is not None and value >= selector.config.abstain_below


def render(results: Sequence[DatasetPosition], command: str) -> str:
    """Return the Markdown report of ``results``."""
    lines = ["# Dialogue position at step 1", "", f"Command: `{command}`", "",
             "Follow-up detector (`index.position`, stored per answer): \"reads as a follow-up\" against the "
             "answer's true role in its source dialogue.", "",
             "| dataset | pool | follow-ups | precision | recall |", "|---|---|---|---|---|"]
    for r in results:
        if r.skipped:
            lines.append(f"| {r.dataset} | skipped: {r.skipped} | | | |")
            continue
        d = r.detector
        lines.append(f"| {r.dataset} | {r.n_pool} | {d.tp + d.fn} | {100 * d.precision:.1f} | {100 * d.recall:.1f} |")
    lines += ["", "Step 1 (the question alone), top-1 answer of the engine's `dtq` ranking over the pool; percent of "
              "delivered answers.", "",
              "| dataset | ranker | mode | opening margin | delivered | was a follow-up | ... although an opening was "
              "within the margin | ... although an opening was confident | reads as a follow-up | step-1 acc | "
              "steps reordered |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for s in r.steps:
            n = max(s.delivered, 1)
            margin = "-" if s.mode == "off" else f"{s.margin:g}"
            lines.append(f"| {r.dataset} | {r.ranker} | {s.mode} | {margin} | {s.delivered} | "
                         f"{100 * s.followups / n:.1f} | {s.followups_with_opener} | {s.followups_with_confident_opener} | "
                         f"{100 * s.not_standalone / n:.1f} | "
                         f"{100 * s.correct / n:.1f} | {s.demoted_steps} |")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace, *, command: str) -> int:
    names = [n.strip() for n in args.dataset.split(",") if n.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [n for n in names if n not in DATASETS] + [m for m in modes if m not in MODES]
    if bad or not names or not modes:
        raise ConfigError(f"unknown dataset or mode {', '.join(bad) or '(none given)'}; datasets: "
                          f"{', '.join(DATASETS)}; modes: {', '.join(MODES)}")
    try:
        margins = [float(m) for m in args.margins.split(",") if m.strip()] if args.margins else []
    except ValueError:
        raise ConfigError(f"--margins must be comma-separated numbers, got {args.margins!r}") from None
    results = []
    for name in names:
        try:
            eval_set = load_eval_set(name, data_dir=args.data_dir).limited(args.limit)
        except DatasetUnavailable as exc:
            if len(names) == 1:
                raise  # the one dataset asked for is absent: an error, not a report of nothing
            results.append(DatasetPosition(dataset=name, skipped=str(exc)))
            continue
        results.append(measure(eval_set, ranker=args.ranker, modes=modes, progress=args.progress, margins=margins))
    if all(r.skipped for r in results):
        raise InputError(f"none of the datasets {', '.join(names)} is there: {results[0].skipped}")
    report = render(results, command)
    print(report)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "position.md").write_text(report, encoding="utf-8")
        data = [asdict(r) | {"precision": r.detector.precision, "recall": r.detector.recall} for r in results]
        (out / "position.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None, *, prog: str = "python -m eval.position", command: str | None = None) -> int:
    """Parse ``argv`` and run; return the exit code (2: a one-line error, 130: interrupted)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=",".join(DATASETS), help="comma-separated: builtin, twitter, irc")
    parser.add_argument("--modes", default=",".join(MODES), help="step1_position modes to compare")
    parser.add_argument("--margins", default=None,
                        help="comma-separated opening_margin values to compare (default: the engine's)")
    parser.add_argument("--ranker", default=None, help="auto (default), learned or rules")
    parser.add_argument("--data-dir", type=Path, default=None, help="shared data directory")
    parser.add_argument("--limit", type=int, default=None, help="only the first N test dialogues per dataset")
    parser.add_argument("--out", default=None, help="directory for position.md and position.json")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=False)
    args = parser.parse_args(argv)
    command = command or "python -m eval.position " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    return one_line_errors(lambda: run(args, command=command))


if __name__ == "__main__":
    sys.exit(main())
