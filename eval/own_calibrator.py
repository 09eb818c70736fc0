"""Does a calibrator fitted on a team's own dialogues help its customers? ``python -m eval.own_calibrator``.

The shipped calibrator was fitted on the car-repair pools (mechanics and the built-in corpus); the numbers it reads
are pool-relative (``dtdialog.selection.confidence``), so on another team's logs its confidences may not mean what
they say. This splits a set's dialogues into two seeded halves, fits the learned ranker's calibrator on one half as
``python -m eval.calibrate --data`` would (open pool over that half's own answers), and plays the simulated customer
of ``eval.dialogue`` on the other half twice: with the shipped calibrator and with the one fitted on the other half
(``--calibrator``); then the other way round. Nothing is measured on a dialogue its calibrator was fitted on.

Default set: Twitter, which neither the ranker nor the shipped calibrator saw (mechanics and the built-in corpus
fitted the shipped calibrator, IRC's train split the ranker). Writes ``results.json`` and ``results.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
from dataclasses import replace
from pathlib import Path

from eval.data_args import add_data_arguments
from eval.datasets import EvalSet
from eval.entry import one_line_errors
from parsers.errors import InputError
from parsers.files import atomic_write_text, check_out_dir

DEFAULT_OUT = Path("runs") / "own_calibrator"
#: The dialogue measures compared, as ``eval.dialogue`` names them.
MEASURES = ("step1_success@1", "step1_success@3", "wrong_per_session", "handoff_rate", "session_success",
            "honest_end_gold_absent")


def halves(eval_set: EvalSet, *, seed: int) -> tuple[EvalSet, EvalSet]:
    """Return the set's dialogues in two seeded halves, each with the pool answers of its own dialogues (and the
    extra candidates that belong to no test dialogue, in both)."""
    ids = sorted(d.id for d in eval_set.dialogues)
    if len(ids) < 20:
        raise InputError(f"{eval_set.name}: {len(ids)} dialogues are too few to fit on one half and measure the other")
    random.Random(seed).shuffle(ids)
    parts = (frozenset(ids[: len(ids) // 2]), frozenset(ids[len(ids) // 2:]))
    tested = frozenset(ids)

    def half(mine: frozenset[str], label: str) -> EvalSet:
        pool = tuple(a for a in eval_set.pool if a.dialogue_id in mine or a.dialogue_id not in tested)
        return replace(eval_set, name=f"{eval_set.name}-{label}", pool=pool,
                       dialogues=tuple(d for d in eval_set.dialogues if d.id in mine))

    return half(parts[0], "A"), half(parts[1], "B")


def run(args: argparse.Namespace, *, command: str) -> int:
    from eval.calibrate import calibrate_ranker
    from eval.data_args import load_sets_option
    from eval.dialogue.run import run_set, summary

    out = check_out_dir(args.out)  # before the slow part
    results = []
    for eval_set in load_sets_option(args, ("twitter",)):
        parts = halves(eval_set, seed=args.seed)
        for fit, test in (parts, parts[::-1]):
            fitted = calibrate_ranker("learned", [fit], seed=args.seed, out=out / "fits" / fit.name,
                                      models_dir=out / "fits" / fit.name, progress=not args.no_progress,
                                      command=command)
            row = {"fitted_on": fit.name, "measured_on": test.name, "dialogues": len(test.dialogues),
                   "pool": len(test.pool), "calibrator": fitted["calibrator"], "held_out_ece": fitted["ece_held_out"]}
            for label, calibrator in (("shipped", None), ("own", fitted["calibrator"])):
                played = run_set(test, ["dtq"], seed=args.seed, ranker="learned", progress=not args.no_progress,
                                 calibrator=calibrator)
                if "dtq" in played.skipped:
                    raise InputError(f"{test.name}: the engine could not run: {played.skipped['dtq']}")
                pools = summary(played, n_resamples=args.bootstrap, seed=args.seed)["pools"]
                row[label] = {pool: {m: pools[pool]["dtq"]["measures"][m] for m in MEASURES
                                     if m in pools[pool]["dtq"]["measures"]} for pool in pools}
            results.append(row)
    check_out_dir(out).mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "results.json", json.dumps({"command": command, "seed": args.seed, "results": results},
                                                       indent=2) + "\n")
    atomic_write_text(out / "results.md", markdown(results, command=command))
    print(out / "results.md")
    return 0


def markdown(results: list[dict], *, command: str) -> str:
    lines = ["# A calibrator fitted on the team's own dialogues", "", f"Command: `{command}`", "",
             "Each half of the set is played with the shipped calibrator and with the one fitted on the other half "
             "(simulated customer of `eval.dialogue`, learned ranker). Values with 95% bootstrap CIs over sessions.", ""]
    for row in results:
        lines += [f"## fitted on {row['fitted_on']}, measured on {row['measured_on']}", "",
                  f"{row['dialogues']} dialogues, pool {row['pool']} answers; the fitted calibrator's held-out ECE "
                  f"{row['held_out_ece']:.3f}.", "", "| pool | measure | shipped | own |", "|---|---|---|---|"]
        for pool, measures in row["shipped"].items():
            for name, value in measures.items():
                own = row["own"][pool][name]
                lines.append(f"| {pool} | {name} | {_cell(value)} | {_cell(own)} |")
        lines.append("")
    return "\n".join(lines)


def _cell(value: dict) -> str:
    return f"{value['value']:.3f} [{value['low']:.3f}, {value['high']:.3f}]"


def main(argv: list[str] | None = None, *, prog: str = "python -m eval.own_calibrator",
         command: str | None = None) -> int:
    """Parse ``argv`` and run; return the exit code (2: a one-line error, 130: interrupted)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default=None, help="comma-separated named sets (default: twitter)")
    add_data_arguments(parser, dataset=False)
    parser.add_argument("--limit", type=int, default=None, help="only the first N dialogues (a smoke run)")
    parser.add_argument("--seed", type=int, default=13, help="seed of the halves, the open-pool coin and the customer")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the CIs")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    args = parser.parse_args(argv)
    command = command or "python -m eval.own_calibrator " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    return one_line_errors(lambda: run(args, command=command))


if __name__ == "__main__":
    sys.exit(main())
