"""Batch dialogue reconstruction: ``python -m eval.reconstruct --dataset mechanics --methods keyword,dtq``.

For each test dialogue the method forms A1 from Q; given the actual C1 it forms A2; given the actual
C2 it forms A3 (at most three answers). A step is correct when the selected (top-1) answer is the
actual one. Answers the method already selected are excluded later (it never repeats itself).
Writes ``results.md`` (Table 1 layout), ``results.csv`` and ``accuracy.png`` to ``--out``
(default ``runs/eval/<dataset>/``).

A team's own dialogues: ``--data FILE --format csv|jsonl|twitter|irc|mechanics`` reconstructs the file's
dialogues (the file is also the candidate pool), then runs the selective-answering evaluation
(``eval.selective``) on the same file into ``--out``/selective. A named dataset or file that is not there is an
error (exit 2); only ``--dataset all`` skips the absent shared datasets.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from dtdialog.setup.engine_args import POOL_ENGINE_OPTIONS, add_engine_arguments
from eval.data_args import add_data_arguments, check_data_arguments, load_data_file, load_dataset
from eval.datasets import DATASETS, DatasetUnavailable, EvalSet
from eval.entry import one_line_errors
from eval.methods import available_methods, get_method
from eval.methods.base import MethodUnavailable, RankingMethod
from eval.metrics import DialogueResult, StepResult, compute_metrics, paired_metrics
from eval.provenance import provenance
from eval.report import DatasetRun, MethodRun, plot_accuracy, write_csv, write_markdown
from parsers.errors import ConfigError, InputError, ModelNotAvailableError
from parsers.files import atomic_write_text, check_out_dir

DEFAULT_OUT = Path("runs") / "eval"


def reconstruct(method: RankingMethod, eval_set: EvalSet, *, k: int = 100, progress: bool = True) -> list[DialogueResult]:
    """Return the reconstruction of every test dialogue of ``eval_set`` by the fitted ``method``."""
    from tqdm import tqdm

    results = []
    for d in tqdm(eval_set.dialogues, desc=f"{eval_set.name}/{method.name}", unit="dialogue", file=sys.stderr,
                  disable=not progress, dynamic_ncols=True):
        selected: list[str] = []
        steps: list[StepResult] = []
        for step, gold in enumerate(d.answer_ids):
            ranked = method.rank(question=d.question, followups=d.followups[:step], step=step,
                                 exclude_ids=tuple(selected), k=k)
            ids = tuple(doc_id for doc_id, _ in ranked)
            steps.append(StepResult(step=step + 1, gold_id=gold, ranked_ids=ids))
            if ids:
                selected.append(ids[0])
        results.append(DialogueResult(dialogue_id=d.id, steps=tuple(steps), has_followup=bool(d.followups)))
    return results


def evaluate_method(name: str, eval_set: EvalSet, *, k: int, seed: int, n_resamples: int, progress: bool,
                    options: dict | None = None) -> MethodRun:
    """Fit and run one method on ``eval_set``; return its metrics, or the reason it was skipped."""
    try:
        method = get_method(name, **(options or {}))
    except (MethodUnavailable, ModelNotAvailableError) as exc:
        return MethodRun(method=name, label=name, skipped=str(exc))
    if hasattr(method, "progress"):
        method.progress = progress  # fitting (parsing, encoding, indexing) is the long part: show it
    run = MethodRun(method=method.name, label=method.label)
    try:
        t0 = time.perf_counter()
        method.fit(pool=eval_set.pool)
        method.prepare(dialogues=eval_set.dialogues)
        run.fit_seconds = time.perf_counter() - t0
        run.label = method.label  # fitting may settle what the method is (e.g. which ranker the engine uses)
        run.ranker = getattr(method, "resolved_ranker", "")
        t0 = time.perf_counter()
        results = reconstruct(method, eval_set, k=k, progress=progress)
        run.rank_seconds = time.perf_counter() - t0
    except (MethodUnavailable, ModelNotAvailableError) as exc:
        run.skipped = str(exc)
        return run
    finally:
        method.close()
    run.report = compute_metrics(results, n_resamples=n_resamples, seed=seed)
    run.results = results
    return run


#: the engine's methods and their twins without the discourse tree (``--tree-ablation``)
TREE_TWINS = {"dtq": "dtq-no-dt", "dtq-rules": "dtq-rules-no-dt"}
#: the methods that run the engine, so ``--parser`` reaches them; ``--ranker`` only those whose name fixes none
PARSER_METHODS = ("dtq", "dtq-rules", "dtq-nocontext", "dtq-no-dt", "dtq-rules-no-dt", "hybrid", "hybrid+dt")
RANKER_METHODS = ("dtq", "dtq-no-dt")


def method_options(name: str, args: argparse.Namespace | None) -> dict:
    """Return the engine options (``--parser``, ``--ranker``) given in ``args`` that method ``name`` takes."""
    parser, ranker = getattr(args, "parser", None), getattr(args, "ranker", None)
    return {**({"parser": parser} if parser is not None and name in PARSER_METHODS else {}),
            **({"ranker": ranker} if ranker is not None and name in RANKER_METHODS else {})}


def with_tree_twins(methods: Sequence[str]) -> list[str]:
    """Return ``methods`` with each engine method followed by its twin without the tree (``dtq`` added if none)."""
    if not any(m in TREE_TWINS for m in methods):
        methods = [*methods, "dtq"]
    out: list[str] = []
    for m in methods:
        out += [m, TREE_TWINS[m]] if m in TREE_TWINS else [m]
    return list(dict.fromkeys(out))


def tree_pairs(runs: Sequence[MethodRun], *, seed: int, n_resamples: int) -> dict:
    """Return "method - twin" -> the paired difference of every metric, for each engine method run with its twin."""
    done = {r.method: r for r in runs if r.report is not None}
    return {f"{m} - {twin}": paired_metrics(done[m].results, done[twin].results, n_resamples=n_resamples, seed=seed)
            for m, twin in TREE_TWINS.items() if m in done and twin in done}


def run_dataset(name: str, methods: Sequence[str], *, data_dir: Path | None, limit: int | None, k: int, seed: int,
                n_resamples: int, progress: bool, command: str = "", eval_set: EvalSet | None = None,
                args: argparse.Namespace | None = None) -> DatasetRun:
    """Evaluate ``methods`` on dataset ``name`` (or on ``eval_set`` when given; ``args``: its ``--pool``); a dataset
    whose files are absent comes back skipped. An engine method run beside its twin without the tree
    (``TREE_TWINS``) gets the paired differences."""
    if eval_set is None:
        try:
            eval_set = load_dataset(name, args or argparse.Namespace(data_dir=data_dir)).limited(limit)
        except DatasetUnavailable as exc:
            return DatasetRun(dataset=name, skipped=str(exc), command=command)
    ds = DatasetRun(dataset=name, description=eval_set.description, own_data=eval_set.own_data,
                    n_dialogues=len(eval_set.dialogues), n_pool=len(eval_set.pool), command=command, seed=seed,
                    n_resamples=n_resamples, k=k)
    for m in methods:
        run = evaluate_method(m, eval_set, k=k, seed=seed, n_resamples=n_resamples, progress=progress,
                              options=method_options(m, args))
        if run.skipped:
            print(f"{name}/{m}: skipped: {run.skipped}", file=sys.stderr)
        ds.runs.append(run)
    # the ranker the engine of a method that follows --ranker resolved to; else the option, resolved as it would be
    ranker = next((r.ranker for r in ds.runs if r.method in RANKER_METHODS and r.ranker), getattr(args, "ranker", None))
    ds.provenance = provenance([eval_set], parser=getattr(args, "parser", None), ranker=ranker,
                               tree_ablation=any(m in TREE_TWINS.values() for m in methods))
    ds.paired = tree_pairs(ds.runs, seed=seed, n_resamples=n_resamples)
    return ds


def write_outputs(out: Path, runs: Sequence[DatasetRun]) -> list[Path]:
    """Write results.md, results.csv, provenance.json and accuracy.png (one chart per dataset when several); return
    the paths."""
    written = [out / "results.md", out / "results.csv", out / "provenance.json"]
    write_markdown(out / "results.md", runs)
    write_csv(out / "results.csv", runs)
    atomic_write_text(out / "provenance.json", json.dumps({r.dataset: r.provenance for r in runs if not r.skipped},
                                                          indent=2) + "\n")
    for run in runs:
        png = out / ("accuracy.png" if len(runs) == 1 else f"accuracy_{run.dataset}.png")
        if plot_accuracy(png, run):
            written.append(png)
    return written


def parse_methods(text: str) -> list[str]:
    """Return the method names in a comma-separated list; raises ``InputError`` for unknown or no names."""
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise InputError("--methods is empty")
    unknown = [m for m in names if m not in available_methods()]
    if unknown:
        raise InputError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(available_methods())}")
    return list(dict.fromkeys(names))


def run(args: argparse.Namespace, *, command: str | None = None) -> int:
    """Run the evaluation described by ``args``; return 0, or 1 when every dataset was skipped."""
    methods = parse_methods(args.methods)
    if args.tree_ablation:
        methods = with_tree_twins(methods)
    if args.limit is not None and args.limit < 1:
        raise InputError(f"--limit must be at least 1, got {args.limit}")
    if args.bootstrap < 1 or args.k < 5:
        raise ConfigError("--bootstrap must be at least 1 and --k at least 5")
    systems = _selective_systems(args.systems) if args.data is not None else []
    if args.tree_ablation and systems:
        systems = list(dict.fromkeys([*systems, "dtq", "dtq-no-dt"]))
    command = command or "python -m eval.reconstruct " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    check_data_arguments(args)
    if args.data is not None:
        own = load_data_file(args).limited(args.limit)
        datasets, given = [own.name], {own.name: own}
    elif args.dataset == "all":
        datasets, given = list(DATASETS), {}
    elif args.dataset in DATASETS:
        # named on purpose: absent files are the user's mistake to fix, not a row to skip
        datasets, given = [args.dataset], {args.dataset: load_dataset(args.dataset, args).limited(args.limit)}
    else:
        raise InputError(f"unknown dataset {args.dataset!r}; choose from {', '.join(DATASETS)} or all")
    out = args.out or (DEFAULT_OUT / datasets[0] if args.data is not None else DEFAULT_OUT / args.dataset)
    check_out_dir(out)  # a link, file or device there is refused before the slow part
    runs = []
    for name in datasets:
        ds = run_dataset(name, methods, data_dir=args.data_dir, limit=args.limit, k=args.k, seed=args.seed,
                         n_resamples=args.bootstrap, progress=not args.no_progress, command=command,
                         eval_set=given.get(name), args=args)
        if ds.skipped:
            print(f"{name}: skipped: {ds.skipped}", file=sys.stderr)
        runs.append(ds)
    if all(r.skipped for r in runs):
        raise InputError("--dataset all: none of the datasets is there (set --data-dir or $DTDIALOG_SHARED_DATA)")
    for path in write_outputs(check_out_dir(out), runs):
        print(path)
    if systems:
        from eval.selective import run_sets

        for path in run_sets([given[datasets[0]]], systems, out=check_out_dir(out / "selective"), command=command,
                             seed=args.seed, n_resamples=args.bootstrap, progress=not args.no_progress,
                             ranker=args.ranker, parser=args.parser):
            print(path)
    return 0


def _selective_systems(text: str) -> list[str]:
    """Return the selective evaluation's systems in ``--systems`` (``none``: skip that evaluation)."""
    from eval.selective import SYSTEMS

    names = [s.strip() for s in text.split(",") if s.strip()]
    if names == ["none"]:
        return []
    unknown = [s for s in names if s not in SYSTEMS]
    if unknown or not names:
        raise InputError(f"unknown --systems {', '.join(unknown) or '(none)'}; choose from {', '.join(SYSTEMS)} "
                         "or none")
    return list(dict.fromkeys(names))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the evaluation's options (``python -m eval.reconstruct`` and ``dtdialog eval``)."""
    add_data_arguments(parser)
    parser.add_argument("--methods", default="keyword,syntactic,dtq,dense",
                        help="comma-separated: keyword, syntactic, dtq, dtq-rules, dtq-nocontext, dtq-no-dt, "
                             "dtq-rules-no-dt, dense, hybrid, hybrid+dt")
    parser.add_argument("--tree-ablation", action="store_true",
                        help="also run each engine method (dtq, dtq-rules) without the discourse tree on the same "
                             "dialogues and report with - without as paired bootstrap CIs")
    parser.add_argument("--limit", type=int, default=None, help="evaluate only the first N test dialogues")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default runs/eval/<dataset>/)")
    parser.add_argument("--seed", type=int, default=13, help="bootstrap seed")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the 95%% CIs")
    parser.add_argument("--k", type=int, default=100, help="ranking depth per step (R@5 and MRR@k use it)")
    parser.add_argument("--systems", default="dtq,dense,bm25",
                        help="with --data: the selective evaluation's systems (dtq, dense, bm25), or none to skip it")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    add_engine_arguments(parser, only=POOL_ENGINE_OPTIONS)


#: The other evaluations of the issue-13 work, reached through this entry point by their name as the first
#: argument (``dtdialog eval selective --help``): name -> module with a ``main(argv, prog=, command=)``.
SUBCOMMANDS = {"selective": "eval.selective", "out-of-scope": "eval.out_of_scope", "position": "eval.position",
               "calibrate": "eval.calibrate", "dialogue": "eval.dialogue.cli",
               "already-tried": "eval.already_tried.cli", "coverage": "eval.coverage.cli"}


def main(argv: list[str] | None = None, *, prog: str = "python -m eval.reconstruct", command: str | None = None) -> int:
    """Parse ``argv`` and run the evaluation; return the exit code (2: a one-line error, 130: interrupted).

    ``dtdialog eval`` calls this with its own ``prog`` and ``command`` (the command line the report records).
    A name of ``SUBCOMMANDS`` as the first argument runs that evaluation instead.
    """
    if argv and argv[0] in SUBCOMMANDS:
        import importlib

        sub = importlib.import_module(SUBCOMMANDS[argv[0]])
        return sub.main(argv[1:], prog=f"{prog} {argv[0]}", command=command)
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0],
                                     epilog="A first argument of " + ", ".join(SUBCOMMANDS) + " runs that "
                                     "evaluation instead (selective: open-pool answering; out-of-scope: the "
                                     "out-of-scope gate; position: follow-ups at step 1; calibrate: refit the "
                                     "confidence calibrators; dialogue: a simulated customer talks to the "
                                     "dialogue manager)")
    add_arguments(parser)
    args = parser.parse_args(argv)
    return one_line_errors(lambda: run(args, command=command))


if __name__ == "__main__":
    sys.exit(main())
