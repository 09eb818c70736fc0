"""Selective answering in the open-pool protocol: ``python -m eval.selective --dataset mechanics``.

Every reconstruction benchmark puts the right answer in the pool, so a wrong answer where no right one
exists is invisible there. Here a seeded coin removes the gold first answer from the pool for half of
the questions (``open_pool_coin``); each system answers with its top candidate and a confidence, and
answers only when the confidence reaches a threshold. Reported per dataset and system:

* answered-right, answered-wrong and abstained at the operating threshold (the one where >= 80% of the
  answerable questions are answered; ``--coverage``), and the false-answer rate on the questions with no
  right answer there;
* the risk-coverage curve (``risk_coverage.png``) and its area (AURC; lower is better), with a paired
  bootstrap CI of the difference to each anchor; AUROC of the confidence for answerable vs not.

Systems: ``dtq`` (the engine with its calibrated confidence, ``dtdialog.selection.confidence``; on mechanics, the
ranker's training pool, scores are out-of-fold and the calibrator is cross-fitted over the same folds),
and the anchors in the same run: ``dense`` (MiniLM cosine of the top answer as its score) and ``bm25``
(the top BM25 score), their thresholds fitted the same way. Only the first answer of each dialogue is
asked for (the question alone).

A team's own logs: ``--data FILE --format mechanics|twitter|irc|jsonl|csv`` (the whole file is both the
questions and the pool; a question whose dialogue has no answer is skipped).

``--crossfit`` holds the operating point out instead (``eval.operating_point``): the calibrator and threshold
are fitted on K-1 dialogue folds and measured on the held-out one, per set, pooled, across sets and on later
answers (``crossfit.md``, ``crossfit.json``, ``crossfit.png``).
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from dtdialog.setup.engine_args import POOL_ENGINE_OPTIONS, add_engine_arguments
from eval.data_args import add_data_arguments, check_data_arguments, load_data_file, load_dataset
from eval.datasets import DATASETS, DatasetUnavailable, EvalSet
from eval.entry import one_line_errors
from eval.open_pool import OpenPoolRow, open_pool_coin, system_rows
from eval.provenance import provenance, provenance_lines
from eval.report import save_figure
from parsers.errors import ConfigError, DTDialogError, InputError, ModelNotAvailableError
from parsers.files import atomic_write_text, check_out_dir

DEFAULT_OUT = Path("runs") / "selective"
SYSTEMS = ("dtq", "dense", "bm25", "dtq-no-dt")
#: what dtq is compared with, paired on the same questions: the search anchors, and the engine without the tree
ANCHORS = ("dense", "bm25", "dtq-no-dt")


# --- the measures -----------------------------------------------------------------------------------------

def risk_coverage(confidence: Sequence[float], correct: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(coverage, risk)``: answering the k most confident questions, k = 1..n, and the share wrong.

    Ties are broken pessimistically (wrong answers first), so a constant confidence earns no credit.
    """
    conf = np.asarray(confidence, dtype=float)
    ok = np.asarray(correct, dtype=bool)
    n = len(conf)
    if n == 0:
        return np.zeros(0), np.zeros(0)
    order = np.lexsort((ok, -conf))  # by confidence descending, wrong before right on ties
    wrong = np.cumsum(~ok[order])
    k = np.arange(1, n + 1)
    return k / n, wrong / k


def aurc(confidence: Sequence[float], correct: Sequence[bool]) -> float:
    """Return the area under the risk-coverage curve (the mean risk over k = 1..n answered)."""
    _, risk = risk_coverage(confidence, correct)
    return float(risk.mean()) if len(risk) else float("nan")


def auroc(scores: Sequence[float], positive: Sequence[bool]) -> float:
    """Return the probability that a random positive outscores a random negative (ties count half)."""
    s = np.asarray(scores, dtype=float)
    p = np.asarray(positive, dtype=bool)
    pos, neg = s[p], s[~p]
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def coverage_threshold(rows: Sequence[OpenPoolRow], coverage: float) -> float:
    """Return the highest threshold at which at least ``coverage`` of the answerable questions are answered."""
    conf = np.sort([r.confidence for r in rows if r.answerable])[::-1]
    if not len(conf):
        return float("-inf")
    k = max(1, int(np.ceil(coverage * len(conf))))
    return float(conf[k - 1])


@dataclass
class Operating:
    """What a user meets at one threshold."""

    threshold: float
    answered_right: int
    answered_wrong: int
    abstained: int
    answerable_coverage: float
    false_answer_rate: float

    @classmethod
    def at(cls, rows: Sequence[OpenPoolRow], threshold: float) -> Operating:
        answered = [r for r in rows if r.confidence >= threshold and r.top_id is not None]
        answerable = [r for r in rows if r.answerable]
        unanswerable = [r for r in rows if not r.answerable]
        return cls(threshold=threshold, answered_right=sum(r.correct for r in answered),
                   answered_wrong=sum(not r.correct for r in answered), abstained=len(rows) - len(answered),
                   answerable_coverage=sum(r.answerable for r in answered) / max(1, len(answerable)),
                   false_answer_rate=sum(not r.answerable for r in answered) / max(1, len(unanswerable)))


def paired_aurc_ci(a: Sequence[OpenPoolRow], b: Sequence[OpenPoolRow], *, n_resamples: int,
                   seed: int) -> tuple[float, float, float]:
    """Return ``(AURC(a) - AURC(b), lo, hi)``: a paired bootstrap over questions (95% percentile CI)."""
    ca, oka = np.array([r.confidence for r in a]), np.array([r.correct for r in a])
    cb, okb = np.array([r.confidence for r in b]), np.array([r.correct for r in b])
    diff = aurc(ca, oka) - aurc(cb, okb)
    rng = np.random.default_rng(seed)
    n = len(a)
    boots = []
    for _ in range(n_resamples):
        idx = rng.integers(0, n, n)
        boots.append(aurc(ca[idx], oka[idx]) - aurc(cb[idx], okb[idx]))
    lo, hi = np.percentile(boots, [2.5, 97.5]) if boots else (diff, diff)
    return float(diff), float(lo), float(hi)


# --- the run ----------------------------------------------------------------------------------------------

def run_dataset(eval_set: EvalSet, systems: Sequence[str], *, seed: int, coverage: float, n_resamples: int,
                progress: bool, ranker: str | None, rows_dir: Path | None = None, reuse: bool = False,
                parser: str | None = None) -> dict:
    """Run the protocol for ``systems`` on ``eval_set``; return the summary and every system's rows.

    Each system's scored rows are kept in ``rows_dir`` (``rows_<dataset>_<system>.json``); with ``reuse`` a kept
    file is read instead of ranking again (the confidence is always computed afresh from the rows).
    """
    removed = open_pool_coin([d.id for d in eval_set.dialogues], seed=seed)
    out: dict = {"dataset": eval_set.name, "n": len(eval_set.dialogues), "n_pool": len(eval_set.pool),
                 "unanswerable": len(removed), "systems": {}, "rows": {}}
    for name in systems:
        try:
            rows, how = system_rows(name, eval_set, removed=removed, progress=progress, ranker=ranker,
                                    cache=rows_dir / f"rows_{eval_set.name}_{name}.json" if rows_dir else None,
                                    reuse=reuse, parser=parser)
        except (ModelNotAvailableError, DTDialogError, ImportError) as exc:
            out["systems"][name] = {"skipped": str(exc)}
            print(f"{eval_set.name}/{name}: skipped: {exc}", file=sys.stderr)
            continue
        out["rows"][name] = rows
        out["systems"][name] = summarise(rows, coverage=coverage, how=how)
        if name == "dtq" and rows_dir is not None:  # the ranker its engine resolved to, kept with its rows
            out["ranker"] = json.loads((rows_dir / f"rows_{eval_set.name}_{name}.json").read_text(
                encoding="utf-8"))["engine"]["ranker"]
    _compare(out, n_resamples=n_resamples, seed=seed)
    return out


def summarise(rows: Sequence[OpenPoolRow], *, coverage: float, how: str) -> dict:
    conf = [r.confidence for r in rows]
    op = Operating.at(rows, coverage_threshold(rows, coverage))
    return {"confidence": how, "aurc": aurc(conf, [r.correct for r in rows]),
            "auroc_answerable": auroc(conf, [r.answerable for r in rows]),
            "accuracy_answerable": sum(r.correct for r in rows) / max(1, sum(r.answerable for r in rows)),
            "operating": asdict(op)}


def paired_accuracy_ci(a: Sequence[OpenPoolRow], b: Sequence[OpenPoolRow], *, n_resamples: int,
                       seed: int) -> tuple[float, float, float]:
    """Return ``(accuracy(a) - accuracy(b), lo, hi)`` on the answerable questions: a paired bootstrap over questions."""
    from eval.metrics import bootstrap_ratio

    other = {r.dialogue_id: r for r in b}
    pairs = [(r, other[r.dialogue_id]) for r in a if r.answerable and r.dialogue_id in other]
    return bootstrap_ratio([float(x.correct) - float(y.correct) for x, y in pairs], [1.0] * len(pairs),
                           n_resamples=n_resamples, seed=seed)


def _compare(out: dict, *, n_resamples: int, seed: int) -> None:
    rows = out["rows"]
    if "dtq" not in rows:
        return
    for anchor in ANCHORS:
        if anchor in rows:
            diff, lo, hi = paired_aurc_ci(rows["dtq"], rows[anchor], n_resamples=n_resamples, seed=seed)
            ratio = out["systems"]["dtq"]["aurc"] / max(1e-12, out["systems"][anchor]["aurc"])
            acc, acc_lo, acc_hi = paired_accuracy_ci(rows["dtq"], rows[anchor], n_resamples=n_resamples, seed=seed)
            out["systems"]["dtq"][f"vs_{anchor}"] = {"diff": diff, "lo": lo, "hi": hi, "ratio": ratio,
                                                     "accuracy_diff": acc, "accuracy_lo": acc_lo,
                                                     "accuracy_hi": acc_hi}


def plot_risk_coverage(path: Path, result: dict) -> Path | None:
    """Draw every system's risk-coverage curve of one dataset; return the path (None without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for name, rows in result["rows"].items():
        cov, risk = risk_coverage([r.confidence for r in rows], [r.correct for r in rows])
        ax.plot(cov, risk, label=f"{name} (AURC {result['systems'][name]['aurc']:.3f})")
    ax.set_xlabel("coverage (share of questions answered)")
    ax.set_ylabel("risk (share of answers that are wrong)")
    ax.set_title(f"{result['dataset']}: open pool, gold removed for {result['unanswerable']}/{result['n']}")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def markdown(results: Sequence[dict], *, command: str, seed: int, coverage: float, header: Sequence[str] = ()) -> str:
    lines = ["# Selective answering (open-pool protocol)", "", f"Command: `{command}`", "", *header, "",
             f"A seeded coin (seed {seed}) removes the gold first answer from the pool for about half of the "
             f"questions. Operating threshold: the highest at which >= {coverage:.0%} of the answerable questions "
             "are answered. AURC: area under the risk-coverage curve (lower is better); CI: paired bootstrap "
             "of dtq - anchor over the same questions (dtq-no-dt: the same engine without the discourse tree).", ""]
    for res in results:
        if res.get("skipped"):
            lines += [f"## {res['dataset']}", "", f"skipped: {res['skipped']}", ""]
            continue
        lines += [f"## {res['dataset']}", "", f"{res['n']} questions, {res['n_pool']} pool answers, gold removed "
                  f"for {res['unanswerable']}.", "",
                  "| system | confidence | AURC | AUROC (answerable?) | acc. answerable | threshold | answered right "
                  "| answered wrong | abstained | coverage (answerable) | false-answer rate (no right answer) |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for name, s in res["systems"].items():
            if "skipped" in s:
                lines.append(f"| {name} | skipped: {s['skipped']} |" + " |" * 9)
                continue
            op = s["operating"]
            lines.append(f"| {name} | {s['confidence']} | {s['aurc']:.3f} | {s['auroc_answerable']:.3f} | "
                         f"{s['accuracy_answerable']:.1%} | {op['threshold']:.3f} | {op['answered_right']} | "
                         f"{op['answered_wrong']} | {op['abstained']} | {op['answerable_coverage']:.1%} | "
                         f"{op['false_answer_rate']:.1%} |")
        for anchor in ANCHORS:
            cmp_ = res["systems"].get("dtq", {}).get(f"vs_{anchor}")
            if cmp_:
                lines.append(f"\nAURC dtq - {anchor}: {cmp_['diff']:+.3f} [{cmp_['lo']:+.3f}, {cmp_['hi']:+.3f}], "
                             f"ratio {cmp_['ratio']:.2f}; accuracy on the answerable questions dtq - {anchor}: "
                             f"{cmp_['accuracy_diff']:+.1%} [{cmp_['accuracy_lo']:+.1%}, {cmp_['accuracy_hi']:+.1%}]")
        lines.append("")
    return "\n".join(lines) + "\n"


def load_sets(args: argparse.Namespace) -> list[EvalSet]:
    """Return the evaluation sets the options name (a dataset, all, or one data file).

    A named dataset or file that is not there is an ``InputError``; ``all`` skips the shared datasets that are
    absent, saying so, and is an error only when none is there.
    """
    check_data_arguments(args)
    if args.data is not None:
        return [load_data_file(args).limited(args.limit)]
    names = ["mechanics", "twitter", "irc"] if args.dataset == "all" else [n.strip() for n in args.dataset.split(",")]
    for name in names:
        if name not in DATASETS:
            raise InputError(f"unknown dataset {name!r}; choose from {', '.join(DATASETS)} or all")
    if args.dataset != "all":
        return [load_dataset(name, args).limited(args.limit) for name in dict.fromkeys(names)]
    sets, absent = [], []
    for name in names:
        try:
            sets.append(load_dataset(name, args).limited(args.limit))
        except DatasetUnavailable as exc:
            absent.append(f"{name}: skipped: {exc}")
    if sets:
        for line in absent:
            print(line, file=sys.stderr)
    else:
        raise InputError(f"--dataset all: none of the shared datasets is there ({absent[0].split(': ', 2)[-1]}); "
                         "or give --data FILE --format F")
    return sets


def run(args: argparse.Namespace, *, command: str) -> int:
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if args.tree_ablation:
        systems = list(dict.fromkeys([*systems, "dtq", "dtq-no-dt"]))
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown or not systems:
        raise InputError(f"unknown system(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(SYSTEMS)}")
    if not 0 < args.coverage <= 1 or args.bootstrap < 1 or (args.limit is not None and args.limit < 1):
        raise ConfigError("--coverage must be in (0, 1], --bootstrap and --limit at least 1")
    out = check_out_dir(args.out or DEFAULT_OUT)  # before the slow part
    sets = load_sets(args)
    if args.crossfit:
        from eval.operating_point import run_crossfit

        if args.folds < 2:
            raise ConfigError(f"--folds must be at least 2, got {args.folds}")
        unseen = _unseen_car_questions(args.unseen, args.data_dir, args.seed)
        for path in run_crossfit(sets, out=out, command=command, k=args.folds, seed=args.seed, coverage=args.coverage,
                                 n_resamples=args.bootstrap, ranker=args.ranker, reuse=args.reuse_rows,
                                 progress=not args.no_progress, unseen=unseen, parser=args.parser):
            print(path)
        return 0
    for path in run_sets(sets, systems, out=out, command=command, seed=args.seed, coverage=args.coverage,
                         n_resamples=args.bootstrap, progress=not args.no_progress, ranker=args.ranker,
                         reuse=args.reuse_rows, parser=args.parser):
        print(path)
    return 0


def _unseen_car_questions(n: int, data_dir: Path | None, seed: int) -> list[str]:
    """Return ``n`` Reddit car posts (title and text, a seeded sample of both forums): real questions no pool was
    built from."""
    if n <= 0:
        return []
    from eval.datasets import default_data_dir
    from eval.out_of_scope import reddit_texts

    texts = [t for _, t in reddit_texts(Path(data_dir) if data_dir else default_data_dir())]
    if not texts:
        raise InputError("--unseen: no Reddit car posts (car_texts/reddit_*_top.csv) in the shared data")
    return random.Random(seed).sample(texts, min(n, len(texts)))


def run_sets(sets: Sequence[EvalSet], systems: Sequence[str], *, out: Path, command: str, seed: int = 13,
             coverage: float = 0.8, n_resamples: int = 1000, progress: bool = True, ranker: str | None = None,
             reuse: bool = False, parser: str | None = None) -> list[Path]:
    """Run the protocol on every set and write results.md, results.json and the risk-coverage charts to ``out``;
    return the written paths."""
    check_out_dir(out)
    results = [run_dataset(s, systems, seed=seed, coverage=coverage, n_resamples=n_resamples, progress=progress,
                           ranker=ranker, rows_dir=check_out_dir(out / "rows"), reuse=reuse, parser=parser)
               for s in sets]
    check_out_dir(out).mkdir(parents=True, exist_ok=True)
    resolved = next((r["ranker"] for r in results if r.get("ranker")), ranker)
    prov = provenance(sets, parser=parser, ranker=resolved, tree_ablation="dtq-no-dt" in systems)
    atomic_write_text(out / "results.md", markdown(results, command=command, seed=seed, coverage=coverage,
                                                   header=provenance_lines(prov)))
    summary = [{**{k: v for k, v in r.items() if k != "rows"}, "provenance": {**prov, "data": [data]}}
               for r, data in zip(results, prov["data"], strict=True)]
    atomic_write_text(out / "results.json", json.dumps(summary, indent=2) + "\n")
    written = [out / "results.md", out / "results.json"]
    for res in results:
        png = plot_risk_coverage(out / f"risk_coverage_{res['dataset']}.png", res)
        if png:
            written.append(png)
    return written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser, dataset_help="mechanics, twitter, irc, builtin, a comma-separated list of them, or "
                       "all (the shared three)")
    parser.add_argument("--systems", default="dtq,dense,bm25",
                        help="comma-separated: dtq, dense, bm25, dtq-no-dt (the engine without the discourse tree)")
    parser.add_argument("--tree-ablation", action="store_true",
                        help="add dtq-no-dt (and dtq): the same engine without the tree, paired with dtq on the same "
                             "questions")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--coverage", type=float, default=0.8,
                        help="share of answerable questions the operating threshold answers (default 0.8)")
    parser.add_argument("--seed", type=int, default=13, help="seed of the coin and the bootstrap")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the paired CI")
    parser.add_argument("--out", type=Path, default=None, help=f"output directory (default {DEFAULT_OUT})")
    parser.add_argument("--reuse-rows", action="store_true",
                        help="read each system's scored rows kept in --out/rows by an earlier run instead of ranking")
    parser.add_argument("--crossfit", action="store_true",
                        help="hold the operating point out: fit calibrator and threshold on K-1 dialogue folds, "
                             "measure on the held-out one, per set, pooled and across sets (crossfit.md/json/png)")
    parser.add_argument("--folds", type=int, default=5, help="K of --crossfit (mechanics keeps the ranker's 5 folds)")
    parser.add_argument("--unseen", type=int, default=0,
                        help="with --crossfit: also rank N Reddit car posts (seeded sample) against the car pools and "
                             "report the share the shipped operating point answers")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    add_engine_arguments(parser, only=POOL_ENGINE_OPTIONS)


def main(argv: list[str] | None = None, *, prog: str = "python -m eval.selective", command: str | None = None) -> int:
    """Parse ``argv`` and run; return the exit code (2: a one-line error, 130: interrupted)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    command = command or "python -m eval.selective " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    return one_line_errors(lambda: run(args, command=command))


if __name__ == "__main__":
    sys.exit(main())
