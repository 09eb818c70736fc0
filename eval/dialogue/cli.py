"""Simulated-customer dialogue evaluation: ``python -m eval.dialogue`` (also ``dtdialog eval dialogue``).

A simulated customer (``eval.dialogue.customer``) plays each logged dialogue, turn by turn, against the real
``DialogueManager`` (``dtq``) and against next-result search baselines (``dense``, ``bm25``), in the closed pool
(gold in the pool) and the open pool (a seeded half of the dialogues lose their gold answers). Writes
``results.json``, ``results.md``, ``success_at_k.png`` and sampled transcripts to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from dtdialog.setup.engine_args import POOL_ENGINE_OPTIONS, add_engine_arguments
from eval.data_args import add_data_arguments
from eval.datasets import EvalSet
from eval.dialogue.bots import BOTS, DEFAULT_BOTS
from eval.dialogue.report import markdown, plot_success, write_transcripts
from eval.dialogue.run import run_set, summary, transcript_sample
from eval.entry import one_line_errors
from eval.provenance import provenance
from eval.selective import load_sets
from parsers.errors import ConfigError, InputError
from parsers.files import atomic_write_text, check_out_dir

DEFAULT_OUT = Path("runs") / "dialogue"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    parser.add_argument("--bots", default=",".join(DEFAULT_BOTS),
                        help="comma-separated: dtq, dense, bm25, dtq-no-dt (the engine without the discourse tree)")
    parser.add_argument("--tree-ablation", action="store_true",
                        help="add dtq-no-dt (and dtq): the same engine without the tree plays the same dialogues; "
                             "reports dtq - dtq-no-dt paired, and the multi-part questions apart")
    parser.add_argument("--limit", type=int, default=None, help="only the first N dialogues of each set")
    parser.add_argument("--seed", type=int, default=13, help="seed of the customer, the open-pool coin, the sample "
                        "and the bootstrap")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the CIs")
    parser.add_argument("--sample-transcripts", type=int, default=20,
                        help="dialogues per set and pool whose sessions are written out (default 20)")
    parser.add_argument("--out", type=Path, default=None, help=f"output directory (default {DEFAULT_OUT})")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    add_engine_arguments(parser, only=(*POOL_ENGINE_OPTIONS, "calibrator"))


def _bots(text: str) -> list[str]:
    bots = [b.strip() for b in text.split(",") if b.strip()]
    unknown = [b for b in bots if b not in BOTS]
    if unknown or not bots:
        raise InputError(f"unknown bot(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(BOTS)}")
    return bots


def _setup(args: argparse.Namespace, sets: Sequence[EvalSet], bots: Sequence[str], results: Sequence[dict]) -> dict:
    # the ranker the dtq engine resolved to, when it ran; else the option, resolved as the engine would
    ranker = next((r["ranker"] for r in results if r.get("ranker")), args.ranker)
    return {**provenance(sets, parser=args.parser, ranker=ranker, tree_ablation="dtq-no-dt" in bots),
            "seed": args.seed, "bootstrap": args.bootstrap, "limit": args.limit,
            "calibrator": str(args.calibrator) if args.calibrator else "shipped"}


def run(args: argparse.Namespace, *, command: str) -> int:
    bots = _bots(args.bots)
    if args.tree_ablation:
        bots = list(dict.fromkeys([*bots, "dtq", "dtq-no-dt"]))
    if args.bootstrap < 1 or (args.limit is not None and args.limit < 1) or args.sample_transcripts < 0:
        raise ConfigError("--bootstrap and --limit must be at least 1, --sample-transcripts at least 0")
    out = check_out_dir(args.out or DEFAULT_OUT)  # before the slow part
    sets = load_sets(args)
    results = []
    for eval_set in sets:
        set_run = run_set(eval_set, bots, seed=args.seed, ranker=args.ranker, progress=not args.no_progress,
                          parser=args.parser, calibrator=str(args.calibrator) if args.calibrator else None)
        results.append(summary(set_run, n_resamples=args.bootstrap, seed=args.seed))
        ids = transcript_sample(set_run, args.sample_transcripts, seed=args.seed)
        gold = {d.id: d.answer_ids for d in eval_set.dialogues}
        for pool, by_bot in set_run.sessions.items():
            if by_bot and ids:
                print(write_transcripts(out, eval_set.name, pool, by_bot, ids, gold))
    setup = _setup(args, sets, bots, results)
    check_out_dir(out).mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "results.json", json.dumps({"setup": setup, "command": command, "results": results},
                                                       indent=2) + "\n")
    atomic_write_text(out / "results.md", markdown(results, command=command, setup=setup))
    print(out / "results.json")
    print(out / "results.md")
    png = plot_success(out / "success_at_k.png", results)
    if png:
        print(png)
    return 0


def main(argv: list[str] | None = None, *, prog: str = "python -m eval.dialogue", command: str | None = None) -> int:
    """Parse ``argv`` and run; return the exit code (2: a one-line error, 130: interrupted)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    command = command or "python -m eval.dialogue " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    return one_line_errors(lambda: run(args, command=command))


if __name__ == "__main__":
    sys.exit(main())
