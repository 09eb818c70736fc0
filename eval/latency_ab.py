"""Turn latency of two checkouts of the engine, A/B in one run, on the turns both give: ``python -m eval.latency_ab``.

    git worktree add ../before <rev>
    python -m eval.latency_ab --before ../before --after . [--pairs 3] [--answers 10000] [--out runs/latency_ab]

``eval.hybrid_bench`` times a random 40 of the built-in questions, and a turn kind's p95 moves with the turns it
holds: a version that abstains on more first questions has fewer follow-ups, and other ones. Here both checkouts time
every built-in question's first turn and its logged follow-up (``eval/latency_turns.py``, run as a child process with
the checkout first on the path) over the same index of ``--answers`` answers (``eval.hybrid_bench``'s cached one),
and the percentiles are taken over the turns both ran: every first turn, and the follow-ups both reached. The arms
alternate order pair by pair, so load drift on a shared machine hits both alike; each arm keeps its own data home.
Both checkouts need the compiled SG alignment (``pip install -e .`` builds it), or the slower Python one is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from parsers.errors import DTDialogError, InputError
from parsers.files import atomic_write_text, check_out_dir

ARMS = ("before", "after")
CHILD = Path(__file__).resolve().parent / "latency_turns.py"
DEFAULT_OUT = Path("runs/latency_ab")


def check_checkout(path: Path, arm: str) -> Path:
    path = path.expanduser().resolve()
    if not (path / "dtdialog" / "__init__.py").is_file():
        raise InputError(f"--{arm} {path} is not a dtdialog checkout (no dtdialog/__init__.py)")
    return path


def arm_index(index: Path, work: Path) -> Path:
    """Copy the index and its side files (vectors, SG phrases) into ``work``: an arm may re-encode its own vectors."""
    work.mkdir(parents=True, exist_ok=True)
    for source in index.parent.glob(index.name + "*"):
        target = work / source.name
        if not target.exists():
            shutil.copy2(source, target)
    return work / index.name


def run_arm(checkout: Path, index: Path, out: Path, home: Path) -> dict[str, list]:
    """Time the turns on ``checkout``'s code; a failure is one line naming the child's log."""
    log = out.with_suffix(".log")
    env = {**os.environ, "PYTHONPATH": str(checkout), "DTDIALOG_HOME": str(home)}
    with log.open("w", encoding="utf-8") as fh:
        code = subprocess.call([sys.executable, str(CHILD), "--index", str(index), "--out", str(out)], cwd=checkout,
                               env=env, stdout=fh, stderr=subprocess.STDOUT)
    if code != 0:
        raise DTDialogError(f"timing the turns of {checkout} failed (exit {code}); see {log}")
    return json.loads(out.read_text(encoding="utf-8"))


def matched(before: dict[str, list], after: dict[str, list]) -> dict[str, tuple[list[float], list[float]]]:
    """Return turn kind -> (before ms, after ms) over the turns both arms ran."""
    both = [k for k in before if k in after]
    follow = [k for k in both if before[k][1] is not None and after[k][1] is not None]
    firsts = ([before[k][0] for k in both], [after[k][0] for k in both])
    follows = ([before[k][1] for k in follow], [after[k][1] for k in follow])
    return {"first_turn": firsts, "follow_up_turn": follows,
            "all_turns": (firsts[0] + follows[0], firsts[1] + follows[1])}


def pair_summary(before: dict[str, list], after: dict[str, list]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, (b, a) in matched(before, after).items():
        if not b:
            continue
        p95b, p95a = float(np.percentile(b, 95)), float(np.percentile(a, 95))
        out[kind] = {"turns": len(b), "p95_before_ms": round(p95b, 2), "p95_after_ms": round(p95a, 2),
                     "p95_ratio": round(p95a / p95b, 4), "mean_ratio": round(float(np.mean(a) / np.mean(b)), 4)}
    return out


def summarise(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """Return, per turn kind, the median over pairs of the p95 and mean ratios, and each pair's p95 ratio."""
    kinds = sorted({k for p in pairs for k in p})
    return {k: {"median_p95_ratio": round(float(np.median([p[k]["p95_ratio"] for p in pairs if k in p])), 4),
                "median_mean_ratio": round(float(np.median([p[k]["mean_ratio"] for p in pairs if k in p])), 4),
                "p95_ratios": [p[k]["p95_ratio"] for p in pairs if k in p],
                "turns": pairs[0][k]["turns"] if k in pairs[0] else 0} for k in kinds}


def kinds_of(turns: dict[str, list]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for _, _, kind in turns.values():
        counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items()))


def markdown(report: dict[str, Any]) -> str:
    lines = ["# Turn latency, A/B on matched turns", "", f"Command: `{report['command']}`", "",
             f"Before: `{report['before']}`; after: `{report['after']}`; index of {report['answers']} answers; "
             f"{report['pairs']} pairs, arms alternating; load average {report['load_average']}.", "",
             "| turn kind | turns | p95 after / before, median of the pairs | each pair | mean after / before |",
             "|---|---|---|---|---|"]
    for kind, s in report["summary"].items():
        lines.append(f"| {kind} | {s['turns']} | {s['median_p95_ratio']:.3f} | "
                     f"{', '.join(f'{r:.3f}' for r in s['p95_ratios'])} | {s['median_mean_ratio']:.3f} |")
    lines += ["", f"First replies, before: {report['first_reply_kinds']['before']}; "
              f"after: {report['first_reply_kinds']['after']}."]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace, *, command: str) -> dict[str, Any]:
    from eval.hybrid_bench import DEFAULT_CACHE, assemble_corpus, cached_index

    if args.pairs < 1 or args.answers < 1:
        raise InputError("--pairs and --answers must be at least 1")
    checkouts = {"before": check_checkout(args.before, "before"), "after": check_checkout(args.after, "after")}
    out = check_out_dir(Path(args.out)).resolve()  # absolute: each child runs in its own checkout
    out.mkdir(parents=True, exist_ok=True)
    corpus = assemble_corpus(answers=args.answers, data_dir=args.data_dir)
    index, _ = cached_index(corpus, cache=args.cache or DEFAULT_CACHE, progress=not args.no_progress)
    indexes = {arm: arm_index(index, out / arm / "index") for arm in ARMS}
    load_start = os.getloadavg()[0]
    pairs, last = [], {}
    # the order alternates pair by pair: before-after, after-before, ...
    runs = [(i, arm) for i in range(args.pairs) for arm in (ARMS if i % 2 == 0 else ARMS[::-1])]
    timed: dict[int, dict[str, dict]] = {}
    for i, arm in tqdm(runs, desc="timing", unit="run", file=sys.stderr, disable=args.no_progress):
        timed.setdefault(i, {})[arm] = last[arm] = run_arm(checkouts[arm], indexes[arm], out / arm / f"turns-{i}.json",
                                                           out / arm / "home")
    for i in range(args.pairs):
        pairs.append(pair_summary(timed[i]["before"], timed[i]["after"]))
    report = {"command": command, "before": str(checkouts["before"]), "after": str(checkouts["after"]),
              "answers": args.answers, "pairs": args.pairs,
              "load_average": [round(load_start, 2), round(os.getloadavg()[0], 2)],
              "first_reply_kinds": {arm: kinds_of(last[arm]) for arm in ARMS},
              "per_pair": pairs, "summary": summarise(pairs)}
    atomic_write_text(out / "results.json", json.dumps(report, indent=2) + "\n")
    atomic_write_text(out / "results.md", markdown(report))
    return report


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--before", type=Path, required=True, help="the checkout measured first (e.g. a git worktree)")
    ap.add_argument("--after", type=Path, required=True, help="the checkout compared with it")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--answers", type=int, default=10_000)
    ap.add_argument("--data-dir", type=Path, default=None, help="shared data directory (default: ../shared/data)")
    ap.add_argument("--cache", type=Path, default=None, help="where eval.hybrid_bench keeps its built index")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--no-progress", action="store_true")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.latency_ab", description=__doc__.split("\n")[0])
    add_arguments(ap)
    args = ap.parse_args(argv)
    try:
        report = run(args, command="python -m eval.latency_ab " + " ".join(argv if argv is not None else sys.argv[1:]))
    except DTDialogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(markdown(report))
    print(Path(args.out) / "results.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
