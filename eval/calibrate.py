"""Fit the engine's confidence calibrators: ``python -m eval.calibrate``.

The calibrator (``dtdialog.selection.confidence.Calibrator``) maps the deciding step's numbers to P(the chosen answer
is right). It is fitted on the car-repair sets (``--sets``: mechanics, the learned ranker's training pool,
scored out-of-fold, each question by the fold model that never saw it, and the built-in corpus), on first
answers and on later ones (after a follow-up, the earlier answers excluded), in the open-pool protocol of
``eval.selective`` (a seeded coin removes the gold answer for half of the questions or steps), so "the right
answer is not in the pool" is in the data, and one calibrator serves every answer of a dialogue. The
abstention threshold it was fitted for (``eval.operating_point.fit_operating``) goes into its manifest.

Writes ``calibrator-v1.json`` (learned ranker ``ranker-v1``), ``calibrator-v1-hybrid.json`` with ``--no-dt`` (the
engine without the discourse tree, ranker ``ranker-v1-hybrid``) and ``calibrator-v1-rules.json`` (rule scorer)
to ``dtdialog/ranking/models/`` (or ``--models-dir``), and to ``--out`` the reliability diagrams
(``reliability_<ranker>.png``) and ECE of a 5-fold cross-fit: each question's confidence comes from a
calibrator fitted on the other folds, so the diagram shows held-out calibration. ``--data FILE --format F`` fits on
a dialogue file of one's own instead of ``--sets``; ``--pool`` names the candidate answers (``eval.data_args``);
its calibrators go to ``--out`` (never over the shipped ones unless ``--models-dir`` says so), for the engine's
``--calibrator FILE`` or a project's ``calibrator:`` key. ``calibration.json`` records each calibrator's provenance
(``eval.provenance``).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dtdialog.selection.confidence import MODELS_DIR
from eval.calibrator import N_FOLDS, cross_fit, ece, fit_calibrator, plot_reliability, reliability
from eval.data_args import add_data_arguments, load_sets_option
from eval.entry import one_line_errors
from eval.provenance import provenance, provenance_lines
from parsers.errors import InputError
from parsers.files import atomic_write_text, check_out_dir

DEFAULT_OUT = Path("runs") / "calibration"
DEFAULT_SETS = ("mechanics", "builtin")


def calibrate_ranker(ranker: str, eval_sets: Sequence, *, seed: int, out: Path, models_dir: Path, progress: bool,
                     command: str, from_rows: bool = False, coverage: float = 0.8, use_tree: bool = True) -> dict:
    """Run the open pool with the engine under ``ranker`` on every step of ``eval_sets``; write its calibrator
    (with the abstention threshold it was fitted for in its manifest) and reliability diagram.

    The scored rows are kept in ``out/rows/<ranker>/`` (``<ranker>-no-dt`` without the tree); ``from_rows`` refits
    from them. ``use_tree=False`` (learned only) fits the calibrator of the engine without the discourse tree,
    ``calibrator-v1-hybrid.json`` beside its ``ranker-v1-hybrid`` model.
    """
    from eval.operating_point import Table, fit_operating, set_rows

    if not use_tree and ranker != "learned":
        raise InputError("--no-dt fits the learned ranker's calibrator only (--rankers learned)")
    label = ranker if use_tree else f"{ranker}-no-dt"
    sets = [set_rows(e, k=N_FOLDS, seed=seed, ranker=ranker, rows_dir=out / "rows" / label, reuse=from_rows,
                     progress=progress, use_tree=use_tree) for e in eval_sets]
    if any(s.ranker != ranker for s in sets):
        raise InputError(f"the engine resolved to another ranker than {ranker} (is [dense] installed?)")
    table = Table.of(sets, later=True)
    rows, folds = table.rows, table.folds
    probs = cross_fit(rows, folds, ranker=ranker)
    correct = [r.correct for r in rows]
    held_out_ece = ece(probs, correct)
    names = "+".join(s.name for s in sets)
    png = plot_reliability(out / f"reliability_{label}.png", probs, correct,
                           title=f"{label} ranker, {names} open pool, every step, {N_FOLDS}-fold held out")
    threshold = fit_operating(rows, folds, ranker=ranker, coverage=coverage).threshold
    steps = ", ".join(f"{s.name} {len(s.first)}+{len(s.later)}" for s in sets)
    out_of_fold = "; mechanics scored out-of-fold" if any(s.name == "mechanics" for s in sets) else ""
    manifest = {"fitted_on": f"{names} open pool (seed {seed}), first and later answers ({steps}){out_of_fold}",
                "command": command, "n": len(rows),
                "held_out_ece": round(held_out_ece, 4), "method": "platt (logistic regression)",
                "abstain_below": round(threshold, 3), "abstain_coverage": coverage}
    calibrator = fit_calibrator(rows, ranker=ranker, model_name=sets[0].model_name, manifest=manifest)
    name, model_path = ("calibrator-v1.json" if ranker == "learned" else "calibrator-v1-rules.json"), None
    if not use_tree:
        from dtdialog.ranking.learned_scorer import TREELESS_MODEL
        from dtdialog.selection.confidence import calibrator_path

        name, model_path = calibrator_path("learned", TREELESS_MODEL).name, str(TREELESS_MODEL)
    path = calibrator.save(models_dir / name)
    prov = provenance(eval_sets, ranker=sets[0].ranker, model_path=model_path)
    return {"ranker": label, "provenance": prov, "calibrator": str(path), "ece_held_out": held_out_ece,
            "abstain_below": threshold, "reliability": reliability(probs, correct), "png": str(png) if png else None, "n": len(rows),
            "accuracy": float(np.mean(correct))}


def main(argv: list[str] | None = None, *, prog: str = "python -m eval.calibrate", command: str | None = None) -> int:
    """Parse ``argv`` and run; return the exit code (2: a one-line error, 130: interrupted)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    parser.add_argument("--rankers", default="learned,rules", help="comma-separated: learned, rules")
    parser.add_argument("--no-dt", action="store_true",
                        help="fit the calibrator of the engine without the discourse tree (--rankers learned: "
                             "calibrator-v1-hybrid.json, for the ranker-v1-hybrid model)")
    parser.add_argument("--sets", default=None,
                        help="comma-separated sets whose first and later answers the calibrators are fitted on "
                             "(default: the car-repair ones, mechanics and the built-in corpus)")
    add_data_arguments(parser, dataset=False)
    parser.add_argument("--seed", type=int, default=13, help="seed of the open-pool coin")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the reliability diagrams go")
    parser.add_argument("--models-dir", type=Path, default=None,
                        help="where the calibrators go (default: the shipped models' folder, or --out with --data)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions (a smoke run)")
    parser.add_argument("--from-rows", action="store_true",
                        help="refit from the rows a previous run kept in --out (no ranking)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    args = parser.parse_args(argv)
    command = command or "python -m eval.calibrate " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    return one_line_errors(lambda: run(args, command=command))


def load_sets(args: argparse.Namespace) -> list:
    """Return the sets to fit on: the ``--data`` file, or the ``--sets``, each with the pool ``--pool`` names."""
    return load_sets_option(args, DEFAULT_SETS)


def run(args: argparse.Namespace, *, command: str) -> int:
    check_out_dir(args.out)  # before the slow part
    eval_sets = load_sets(args)
    # a team's own fit must not replace the calibrators every other engine on this install reads
    models_dir = args.models_dir or (args.out if args.data is not None else MODELS_DIR)
    report = [calibrate_ranker(r.strip(), eval_sets, seed=args.seed, out=args.out, models_dir=models_dir,
                               progress=not args.no_progress, command=command, from_rows=args.from_rows,
                               use_tree=not args.no_dt)
              for r in args.rankers.split(",") if r.strip()]
    check_out_dir(args.out).mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out / "calibration.json", json.dumps(report, indent=2) + "\n")
    for r in report:
        print(f"{r['ranker']}: {r['calibrator']}  held-out ECE {r['ece_held_out']:.3f}  accuracy {r['accuracy']:.3f}"
              f"  n {r['n']}  abstain_below {r['abstain_below']:.3f}  {r['png']}")
        print("\n".join(f"  {line}" for line in provenance_lines(r["provenance"])))
        if args.data is not None:
            print(f"  use it: dtdialog chat --calibrator {r['calibrator']} (or calibrator: in dtdialog.yaml); it "
                  f"would answer 80% of the answerable here at confidence {r['abstain_below']:.3f} (the engine's "
                  "bar is abstention.abstain_below)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
