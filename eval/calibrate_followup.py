"""Fit the rule scorer's confidence calibrator of follow-up steps: ``python -m eval.calibrate_followup``.

Every answer the bot gives passes one confidence rule (``dtdialog.dialogue.abstain``), follow-up answers too.
The learned ranker's calibrator (``eval.calibrate``) is fitted on first and later answers together, with
numbers that tell the steps apart. The rule scorer's is fitted on first answers only (fitting it on every step
doubled its false answers on mechanics): a follow-up step is ranked from the customer's short reply, the
answers already shown excluded, so its numbers lie elsewhere and that calibrator reads them as doubt. This
fits a calibrator of their own on the later steps of real multi-step dialogues, in the open-pool protocol: a seeded coin removes the step's gold answer for about
half of the steps, so "the right answer is not here" is in the data. Each step is ranked as the dialogue
manager ranks it: the question's plan, the customer's reply to the answer before as the step's text, the
earlier answers excluded and given as context.

Data: the built-in car-repair corpus and the IRC train split (never the dev sets the dialogue evaluations
report on). Writes ``calibrator-v1-rules-followup.json`` (``--rankers learned`` writes
``calibrator-v1-followup.json``, which the engine then prefers on follow-up steps) beside the first-answer
calibrators, and to ``--out`` the held-out (5-fold, grouped by dialogue) ECE and reliability diagram.
``--data FILE --format F`` fits on a dialogue file of one's own instead of ``--sets``; ``--pool`` names the candidate
answers (``eval.data_args``); ``calibration_followup.json`` records each calibrator's provenance.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dtdialog.dialogue.abstain import followup_calibrator_path
from eval.calibrator import N_FOLDS, cross_fit, ece, fit_calibrator, plot_reliability, reliability
from eval.data_args import add_data_arguments, load_sets_option
from eval.entry import one_line_errors
from eval.open_pool import EngineSystem, OpenPoolRow
from eval.provenance import provenance, provenance_lines
from parsers.errors import InputError
from parsers.files import atomic_write_text, check_out_dir

DEFAULT_OUT = Path("runs") / "calibration_followup"
DEFAULT_SETS = ("builtin", "irc-train")


def step_coin(dialogue_id: str, step: int, *, seed: int) -> bool:
    """Return True when the seeded coin removes the gold answer of ``step`` of ``dialogue_id`` from the pool."""
    return random.Random(f"{seed}:{dialogue_id}:{step}").random() < 0.5


def followup_rows(system: EngineSystem, eval_set, *, seed: int, progress: bool) -> list[OpenPoolRow]:
    """Return one row per later step (A2, A3, ...) of every dialogue that has the customer's reply before it."""
    from tqdm import tqdm

    from dtdialog.selection.confidence import step_features

    rows = []
    selector = system.method._selector
    for d in tqdm(eval_set.dialogues, desc=f"{eval_set.name}/{system.ranker} follow-ups", unit="dialogue",
                  file=sys.stderr, disable=not progress, dynamic_ncols=True):
        try:
            plan = system.method._plan(d.question)
        except InputError:
            continue
        for step in range(1, min(len(d.answer_ids), len(d.followups) + 1)):
            gold, shown = d.answer_ids[step], list(d.answer_ids[:step])
            answerable = not step_coin(d.id, step, seed=seed)
            ranked = selector.rank(question=plan, step=step, followups=[d.followups[step - 1]],
                                   exclude_ids=shown + ([] if answerable else [gold]), size=100, context_ids=shown)
            values = step_features(ranked, system.ranker) or {}
            top = ranked[0].document.id if ranked else None
            rows.append(OpenPoolRow(dialogue_id=d.id, question=f"{d.question}\n[step {step + 1}]", answerable=answerable,
                                    correct=answerable and top == gold, top_id=top,
                                    score=float(values.get("logit", values.get("score", 0.0))), values=values))
    return rows


def dialogue_fold(dialogue_id: str) -> int:
    """Return a stable fold of a dialogue, so all its steps are held out together."""
    return int(hashlib.sha1(dialogue_id.encode("utf-8")).hexdigest(), 16) % N_FOLDS


def calibrate(ranker: str, sets: Sequence, *, seed: int, out: Path, models_dir: Path, progress: bool,
              command: str) -> dict:
    """Score the later steps of ``sets`` under ``ranker``; write its follow-up calibrator and diagram."""
    rows, by_set, model_name = _followup_rows(ranker, sets, seed=seed, progress=progress)
    if len(rows) < 4 * N_FOLDS:
        raise InputError(f"only {len(rows)} follow-up steps: too few to fit a calibrator")
    folds = [dialogue_fold(r.dialogue_id) for r in rows]
    probs = cross_fit(rows, folds, ranker=ranker)
    correct = [r.correct for r in rows]
    png = plot_reliability(out / f"reliability_followup_{ranker}.png", probs, correct,
                           title=f"{ranker} ranker, follow-up steps, {N_FOLDS}-fold held out")
    manifest = {"fitted_on": f"follow-up steps of {', '.join(by_set)} (open pool, seed {seed})", "steps": by_set,
                "command": command, "n": len(rows), "held_out_ece": round(ece(probs, correct), 4),
                "method": "platt (logistic regression)", "step": "followup"}
    calibrator = fit_calibrator(rows, ranker=ranker, model_name=model_name, manifest=manifest)
    path = calibrator.save(models_dir / followup_calibrator_path(ranker).name)
    return {"ranker": ranker, "provenance": provenance(sets, ranker=ranker), "calibrator": str(path), "ece_held_out": manifest["held_out_ece"], "n": len(rows),
            "steps": by_set, "accuracy": float(np.mean(correct)), "reliability": reliability(probs, correct),
            "png": str(png) if png else None}


def _followup_rows(ranker: str, sets: Sequence, *, seed: int, progress: bool) -> tuple[list[OpenPoolRow], dict, str]:
    """Return the later steps of every set scored by the engine under ``ranker``, their count per set and the
    ranker's model name; an engine that resolved to another ranker is refused."""
    rows: list[OpenPoolRow] = []
    by_set: dict[str, int] = {}
    model_name = ""
    for eval_set in sets:
        system = EngineSystem(ranker=ranker, progress=progress)
        try:
            system.fit(eval_set)
            if system.ranker != ranker:
                raise InputError(f"the engine resolved to the {system.ranker} ranker, not {ranker} (is [dense] installed?)")
            found = followup_rows(system, eval_set, seed=seed, progress=progress)
        finally:
            system.close()
        by_set[eval_set.name] = len(found)
        rows += found
        model_name = system.model_name
    return rows, by_set, model_name


def main(argv: list[str] | None = None, *, prog: str = "python -m eval.calibrate_followup",
         command: str | None = None) -> int:
    """Parse ``argv`` and run; return the exit code (2: a one-line error, 130: interrupted)."""
    from dtdialog.selection.confidence import MODELS_DIR

    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    parser.add_argument("--rankers", default="rules", help="comma-separated: rules, learned")
    parser.add_argument("--sets", default=None,
                        help=f"comma-separated dataset names to fit on (default {','.join(DEFAULT_SETS)})")
    add_data_arguments(parser, dataset=False)
    parser.add_argument("--seed", type=int, default=13, help="seed of the open-pool coin")
    parser.add_argument("--limit", type=int, default=None, help="only the first N dialogues of each set")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the report and diagrams go")
    parser.add_argument("--models-dir", type=Path, default=MODELS_DIR, help="where the calibrators go")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    args = parser.parse_args(argv)
    command = command or f"{prog} " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    return one_line_errors(lambda: run(args, command=command))


def load_sets(args: argparse.Namespace) -> list:
    """Return the sets to fit on: the ``--data`` file, or the ``--sets``, each with the pool ``--pool`` names."""
    from eval.datasets import load_irc_train

    return load_sets_option(args, DEFAULT_SETS, extra={"irc-train": load_irc_train})


def run(args: argparse.Namespace, *, command: str) -> int:
    sets = load_sets(args)
    check_out_dir(args.out).mkdir(parents=True, exist_ok=True)
    report = [calibrate(r.strip(), sets, seed=args.seed, out=args.out, models_dir=args.models_dir,
                        progress=not args.no_progress, command=command)
              for r in args.rankers.split(",") if r.strip()]
    atomic_write_text(args.out / "calibration_followup.json", json.dumps(report, indent=2) + "\n")
    for r in report:
        print(f"{r['ranker']}: {r['calibrator']}  held-out ECE {r['ece_held_out']:.3f}  accuracy {r['accuracy']:.3f}"
              f"  n {r['n']} {r['steps']}  {r['png']}")
        print("\n".join(f"  {line}" for line in provenance_lines(r["provenance"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
