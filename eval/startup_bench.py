"""Start-up of ``dtdialog chat``: seconds to the first prompt on a first start (empty home) and a later one.

``python -m eval.startup_bench --runs 5 [--pythonpath DIR] [--out FILE.json]``

Each run makes a fresh temporary ``DTDIALOG_HOME``, starts ``dtdialog chat --quiet`` there in a pseudo-terminal
(as a user would) and times, from the launch:

* ``prompt``: until the first ``you>`` prompt is on the terminal (what the issue's targets are about);
* ``reply``: until the bot has answered one question typed at that prompt (``--question``), so work moved
  off the prompt's path but still needed by the first turn is seen too;
* ``cpu``: the CPU seconds the whole chat used (start, that turn, exit), which other jobs' load barely moves.

Then it starts a second chat in the same home (the later start). ``--pythonpath`` times another checkout
(e.g. ``git archive`` of an older commit) in the same run of the bench, for before/after figures.
``--hide-torch`` makes ``import torch`` fail in the chat (a shadowing package first on its path), as on an
install without the ``[train]`` extra: spaCy's thinc otherwise imports torch whenever it is installed.

``--breakdown`` (the current checkout only) also times, in a fresh process per start, each step of what the
chat does: imports, the parser, the index (build, install of the shipped files, or open), the ranker
(model, dense vectors, SG phrases, session store), spaCy, the query encoder, the domain profile and the
collector freeze. The load average before and after is recorded: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import resource
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from eval.entry import one_line_errors
from eval.latency import percentile
from parsers.errors import InputError
from parsers.files import atomic_write_text

REPO = Path(__file__).resolve().parents[1]
PROMPT = b"you> "
DEFAULT_QUESTION = "my car overheats in traffic but is fine on the highway"


def _read_until(fd: int, seen: bytearray, needle: bytes, count: int, deadline: float) -> bool:
    """Read the terminal into ``seen`` until ``needle`` occurs ``count`` times; False at the deadline or EOF."""
    while seen.count(needle) < count:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return False
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            return False
        if not chunk:
            return False
        seen.extend(chunk)
    return True


def time_chat(home: Path, *, pythonpath: str, question: str, timeout: float) -> dict[str, Any]:
    """Start one ``dtdialog chat`` in ``home`` on a pseudo-terminal; return its prompt and reply times (s).

    ``pythonpath``: the child's ``PYTHONPATH`` (the checkout, after the torch shadow with ``--hide-torch``).
    """
    env = {**os.environ, "DTDIALOG_HOME": str(home), "PYTHONPATH": pythonpath}
    master, slave = pty.openpty()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "dtdialog", "chat", "--quiet"], stdin=slave, stdout=slave,
                            stderr=slave, env=env, cwd=pythonpath.split(os.pathsep)[-1], close_fds=True)
    os.close(slave)
    seen = bytearray()
    result: dict[str, Any] = {"prompt": None, "reply": None}
    try:
        deadline = started + timeout
        if _read_until(master, seen, PROMPT, 1, deadline):
            result["prompt"] = round(time.monotonic() - started, 3)
            os.write(master, question.encode() + b"\n")
            if _read_until(master, seen, PROMPT, 2, deadline):
                result["reply"] = round(time.monotonic() - started, 3)
            os.write(master, b"quit\n")
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    finally:
        os.close(master)
    result["exit_code"] = proc.returncode
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the one child waited for since ``before``
    # CPU seconds of the whole chat (start, one turn, exit): unlike wall time, barely moved by other jobs' load
    result["cpu"] = round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2)
    if result["reply"] is None:
        result["output_tail"] = seen[-400:].decode("utf-8", "replace")
    return result


def summary(values: list[float | None]) -> dict[str, Any]:
    """Return p50/p95/max of the measured values (seconds) and how many runs failed to get there."""
    got = [v for v in values if v is not None]
    return {"p50": round(percentile(got, 50), 2) if got else None, "p95": round(percentile(got, 95), 2) if got else None,
            "max": max(got) if got else None, "failed": len(values) - len(got), "all": values}


# --- where the time goes (one fresh process per start) -------------------------------------------------------
def phases() -> dict[str, float]:
    """Run the chat's start-up steps one by one in this (fresh) process; return seconds per step."""
    times: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        times[name] = round(now - clock, 3)
        clock = now

    from dtdialog.cli import build_parser
    from dtdialog.runtime.gc_tuning import freeze_loaded
    from dtdialog.runtime.paths import sessions_path
    from dtdialog.setup.assembly import EngineSpec, build_engine
    from dtdialog.setup.index_location import open_spec_index
    from parsers.base import get_parser
    build_parser()  # what ``dtdialog`` does first: import every command module and make the argument parser
    lap("imports")
    parser = get_parser(None)
    lap("parser")
    spec = EngineSpec(sessions_path=str(sessions_path()))
    index, path, _, _ = open_spec_index(spec, parser, progress=False)
    lap("index_build_or_open")
    engine = build_engine(EngineSpec(sessions_path=spec.sessions_path), parser=parser, index=index, index_path=path,
                          progress=False, warm=False)
    lap("ranker_and_sessions")
    parser.parse("The car starts.")
    lap("spacy_load")
    if engine.ranker == "learned":
        from dtdialog.ranking.factory import warm_up_scorer

        warm_up_scorer(engine.selector.scorer)
    lap("encoder_load")
    engine.manager.scope.profile()
    lap("domain_profile")
    freeze_loaded()
    lap("gc_freeze")
    engine.close()
    return times


def time_phases(home: Path, *, pythonpath: str, timeout: float) -> dict[str, float]:
    """Return ``phases()`` measured in a fresh process over ``home``."""
    env = {**os.environ, "DTDIALOG_HOME": str(home), "PYTHONPATH": pythonpath}
    done = subprocess.run([sys.executable, "-m", "eval.startup_bench", "--phases-child"], env=env, cwd=str(REPO),
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise InputError(f"the breakdown child failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench(*, runs: int, pythonpath: Path, question: str, timeout: float, breakdown: bool,
          hide_torch: bool = False) -> dict[str, Any]:
    """Return the report of ``runs`` first and later starts (and the per-step breakdown when asked)."""
    shadow = Path(tempfile.mkdtemp(prefix="dtdialog-no-torch-"))
    try:
        if hide_torch:
            (shadow / "torch").mkdir()
            (shadow / "torch" / "__init__.py").write_text('raise ImportError("torch hidden by eval.startup_bench")\n')
        path = os.pathsep.join([*([str(shadow)] if hide_torch else []), str(pythonpath)])
        report = _bench(runs=runs, path=path, question=question, timeout=timeout, breakdown=breakdown)
    finally:
        shutil.rmtree(shadow, ignore_errors=True)
    return {"pythonpath": str(pythonpath), "torch_hidden": hide_torch, **report}


def _bench(*, runs: int, path: str, question: str, timeout: float, breakdown: bool) -> dict[str, Any]:
    load_before = os.getloadavg()
    first: list[dict[str, Any]] = []
    later: list[dict[str, Any]] = []
    steps: dict[str, list[dict[str, float]]] = {"first": [], "later": []}
    for _ in range(runs):
        # the home itself does not exist yet, as on a fresh machine (~/.cache/dtdialog)
        scratch = Path(tempfile.mkdtemp(prefix="dtdialog-startup-"))
        try:
            first.append(time_chat(scratch / "home", pythonpath=path, question=question, timeout=timeout))
            later.append(time_chat(scratch / "home", pythonpath=path, question=question, timeout=timeout))
            if breakdown:
                steps["first"].append(time_phases(scratch / "phases", pythonpath=path, timeout=timeout))
                steps["later"].append(time_phases(scratch / "phases", pythonpath=path, timeout=timeout))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    report: dict[str, Any] = {
        "runs": runs, "question": question, "cpu_count": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "first_start": {"prompt_s": summary([r["prompt"] for r in first]), "reply_s": summary([r["reply"] for r in first]),
                        "cpu_s": summary([r["cpu"] for r in first])},
        "later_start": {"prompt_s": summary([r["prompt"] for r in later]), "reply_s": summary([r["reply"] for r in later]),
                        "cpu_s": summary([r["cpu"] for r in later])},
        "failures": [r for r in first + later if r["reply"] is None or r["exit_code"] != 0],
    }
    if breakdown:
        report["breakdown_s"] = {kind: {name: round(percentile([s[name] for s in runs_], 50), 3) for name in runs_[0]}
                                 for kind, runs_ in steps.items() if runs_}
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.startup_bench", description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="first + later starts to time (default 3)")
    ap.add_argument("--pythonpath", type=Path, default=REPO, help="checkout to time (default: this one)")
    ap.add_argument("--question", default=DEFAULT_QUESTION, help="the question typed at the first prompt")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds one start may take before it is killed")
    ap.add_argument("--breakdown", action="store_true", help="also time each start-up step (this checkout only)")
    ap.add_argument("--hide-torch", action="store_true",
                    help="make 'import torch' fail in the chat, as on an install without the [train] extra")
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON report here")
    ap.add_argument("--phases-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    def run() -> int:
        if args.phases_child:
            print(json.dumps(phases()))
            return 0
        if args.runs < 1:
            raise InputError("--runs must be at least 1")
        if args.breakdown and args.pythonpath.resolve() != REPO:
            raise InputError("--breakdown times this checkout's own steps; drop it with --pythonpath")
        if not (args.pythonpath / "dtdialog" / "__init__.py").is_file():
            raise InputError(f"--pythonpath {args.pythonpath} is not a dtdialog checkout")
        report = bench(runs=args.runs, pythonpath=args.pythonpath.resolve(), question=args.question,
                       timeout=args.timeout, breakdown=args.breakdown, hide_torch=args.hide_torch)
        text = json.dumps(report, indent=2)
        if args.out is not None:
            atomic_write_text(args.out, text + "\n")
        print(text)
        return 0 if not report["failures"] else 1

    return one_line_errors(run)


if __name__ == "__main__":
    sys.exit(main())
