"""End to end at scale: build an index of N distinct real-text answers, then time learned-ranker turns on it.

    python -m eval.scale_bench [--answers 100000] [--questions 200] [--parser rules] [--workdir DIR]
                               [--data-dir DIR] [--model hybrid+dt|hybrid] [--json OUT] [--keep]

**Answers.** The distinct real answers of the built-in corpus and the shared datasets (mechanics,
Twitter, IRC; ``eval.hybrid_bench.assemble_corpus``), then, because real answers run out long before
100k, **recombined answers**: each joins 2 or 3 real sentences of the shared data (``eval.ann_bench.real_texts``:
answers, turns, posts, FAQ, GUM, 2carpros fragments) drawn at random, so every text is distinct and made of
real language but is not an answer anyone wrote. The output says how many of each.

**Build.** ``index.builder.build_index(..., dense=True)`` with ``--parser`` (``rules`` keeps 100k feasible on
2 cores): parsing, the SQLite FTS5 index, the int8 ONNX MiniLM vectors, the SG phrases, and above
``DTDIALOG_ANN_THRESHOLD`` answers the HNSW graph when usearch is installed. Reported: build seconds, answers/s,
bytes on disk (index file plus every side file).

**Turns.** A fresh process (so its memory is the engine's, not the build's) loads the learned-ranker engine
over the index, warms up on 3 questions, and times ``--questions`` real customer questions (the mechanics
questions, title + body), each opening a new session: p50/p95/p99 ms, and its resident memory (RSS, and the
peak) once loaded and after the turns.

Runs unattended: progress bars on stderr, the result as JSON (``--json``), the work folder removed at the end
unless ``--keep``. On a shared machine run it under ``nice -n 10``; the load average is in the output.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from parsers.errors import InputError
from parsers.files import atomic_write_text

MODELS = {"hybrid+dt": "ranker-v1.joblib", "hybrid": "ranker-v1-hybrid.joblib"}


def scale_corpus(answers: int, data_dir: Path, *, seed: int = 0) -> tuple[list, dict[str, Any]]:
    """Return ``answers`` distinct answers (``PoolAnswer``): the real ones, then recombined real sentences."""
    from eval.ann_bench import real_texts
    from eval.datasets import PoolAnswer
    from eval.hybrid_bench import assemble_corpus

    corpus = assemble_corpus(answers=answers, data_dir=data_dir)
    chosen = list(corpus.answers[:corpus.distinct])
    info: dict[str, Any] = {"real_answers": len(chosen), "real_by_source": corpus.sources,
                            "missing_datasets": corpus.missing}
    sentences, _, _ = real_texts(data_dir)
    rng = random.Random(seed)
    seen = {" ".join(a.text.split()).lower() for a in chosen}
    k = 0
    while len(chosen) < answers:
        text = " ".join(rng.sample(sentences, rng.choice((2, 3))))
        if text.lower() in seen:
            continue
        seen.add(text.lower())
        chosen.append(PoolAnswer(id=f"recombined/{k}#1", text=text, dialogue_id=f"recombined/{k}", position=1))
        k += 1
    info["recombined_answers"] = k
    info["recombined_how"] = "2 or 3 random real sentences of the shared data joined"
    return [replace(a) for a in chosen], info


def disk_bytes(index_path: Path) -> dict[str, int]:
    """Return the bytes of the index file (with its WAL) and of each kind of side file beside it."""
    from index.index_files import side_files

    out = {"index": sum(p.stat().st_size for p in (index_path, Path(f"{index_path}-wal")) if p.is_file())}
    kinds = {".npy": "dense vectors", ".ids.json": "dense ids+stats", ".ann": "ann graph", ".json": "sg phrases"}
    for paths in side_files(index_path).values():
        for p in paths:
            kind = next(v for k, v in kinds.items() if p.name.endswith(k))
            out[kind] = out.get(kind, 0) + p.stat().st_size
    out["total"] = sum(out.values())
    return out


def build(corpus: list, out: Path, *, parser_name: str, processes: int) -> dict[str, Any]:
    """Build the index with dense vectors and SG phrases at ``out``; return the timings."""
    from eval.methods.pool_index import pool_dialogues
    from index.builder import build_index
    from parsers.base import get_parser

    t0 = time.perf_counter()
    report = build_index(dialogues=pool_dialogues(corpus), parser=get_parser(parser_name), backend="sqlite",
                         out=out, progress=True, dense=True, n_process=processes)
    seconds = time.perf_counter() - t0
    return {"build_seconds": round(seconds, 1), "indexed": report.indexed, "skipped": len(report.skipped),
            "answers_per_second": round(report.indexed / seconds, 1), "parser": parser_name, "processes": processes}


def rss_mb() -> dict[str, float]:
    fields = {}
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                fields[line.split(":")[0]] = round(int(line.split()[1]) / 1024, 1)
    return {"rss_mb": fields.get("VmRSS", float("nan")), "peak_rss_mb": fields.get("VmHWM", float("nan"))}


def open_engine(index_path: Path, *, model: str, parser_name: str, sessions_dir: Path):
    """Return the learned-ranker engine over ``index_path`` as a serving process builds it (sessions in
    ``sessions_dir``): the engine every timing process of the scale benchmarks loads."""
    from dtdialog.ranking.learned_scorer import MODELS_DIR
    from dtdialog.setup.assembly import EngineSpec, build_engine
    from index.dense import DenseEncoder
    from index.sqlite_index import SqliteIndex
    from parsers.base import get_parser

    spec = EngineSpec(ranker="learned", ranker_model=str(MODELS_DIR / MODELS[model]),
                      sessions_path=str(sessions_dir / "sessions.sqlite"))
    return build_engine(spec, progress=False, parser=get_parser(parser_name), index=SqliteIndex(index_path),
                        index_path=index_path, encoder=DenseEncoder())


def measure(index_path: Path, *, questions: int, data_dir: Path, model: str, parser_name: str) -> dict[str, Any]:
    """Load the learned-ranker engine over ``index_path`` and time one opening turn per real question."""
    from dtdialog.runtime.gc_tuning import freeze_loaded
    from eval.ann_bench import real_texts
    from eval.latency import sg_alignment, summarize

    _, asked, _ = real_texts(data_dir)
    asked = asked[:questions + 3]
    before = rss_mb()
    with tempfile.TemporaryDirectory(prefix="dtq-scale-bench-") as tmp:
        t0 = time.perf_counter()
        engine = open_engine(index_path, model=model, parser_name=parser_name, sessions_dir=Path(tmp))
        freeze_loaded()
        load_s = time.perf_counter() - t0
        manager = engine.manager
        for text in asked[:3]:
            manager.handle(session_id=manager.start_session(), text=text)
        loaded = rss_mb()
        ms, cpu = [], []  # cpu: the process's CPU time per turn, which a busy machine inflates far less than wall time
        load_before = os.getloadavg()[0]
        for text in asked[3:]:
            sid = manager.start_session()
            start, cpu_start = time.perf_counter(), time.process_time()
            manager.handle(session_id=sid, text=text)
            ms.append((time.perf_counter() - start) * 1000)
            cpu.append((time.process_time() - cpu_start) * 1000)
        after = rss_mb()
        dense = getattr(getattr(engine.scorer, "extractor", None), "dense", None)
        store = getattr(dense, "store", None)
        engine.close()
    return {"questions": len(ms), "turns": summarize(ms), "cpu_per_turn": summarize(cpu),
            "engine_load_seconds": round(load_s, 2),
            "rss_before_load_mb": before["rss_mb"], "rss_loaded_mb": loaded["rss_mb"],
            "rss_after_turns_mb": after["rss_mb"], "peak_rss_mb": after["peak_rss_mb"],
            "dense_store_answers": len(store) if store is not None else 0,
            "ann_used": getattr(store, "ann", None) is not None,
            "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)], "model": model,
            "sg_alignment": sg_alignment()}


def run(*, answers: int, questions: int, parser_name: str, processes: int, data_dir: Path, workdir: Path,
        model: str) -> dict[str, Any]:
    """Build, then measure the turns in a fresh process; return everything."""
    corpus, info = scale_corpus(answers, data_dir)
    path = workdir / "answers.sqlite"
    result: dict[str, Any] = {"answers": answers, **info, "load_average_start": round(os.getloadavg()[0], 2),
                              "cpu_count": os.cpu_count()}
    result["build"] = build(corpus, path, parser_name=parser_name, processes=processes)
    result["disk_bytes"] = disk_bytes(path)
    child = subprocess.run([sys.executable, "-m", "eval.scale_bench", "--measure", str(path), "--questions",
                            str(questions), "--data-dir", str(data_dir), "--model", model, "--parser", parser_name],
                           capture_output=True, text=True, check=False)
    if child.returncode != 0:
        raise InputError(f"the timing process failed: {(child.stderr.strip().splitlines() or ['?'])[-1]}")
    result["serving"] = json.loads(child.stdout)
    return result


def _print(r: dict[str, Any]) -> None:
    b, s, d = r["build"], r["serving"], r["disk_bytes"]
    print(f"{r['answers']} answers: {r['real_answers']} real ({', '.join(f'{k} {v}' for k, v in r['real_by_source'].items())}), "
          f"{r['recombined_answers']} RECOMBINED ({r['recombined_how']})")
    print(f"build ({b['parser']} parser, {b['processes']} process(es), vectors + SG phrases): {b['build_seconds']} s, "
          f"{b['answers_per_second']} answers/s, {b['indexed']} indexed, {b['skipped']} skipped")
    print("on disk: " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in d.items()))
    t = s["turns"]
    print(f"learned ranker ({s['model']}), {s['questions']} real questions, one opening turn each: "
          f"p50 {t['p50_ms']} ms, p95 {t['p95_ms']} ms, p99 {t['p99_ms']} ms (ANN used: {s['ann_used']}; "
          f"SG phrase alignment: {s['sg_alignment']})")
    if "cpu_per_turn" in s:
        c = s["cpu_per_turn"]
        print(f"  process CPU time per turn: p50 {c['p50_ms']} ms, p95 {c['p95_ms']} ms, p99 {c['p99_ms']} ms")
    print(f"engine process: load {s['engine_load_seconds']} s, RSS {s['rss_loaded_mb']} MB loaded, "
          f"{s['rss_after_turns_mb']} MB after the turns, peak {s['peak_rss_mb']} MB")
    print(f"load average: build start {r['load_average_start']}, turns {s['load_average'][0]} -> "
          f"{s['load_average'][1]} on {r['cpu_count']} cores")


def main(argv: list[str] | None = None) -> int:
    from eval.entry import one_line_errors

    ap = argparse.ArgumentParser(prog="python -m eval.scale_bench", description=__doc__.split("\n")[0])
    ap.add_argument("--answers", type=int, default=100_000)
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--parser", default="rules")
    ap.add_argument("--processes", type=int, default=1, help="parser processes of the build")
    ap.add_argument("--model", choices=list(MODELS), default="hybrid+dt")
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--workdir", type=Path, default=None, help="default: a temporary folder")
    ap.add_argument("--keep", action="store_true", help="keep the built index")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--measure", type=Path, default=None, help=argparse.SUPPRESS)  # the timing child process
    args = ap.parse_args(argv)
    return one_line_errors(lambda: _main(args))


def _main(args: argparse.Namespace) -> int:
    from eval.datasets import default_data_dir

    if args.answers < 1 or args.questions < 1 or args.processes < 1:
        raise InputError("--answers, --questions and --processes must be positive")
    data_dir = args.data_dir or default_data_dir()
    if not (data_dir / "mechanics_qa" / "mechanics_qa_dev.jsonl").is_file():
        raise InputError(f"no shared data under {data_dir} (give --data-dir or $DTDIALOG_SHARED_DATA)")
    if args.measure is not None:
        print(json.dumps(measure(args.measure, questions=args.questions, data_dir=data_dir, model=args.model,
                                 parser_name=args.parser)))
        return 0
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="dtq-scale-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        result = run(answers=args.answers, questions=args.questions, parser_name=args.parser,
                     processes=args.processes, data_dir=data_dir, workdir=workdir, model=args.model)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    _print(result)
    if args.json:
        atomic_write_text(args.json, json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
