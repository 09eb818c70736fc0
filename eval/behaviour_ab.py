"""Behaviour of two checkouts of the engine, A/B in one run: ``python -m eval.behaviour_ab``.

    git worktree add ../before <rev>
    python -m eval.behaviour_ab --before ../before --after . [--only reconstruct,dialogue] [--out runs/behaviour_ab]

A change meant to leave behaviour alone (a move, a config type, a cleanup) is checked by running the same evaluations
on both checkouts, one after the other in this run, each with its own data home, and comparing every figure their
reports hold. Timings, load, paths and commits differ by nature and are left out (``VOLATILE``), floats equal to
``REL_TOL`` are one figure summed in another order, and what a report records about its own set-up (``SETUP``) is
listed apart; any other value that differs is listed, and the exit code is 1. ``--reuse`` compares the reports an
earlier run left. The Haystack bench runs under ``--bench-python`` (a Python with the ``[bench]`` extra), skipped
without one.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from eval.entry import one_line_errors
from eval.latency_ab import ARMS, check_checkout
from eval.provenance import git_commit
from parsers.errors import DTDialogError, InputError
from parsers.files import atomic_write_text, check_out_dir

DEFAULT_OUT = Path("runs/behaviour_ab")
#: a key or column naming one of these is no behaviour: a duration, a rate, the machine's load, where or when it ran
VOLATILE = re.compile(r"(?:^|[._:\s])(?:ms|seconds?|secs?|timing|time|per_second|load_average|load|cpu|commit|"
                      r"command|model|path|out|elapsed|threads?|date|bounds|p50|p95|p99|index_ratio|p95_ratio|cpu_count)"
                      r"(?:$|[._\s])|_ms$|_s$", re.IGNORECASE)
#: a value that names a file of the checkout differs only by where the checkout is
_PATHLIKE = re.compile(r"^/")
#: what a report says about its own set-up, not what the engine did: listed apart, never a behaviour difference
SETUP = re.compile(r"(?:^|[._:])(?:provenance|setup)(?:$|[._])|(?:^|[._:])ranker$")
#: two floats this close are one figure summed in another order
REL_TOL = 1e-9


@dataclass(frozen=True)
class Evaluation:
    """One evaluation both arms run: its arguments (``{out}`` and ``{data}`` filled in) and the reports it writes."""

    name: str
    args: tuple[str, ...]
    reports: tuple[str, ...]
    bench: bool = False


EVALUATIONS = (
    *(Evaluation(f"reconstruct-{name}", ("-m", "eval.reconstruct", "--dataset", name, "--data-dir", "{data}",
                                         "--out", "{out}", "--no-progress"), ("results.csv",))
      for name in ("builtin", "mechanics")),
    Evaluation("selective", ("-m", "eval.selective", "--dataset", "mechanics", "--data-dir", "{data}", "--out",
                             "{out}", "--no-progress"), ("results.json",)),
    Evaluation("dialogue", ("-m", "eval.dialogue", "--dataset", "mechanics", "--data-dir", "{data}", "--out",
                            "{out}", "--no-progress"), ("results.json",)),
    Evaluation("haystack", ("-m", "eval.haystack_bench", "--data-dir", "{data}", "--json", "{out}/results.json",
                            "--quiet"), ("results.json",), bench=True),
)


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Return ``{dotted key: leaf value}`` of nested dicts and lists (list items keyed by position)."""
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = ((str(i), v) for i, v in enumerate(value))
    else:
        return {prefix: value}
    flat: dict[str, Any] = {}
    for key, item in items:
        flat.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def read_report(path: Path) -> dict[str, Any]:
    """Return a report's values by key: a JSON file flattened, or a CSV file's cells keyed by row and column."""
    if not path.is_file():
        raise InputError(f"the report {path} was not written")
    if path.suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as fh:
            return {f"{i}.{column}": cell for i, row in enumerate(csv.DictReader(fh)) for column, cell in row.items()}
    return flatten(json.loads(path.read_text(encoding="utf-8")))


def compare(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Return how many behaviour values both reports hold, the keys whose values differ or exist on one side, and
    the set-up entries that differ (``SETUP``: what the report records about its run, apart)."""
    keys = [k for k in sorted(set(before) | set(after)) if not VOLATILE.search(k)]
    differing, setup = [], []
    for key in keys:
        a, b = before.get(key), after.get(key)
        if _same(a, b):
            continue
        (setup if SETUP.search(key) else differing).append({"key": key, "before": a, "after": b})
    return {"compared": sum(not SETUP.search(k) for k in keys), "differing": differing, "setup": setup}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str) and _PATHLIKE.match(a) and _PATHLIKE.match(b):
        return True
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)
    return a == b


def run_arm(evaluation: Evaluation, checkout: Path, out: Path, *, data: Path, python: str, home: Path) -> None:
    """Run ``evaluation`` on ``checkout``'s code into ``out``; a failure is one line naming its log."""
    out.mkdir(parents=True, exist_ok=True)
    args = [a.replace("{out}", str(out)).replace("{data}", str(data)) for a in evaluation.args]
    env = {**os.environ, "PYTHONPATH": str(checkout), "DTDIALOG_HOME": str(home)}
    log = out / "run.log"
    with log.open("w", encoding="utf-8") as fh:
        code = subprocess.call([python, *args], cwd=checkout, env=env, stdout=fh, stderr=subprocess.STDOUT)
    if code != 0:
        raise DTDialogError(f"{evaluation.name} failed on {checkout} (exit {code}); see {log}")


def markdown(report: dict[str, Any]) -> str:
    lines = ["# Behaviour A/B", "", f"Command: `{report['command']}`", "",
             f"Before {report['before']}; after {report['after']}.", "",
             "| evaluation | values compared | differing |", "|---|---|---|"]
    for name, row in report["evaluations"].items():
        lines.append(f"| {name} | {row.get('compared', '-')} | {row.get('skipped') or len(row['differing'])} |")
    for name, row in report["evaluations"].items():
        for diff in row.get("differing", [])[:20]:
            lines.append(f"- {name}: `{diff['key']}` {diff['before']!r} -> {diff['after']!r}")
    setup = [(name, d) for name, row in report["evaluations"].items() for d in row.get("setup", [])]
    if setup:
        lines += ["", "Set-up recorded differently (not behaviour):", ""]
        lines += [f"- {name}: `{d['key']}` {d['before']!r} -> {d['after']!r}" for name, d in setup[:30]]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace, *, command: str) -> dict[str, Any]:
    checkouts = {arm: check_checkout(getattr(args, arm), arm) for arm in ARMS}
    # each arm runs in its own checkout: paths given relative to here must not land there
    out, data = check_out_dir(args.out).resolve(), args.data_dir.resolve()
    chosen = [e for e in EVALUATIONS if not args.only or e.name in args.only]
    report: dict[str, Any] = {"command": command, **{arm: f"{checkouts[arm]} ({git_commit(checkouts[arm])})"
                                                     for arm in ARMS}, "evaluations": {}}
    for evaluation in tqdm(chosen, desc="behaviour A/B", unit="evaluation", disable=args.no_progress):
        python = args.bench_python if evaluation.bench else sys.executable
        if python is None and not args.reuse:
            report["evaluations"][evaluation.name] = {"skipped": "no --bench-python", "differing": []}
            continue
        for arm in ARMS:
            if not args.reuse:
                run_arm(evaluation, checkouts[arm], out / arm / evaluation.name, data=data, python=python,
                        home=out / arm / "home")
        values = {arm: {} for arm in ARMS}
        for arm in ARMS:
            for name in evaluation.reports:
                values[arm].update({f"{name}:{k}": v for k, v in read_report(out / arm / evaluation.name / name).items()})
        report["evaluations"][evaluation.name] = compare(values["before"], values["after"])
    atomic_write_text(out / "results.json", json.dumps(report, indent=2, default=str) + "\n")
    atomic_write_text(out / "results.md", markdown(report))
    return report


def add_arguments(ap: argparse.ArgumentParser) -> None:
    names = ", ".join(e.name for e in EVALUATIONS)
    ap.add_argument("--before", type=Path, required=True, help="the checkout before the change")
    ap.add_argument("--after", type=Path, required=True, help="the checkout after it")
    ap.add_argument("--only", type=lambda s: [x.strip() for x in s.split(",") if x.strip()], default=None,
                    help=f"comma-separated evaluations to run (default all: {names})")
    ap.add_argument("--data-dir", type=Path, default=Path(os.environ.get("DTDIALOG_SHARED_DATA", "../shared/data")),
                    help="shared data directory (default $DTDIALOG_SHARED_DATA or ../shared/data)")
    ap.add_argument("--bench-python", default=None,
                    help="a Python with the [bench] extra for the Haystack bench (default: skip it)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    ap.add_argument("--reuse", action="store_true",
                    help="compare the reports an earlier run left in --out instead of running the evaluations")
    ap.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.behaviour_ab", description=__doc__.splitlines()[0])
    add_arguments(ap)
    args = ap.parse_args(argv)
    unknown = sorted(set(args.only or ()) - {e.name for e in EVALUATIONS})
    if unknown:
        ap.error(f"unknown evaluation(s) {', '.join(unknown)}; choose from {', '.join(e.name for e in EVALUATIONS)}")
    command = "python -m eval.behaviour_ab " + " ".join(argv if argv is not None else sys.argv[1:])
    return one_line_errors(lambda: _report(run(args, command=command)))


def _report(report: dict[str, Any]) -> int:
    print(markdown(report))
    return 1 if any(row.get("differing") for row in report["evaluations"].values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
