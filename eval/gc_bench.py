"""What full garbage collections cost a long-running server: ``python -m eval.gc_bench --index PATH``.

    python -m eval.gc_bench --index PATH [--fill 45000] [--questions 500] [--modes survivors,load-only]
                            [--model hybrid+dt] [--parser rules] [--data-dir DIR] [--json OUT] [--plot OUT.png]

A turn benchmark's few hundred turns from a fresh process never meet a server's caches full. This one loads the
learned-ranker engine over an index (one that ``eval.scale_bench --keep`` built, or any), first analyses ``--fill``
stored answers picked at random (what hours of traffic leave in the answer-analysis cache), then times
``--questions`` opening turns (the real mechanics and Reddit questions of the shared data; the built-in corpus's
without it). Each mode runs in a fresh process:

* ``survivors``: what serving processes do (``dtdialog.runtime.gc_tuning.freeze_loaded``): the engine frozen at load and
  the survivors of every full collection frozen after it;
* ``load-only``: the engine frozen once at load, and nothing after (sessions 8-11).

Reported per mode: the turns' p50/p95/p99/max, each full collection's pause (timed with ``gc.callbacks``) and their
share of the turns' time, the objects the collector still tracks at the end, and the objects the freezes kept
from being collected: garbage in reference cycles, found by one collection once everything is unfrozen (after a
collection that took the ordinary garbage).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from eval.report import save_figure
from parsers.errors import InputError
from parsers.files import atomic_write_text

MODES = ("survivors", "load-only")


def questions_for(data_dir: Path | None, count: int) -> tuple[list[str], str]:
    """Return ``count`` + 3 questions (3 warm the engine up) and where they come from."""
    from data.builtin import load_builtin_corpus

    if data_dir is not None and (data_dir / "mechanics_qa" / "mechanics_qa_dev.jsonl").is_file():
        from eval.ann_bench import real_texts

        return real_texts(data_dir)[1][:count + 3], "mechanics and Reddit questions (shared data)"
    asked = [d.question for d in load_builtin_corpus()]
    return (asked * (1 + (count + 3) // len(asked)))[:count + 3], "built-in corpus questions (repeated)"


class FullCollections:
    """Times every full (generation 2) collection through ``gc.callbacks``."""

    def __init__(self) -> None:
        self.pauses_ms: list[float] = []
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.pauses_ms.append((time.perf_counter() - self._start) * 1000)


def fill_cache(selector, count: int, *, progress: bool) -> int:
    """Analyse ``count`` stored answers picked at random (as turns meeting them would); return how many."""
    from tqdm import tqdm

    ids = selector.index.ids()
    random.Random(0).shuffle(ids)
    ids = ids[:count]
    done = 0
    with tqdm(total=len(ids), desc="filling the analysis cache", unit="answer", file=sys.stderr,
              disable=not progress, dynamic_ncols=True) as bar:
        for start in range(0, len(ids), 500):
            for doc in selector.index.get_many(ids[start:start + 500]).values():
                selector.answer_tree(doc)  # analyses the answer, as a turn that meets it does
                done += 1
            bar.update(min(500, len(ids) - start))
    return done


def run_mode(mode: str, *, index: Path, fill: int, questions: int, model: str, parser_name: str,
             data_dir: Path | None, progress: bool) -> dict[str, Any]:
    """Time the turns of one mode in this process (which it leaves with its collector settings changed)."""
    from dtdialog.runtime.gc_tuning import freeze_loaded, freeze_survivors
    from eval.latency import summarize
    from eval.scale_bench import open_engine, rss_mb

    asked, source = questions_for(data_dir, questions)
    with tempfile.TemporaryDirectory(prefix="dtq-gc-bench-") as tmp:
        engine = open_engine(index, model=model, parser_name=parser_name, sessions_dir=Path(tmp))
        freeze_loaded()
        if mode == "load-only":
            gc.callbacks.remove(freeze_survivors)
        manager = engine.manager
        filled = fill_cache(manager.selector, fill, progress=progress)
        for text in asked[:3]:
            manager.handle(session_id=manager.start_session(), text=text)
        collections = FullCollections()
        gc.callbacks.insert(0, collections)  # before the freeze, so a pause is the collection's own
        walls = []
        for text in asked[3:]:
            start = time.perf_counter()
            manager.handle(session_id=manager.start_session(), text=text)
            walls.append((time.perf_counter() - start) * 1000)
        gc.callbacks.remove(collections)
        tracked = len(gc.get_objects())  # what the next full collection would scan
        memory = rss_mb()
        engine.close()
    gc.collect()  # the ordinary garbage, so that what the next collection finds was kept by the freezes
    frozen = gc.get_freeze_count()
    gc.unfreeze()
    kept = gc.collect()
    return {"mode": mode, "questions": source, "filled": filled, "turns": summarize(walls), "walls_ms": walls,
            "full_collections_ms": [round(p, 1) for p in collections.pauses_ms],
            "collection_share": round(sum(collections.pauses_ms) / max(sum(walls), 1e-9), 4),
            "tracked_objects": tracked, "frozen_objects": frozen, "kept_by_freezes": kept,
            "rss_after_turns_mb": memory["rss_mb"], "peak_rss_mb": memory["peak_rss_mb"]}


def plot(results: list[dict[str, Any]], path: Path) -> None:
    """Write each mode's turn times in order, so the full collections show as spikes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4))
    for r in reversed(results):  # the serving mode drawn last, over the other
        pauses = r["full_collections_ms"]
        ax.plot(r["walls_ms"], linewidth=0.8, label=f"{r['mode']}: p99 {r['turns']['p99_ms']:.0f} ms, "
                f"max {r['turns']['max_ms']:.0f} ms; full collections {', '.join(f'{p:.0f}' for p in pauses)} ms")
    ax.set_xlabel("turn (one opening question each)")
    ax.set_ylabel("turn time (ms)")
    ax.set_title(f"turns with {results[0]['filled']} answers analysed beforehand")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def _print(results: list[dict[str, Any]]) -> None:
    for r in results:
        t = r["turns"]
        print(f"{r['mode']:>10}: {t['turns']} turns ({r['questions']}, {r['filled']} answers analysed first): "
              f"p50 {t['p50_ms']} / p95 {t['p95_ms']} / p99 {t['p99_ms']} / max {t['max_ms']} ms")
        print(f"{'':>12}full collections {r['full_collections_ms']} ms, {100 * r['collection_share']:.1f}% of the "
              f"turns' time; tracked {r['tracked_objects']:,}, frozen {r['frozen_objects']:,}, "
              f"kept by the freezes {r['kept_by_freezes']}; RSS {r['rss_after_turns_mb']} MB after the turns, "
              f"peak {r['peak_rss_mb']} MB")


def main(argv: list[str] | None = None) -> int:
    from eval.entry import one_line_errors
    from eval.scale_bench import MODELS

    ap = argparse.ArgumentParser(prog="python -m eval.gc_bench", description=__doc__.split("\n")[0])
    ap.add_argument("--index", type=Path, required=True, help="an answer index (SQLite file)")
    ap.add_argument("--fill", type=int, default=0, help="stored answers analysed before the turns")
    ap.add_argument("--questions", type=int, default=500)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--model", choices=list(MODELS), default="hybrid+dt")
    ap.add_argument("--parser", default="rules")
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--plot", type=Path, default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)  # one mode's timing process
    args = ap.parse_args(argv)
    return one_line_errors(lambda: _main(args))


def _main(args: argparse.Namespace) -> int:
    from eval.datasets import default_data_dir

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes):
        raise InputError(f"--modes takes {' and/or '.join(MODES)}, got {args.modes!r}")
    if args.fill < 0 or args.questions < 1:
        raise InputError("--fill must be at least 0 and --questions at least 1")
    if not args.index.is_file():
        raise InputError(f"no index at {args.index}")
    data_dir = args.data_dir or default_data_dir()
    options = dict(index=args.index, fill=args.fill, questions=args.questions, model=args.model,
                   parser_name=args.parser, data_dir=data_dir)
    if args.child is not None:
        print(json.dumps(run_mode(args.child, progress=False, **options)))
        return 0
    results = [_child(mode, args) for mode in modes]
    _print(results)
    if args.json:
        atomic_write_text(args.json, json.dumps(results, indent=1) + "\n")
    if args.plot:
        plot(results, args.plot)
    return 0


def _child(mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """Run one mode in a fresh process: the collector's state is process-wide."""
    argv = [sys.executable, "-m", "eval.gc_bench", "--child", mode, "--index", str(args.index), "--fill",
            str(args.fill), "--questions", str(args.questions), "--model", args.model, "--parser", args.parser]
    if args.data_dir is not None:
        argv += ["--data-dir", str(args.data_dir)]
    child = subprocess.run(argv, capture_output=True, text=True, check=False)
    if child.returncode != 0:
        raise InputError(f"the {mode} process failed: {(child.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(child.stdout)


if __name__ == "__main__":
    raise SystemExit(main())
