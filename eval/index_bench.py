"""Benchmark the answer index: build throughput (answers/s) and SQLite search latency at several sizes.

    python -m eval.index_bench [--sizes 1000,10000,100000] [--queries 200] [--parser rules]

Build throughput is measured on real parsing of distinct answers (the built-in corpus plus the
mechanics Q/A answers when ``../shared/data`` is present). Larger indexes are made by replicating the
parsed documents under unique ids, never by re-parsing. Queries are real questions of the same corpora
turned into ``SearchQuery`` objects (keywords + RR terms), as the dialogue engine does.
Prints a table, and writes JSON and a PNG chart when asked.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from data.model import Dialogue
from eval.report import save_figure
from index.base import AnswerDocument, SearchQuery
from index.builder import WRITE_BATCH, iter_answers, parse_documents
from index.documents import keywords_of, rr_terms_of
from index.sqlite_index import SqliteIndex
from parsers.base import get_parser
from parsers.errors import DTDialogError
from parsers.files import atomic_write_text

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MECHANICS = REPO.parent / "shared" / "data" / "mechanics_qa" / "mechanics_qa_dev.jsonl"


def load_bench_dialogues(mechanics: Path | None) -> tuple[list[Dialogue], list[str]]:
    """Return the built-in dialogues plus mechanics Q/A (when the file exists), and the corpus names used."""
    from data.builtin import load_builtin_corpus
    from data.loaders import load_corpus

    dialogues = list(load_builtin_corpus())
    names = [f"builtin ({len(dialogues)} dialogues)"]
    if mechanics and mechanics.is_file():
        extra = load_corpus(mechanics, fmt="mechanics", on_error="skip")
        dialogues.extend(extra)
        names.append(f"mechanics_qa ({len(extra)} dialogues)")
    return dialogues, names


def measure_build(dialogues: list[Dialogue], parser, *, n_process: int, workdir: Path) -> tuple[list[AnswerDocument], dict[str, Any]]:
    """Parse every answer and write a SQLite index; return the documents and the timings."""
    answers = list(iter_answers(dialogues))
    wall0, cpu0 = time.perf_counter(), time.process_time()
    docs = list(parse_documents(answers, parser=parser, n_process=n_process, progress=True))
    parse_wall, parse_cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    wall1 = time.perf_counter()
    with SqliteIndex(workdir / "build.sqlite", readonly=False) as index:
        for i in range(0, len(docs), WRITE_BATCH):
            index.add(docs[i:i + WRITE_BATCH])
        index.optimize()
    write_wall = time.perf_counter() - wall1
    total = parse_wall + write_wall
    return docs, {
        "answers": len(answers), "indexed": len(docs), "parse_seconds": round(parse_wall, 2),
        "parse_cpu_seconds": round(parse_cpu, 2), "write_seconds": round(write_wall, 2),
        "answers_per_second": round(len(docs) / total, 1) if total else 0.0,
        "answers_per_cpu_second": round(len(docs) / parse_cpu, 1) if parse_cpu else 0.0,
        "n_process": n_process,
    }


def question_queries(dialogues: list[Dialogue], parser, *, limit: int, size: int = 10) -> list[SearchQuery]:
    """Return up to ``limit`` ``SearchQuery`` objects made from parsed opening questions (spread over the corpus)."""
    step = max(1, len(dialogues) // limit) if limit else 1
    questions = [d.question for d in dialogues[::step]][:limit]
    queries = []
    for tree in parser.parse_many(questions):
        query = SearchQuery(keywords=tuple(keywords_of(tree)), rr_terms=tuple(rr_terms_of(tree)), size=size)
        if not query.is_empty():
            queries.append(query)
    return queries


def replicated(docs: list[AnswerDocument], size: int):
    """Yield ``size`` documents: the parsed ones, then copies under unique ids (``id@k``)."""
    produced = 0
    copy = 0
    while produced < size:
        for doc in docs:
            if produced >= size:
                return
            yield doc if copy == 0 else replace(doc, id=f"{doc.id}@{copy}", dialogue_id=f"{doc.dialogue_id}@{copy}")
            produced += 1
        copy += 1


def measure_search(docs: list[AnswerDocument], queries: list[SearchQuery], size: int, workdir: Path) -> dict[str, Any]:
    """Build a ``size``-answer index from ``docs`` and return search latency percentiles over ``queries`` (ms)."""
    from tqdm import tqdm

    path = workdir / f"search-{size}.sqlite"
    t0 = time.perf_counter()
    with SqliteIndex(path, readonly=False) as index:
        batch: list[AnswerDocument] = []
        for doc in tqdm(replicated(docs, size), total=size, desc=f"loading {size}", unit="doc", file=sys.stderr):
            batch.append(doc)
            if len(batch) >= 2000:
                index.add(batch)
                batch = []
        if batch:
            index.add(batch)
        index.optimize()
    load_seconds = time.perf_counter() - t0
    latencies: list[float] = []
    cpu: list[float] = []
    empty = 0
    with SqliteIndex(path) as index:
        for query in queries:  # one warm-up pass: page cache, statement cache, stem cache
            index.search(query)
        for query in queries:
            start, start_cpu = time.perf_counter(), time.process_time()
            hits = index.search(query)
            latencies.append((time.perf_counter() - start) * 1000)
            cpu.append((time.process_time() - start_cpu) * 1000)
            empty += not hits
    file_mb = path.stat().st_size / 1e6
    path.unlink()
    latencies.sort()
    cpu.sort()
    return {
        "answers": size, "queries": len(latencies), "p50_ms": round(percentile(latencies, 50), 2),
        "p95_ms": round(percentile(latencies, 95), 2), "mean_ms": round(statistics.fmean(latencies), 2),
        "max_ms": round(latencies[-1], 2), "cpu_p50_ms": round(percentile(cpu, 50), 2),
        "cpu_p95_ms": round(percentile(cpu, 95), 2), "queries_without_hits": empty, "load_seconds": round(load_seconds, 1),
        "file_mb": round(file_mb, 1),
    }


def percentile(sorted_values: list[float], pct: float) -> float:
    """Return the ``pct`` percentile of sorted values (nearest rank)."""
    if not sorted_values:
        return 0.0
    rank = max(1, min(len(sorted_values), math.ceil(pct / 100 * len(sorted_values))))
    return sorted_values[rank - 1]


def plot(results: list[dict[str, Any]], path: Path) -> None:
    """Write a PNG of p50/p95 search latency against index size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["answers"] for r in results]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(sizes, [r["p50_ms"] for r in results], marker="o", color="C0", label="p50 wall clock")
    ax.plot(sizes, [r["p95_ms"] for r in results], marker="o", color="C1", label="p95 wall clock")
    ax.plot(sizes, [r["cpu_p50_ms"] for r in results], marker="s", linestyle=":", color="C0", label="p50 CPU time")
    ax.plot(sizes, [r["cpu_p95_ms"] for r in results], marker="s", linestyle=":", color="C1", label="p95 CPU time")
    ax.axhline(20, color="grey", linestyle="--", label="p95 target (20 ms)")
    ax.set_xscale("log")
    ax.set_xlabel("answers in index")
    ax.set_ylabel("search latency (ms)")
    ax.set_title("dtdialog SQLite FTS5 search latency (shared 2-core machine)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.index_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="index sizes for the latency runs")
    parser.add_argument("--queries", type=int, default=200, help="number of question queries")
    parser.add_argument("--parser", default=None, help="parser name (default: the default parser)")
    parser.add_argument("--n-process", type=int, default=1, help="parsing processes for the build run")
    parser.add_argument("--mechanics", type=Path, default=DEFAULT_MECHANICS, help="mechanics Q/A JSONL to add")
    parser.add_argument("--build-limit", type=int, default=None, help="use only the first N dialogues")
    parser.add_argument("--json", type=Path, default=None, help="write results as JSON here")
    parser.add_argument("--plot", type=Path, default=None, help="write a latency PNG here")
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        if not sizes or min(sizes) < 1:
            raise ValueError
    except ValueError:
        print(f"error: --sizes must be positive whole numbers separated by commas, got {args.sizes!r}", file=sys.stderr)
        return 2
    try:
        return run(args, sizes)
    except DTDialogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace, sizes: list[int]) -> int:
    dialogues, names = load_bench_dialogues(args.mechanics)
    if args.build_limit:
        dialogues = dialogues[: args.build_limit]
    t0 = time.perf_counter()
    rst = get_parser(args.parser)
    rst.parse("Warm up the pipeline.")  # lazy model loading belongs to start-up, not to throughput
    load_seconds = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="dtdialog-bench-") as tmp:
        workdir = Path(tmp)
        docs, build = measure_build(dialogues, rst, n_process=args.n_process, workdir=workdir)
        build["parser"] = rst.name
        build["parser_load_seconds"] = round(load_seconds, 1)
        queries = question_queries(dialogues, rst, limit=args.queries)
        search = [measure_search(docs, queries, size, workdir) for size in sizes]
    results = {"command": "python -m eval.index_bench " + " ".join(sys.argv[1:]), "corpora": names,
               "cpu_count": os.cpu_count(), "load_average": list(os.getloadavg()),
               "build": build, "search": search}
    print(f"corpora: {', '.join(names)}; cpus {os.cpu_count()}; load average {os.getloadavg()[0]:.1f}")
    print(f"build ({build['parser']}, n_process={build['n_process']}): {build['indexed']} answers, "
          f"{build['answers_per_second']} answers/s wall ({build['answers_per_cpu_second']} per CPU-second of "
          f"parsing); parse {build['parse_seconds']}s, write {build['write_seconds']}s, "
          f"parser load {build['parser_load_seconds']}s")
    print(f"{'answers':>8} {'queries':>7} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8} {'max ms':>8} "
          f"{'cpu p50':>8} {'cpu p95':>8} {'no hit':>6} {'MB':>7}")
    for r in search:
        print(f"{r['answers']:>8} {r['queries']:>7} {r['p50_ms']:>8} {r['p95_ms']:>8} {r['mean_ms']:>8} "
              f"{r['max_ms']:>8} {r['cpu_p50_ms']:>8} {r['cpu_p95_ms']:>8} {r['queries_without_hits']:>6} "
              f"{r['file_mb']:>7}")
    if args.json:
        atomic_write_text(args.json, json.dumps(results, indent=2) + "\n")
    if args.plot:
        plot(search, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
