"""Benchmark one dialogue turn end to end (``DialogueManager.handle``) on the embedded SQLite index.

    python -m eval.turn_bench [--answers 10000] [--questions 60] [--corpus distinct|replicated] [--json OUT] [--plot OUT.png]

The rule scorer (the paper's DT-Q engine, ``--ranker rules``); ``eval.hybrid_bench`` times the
learned ranker. ``--corpus distinct`` (default) indexes distinct real answers: the built-in ones
plus the shared datasets' answer pools, replicas only to fill up (``eval.hybrid_bench.assemble_corpus``,
the same cached index). ``--corpus replicated`` copies the built-in answers under unique ids (and a
"[copy k]" text suffix) up to ``--answers``; the selector merges those near-duplicates, so a turn
sees far fewer candidates than on distinct answers and that mode under-counts. After
the parser and index are loaded and a few warm-up turns, every built-in opening question starts a
new session (turn 1: parse DT-Q, plan, query, agreement, decide) and, when the dialogue has one, its
logged first follow-up C1 is sent as turn 2. Prints p50/p95/p99 in milliseconds per turn kind.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from eval.latency import TimedCall, percentile, summarize
from eval.report import save_figure
from parsers.errors import DTDialogError
from parsers.files import atomic_write_text

TARGET_P95_MS = 100.0


def replicated_index(source, target: Path, answers: int):
    """Return a SQLite index at ``target`` holding ``answers`` documents: ``source``'s, replicated with unique ids."""
    from index.sqlite_index import SqliteIndex

    docs = [source.get(i) for i in source.ids()]
    docs = [d for d in docs if d is not None]
    index = SqliteIndex(target, readonly=False)
    batch = []
    with tqdm(total=answers, desc="replicating answers", unit="doc", file=sys.stderr) as bar:
        for n in range(answers):
            doc = docs[n % len(docs)]
            copy = n // len(docs)
            if copy:
                # a distinct text too (the engine merges near-duplicates after analysing them, as it would real ones)
                doc = replace(doc, id=f"{doc.id}~r{copy}", dialogue_id=f"{doc.dialogue_id}~r{copy}",
                              text=f"{doc.text} [copy {copy}]")
            batch.append(doc)
            if len(batch) >= 1000:
                index.add(batch)
                bar.update(len(batch))
                batch = []
        if batch:
            index.add(batch)
            bar.update(len(batch))
    index.optimize()
    return index


def run(*, answers: int, questions: int, parser_name: str | None, seed: int = 0, corpus_mode: str = "distinct",
        data_dir: Path | None = None) -> dict[str, Any]:
    """Return the benchmark result (environment, sizes and per-kind latency summaries)."""
    from data.builtin import load_builtin_corpus
    from dtdialog.runtime.gc_tuning import freeze_loaded
    from dtdialog.setup.assembly import EngineSpec, build_engine

    t0 = time.perf_counter()
    runtime = build_engine(EngineSpec(parser=parser_name, ranker="rules"), progress=True)
    freeze_loaded()  # as a serving process does
    load_s = time.perf_counter() - t0
    dialogues = load_builtin_corpus()
    rng = random.Random(seed)
    rng.shuffle(dialogues)
    dialogues = dialogues[:questions]
    with tempfile.TemporaryDirectory(prefix="dtq-turn-bench-") as tmp:
        if corpus_mode == "replicated":
            index = replicated_index(runtime.index, Path(tmp) / "answers.sqlite", answers)
        else:
            from eval.hybrid_bench import DEFAULT_CACHE, assemble_corpus, cached_index
            from index.registry import open_index

            corpus = assemble_corpus(answers=answers, data_dir=data_dir)
            path, _ = cached_index(corpus, cache=DEFAULT_CACHE, dense=False)
            index = open_index(backend="sqlite", path=path)
        spec = EngineSpec(parser=parser_name, ranker="rules", sessions_path=str(Path(tmp) / "sessions.sqlite"))
        engine = build_engine(spec, progress=False, parser=runtime.parser, index=index)
        manager = engine.manager
        for d in dialogues[:3]:  # warm-up: spaCy caches, SQLite pages, Python imports
            manager.handle(session_id=manager.start_session(), text=d.question)
        parse_timer = TimedCall(runtime.parser.parse)
        # every way the engine reads the index counts as index time (a chunked query scores, then loads the best)
        search_timers = [TimedCall(index.search), TimedCall(index.search_scores), TimedCall(index.hits_for)]
        runtime.parser.parse = parse_timer  # type: ignore[method-assign]
        index.search, index.search_scores, index.hits_for = search_timers  # type: ignore[method-assign]
        first: list[float] = []
        follow: list[float] = []
        choice: list[float] = []
        kinds: dict[str, int] = {}
        for d in tqdm(dialogues, desc="timing turns", unit="dialogue", file=sys.stderr):
            sid = manager.start_session()
            start = time.perf_counter()
            result = manager.handle(session_id=sid, text=d.question)
            first.append((time.perf_counter() - start) * 1000)
            kinds[result.kind] = kinds.get(result.kind, 0) + 1
            if result.kind == "clarify":  # choose the first option, as a user would
                start = time.perf_counter()
                result = manager.handle(session_id=sid, text="1")
                choice.append((time.perf_counter() - start) * 1000)
                kinds["choice->" + result.kind] = kinds.get("choice->" + result.kind, 0) + 1
            c1 = next((t.text for t in d.turns[1:] if t.role == "C"), None)
            if c1 and result.kind == "answer":
                start = time.perf_counter()
                result = manager.handle(session_id=sid, text=c1)
                follow.append((time.perf_counter() - start) * 1000)
                kinds[result.kind] = kinds.get(result.kind, 0) + 1
        turns = len(first) + len(choice) + len(follow)
        total_ms = sum(first) + sum(choice) + sum(follow)
        search_seconds = sum(t.seconds for t in search_timers)
        # the parse counts whole, on whichever thread it ran (the turn waits for it either way)
        breakdown = {"parser_ms_per_turn": round(parse_timer.all_seconds * 1000 / turns, 2),
                     "index_search_ms_per_turn": round(search_seconds * 1000 / turns, 2),
                     "engine_ms_per_turn": round((total_ms - (parse_timer.all_seconds + search_seconds) * 1000)
                                                 / turns, 2)}
        size = index.count()
        engine.close()
    runtime.close()
    everything = first + choice + follow
    return {
        "answers_indexed": size, "corpus": corpus_mode, "questions": len(dialogues), "parser": runtime.parser.name,
        "load_seconds": round(load_s, 2), "outcomes": kinds,
        "first_turn": summarize(first), "choice_turn": summarize(choice),
        "follow_up_turn": summarize(follow), "all_turns": summarize(everything),
        "target_p95_ms": TARGET_P95_MS, "meets_target": percentile(everything, 95) <= TARGET_P95_MS,
        "latencies_ms": {"first": [round(v, 3) for v in first], "choice": [round(v, 3) for v in choice],
                         "follow_up": [round(v, 3) for v in follow]},
        "breakdown_ms": breakdown,
    }


def plot(result: dict[str, Any], path: Path) -> None:
    """Write a histogram of turn latencies with the p95 target line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    lat = result["latencies_ms"]
    ax.hist([lat["first"], lat["choice"], lat["follow_up"]], bins=30, stacked=True,
            label=["first turn (question)", "clarification choice", "follow-up turn"])
    ax.axvline(TARGET_P95_MS, color="red", linestyle="--", label=f"p95 target {TARGET_P95_MS:.0f} ms")
    ax.axvline(result["all_turns"]["p95_ms"], color="black", linestyle=":",
               label=f"measured p95 {result['all_turns']['p95_ms']:.0f} ms")
    ax.set_xlabel("turn latency (ms), DialogueManager.handle end to end")
    ax.set_ylabel("turns")
    ax.set_title(f"dtdialog turn latency at {result['answers_indexed']} indexed answers")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.turn_bench", description=__doc__.splitlines()[0])
    ap.add_argument("--answers", type=int, default=10_000, help="indexed answers (replicated), default 10000")
    ap.add_argument("--questions", type=int, default=60, help="opening questions to time (each a new session)")
    ap.add_argument("--parser", default=None, help="RST parser (default: $DTDIALOG_PARSER or rules)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--corpus", choices=("distinct", "replicated"), default="distinct",
                    help="distinct real answers (default) or copies of the built-in ones (under-counts)")
    ap.add_argument("--data-dir", type=Path, default=None, help="shared data (default: ../shared/data)")
    ap.add_argument("--json", type=Path, default=None, help="write the full result as JSON here")
    ap.add_argument("--plot", type=Path, default=None, help="write a latency histogram PNG here")
    args = ap.parse_args(argv)
    if args.answers < 1 or args.questions < 1:
        print("error: --answers and --questions must be positive", file=sys.stderr)
        return 2
    try:
        result = run(answers=args.answers, questions=args.questions, parser_name=args.parser, seed=args.seed,
                     corpus_mode=args.corpus, data_dir=args.data_dir)
    except DTDialogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"turn latency, {result['answers_indexed']} answers ({result['corpus']}), rule scorer, parser {result['parser']}, "
          f"{result['questions']} sessions; outcomes {result['outcomes']}")
    print(f"{'turn kind':<16}{'n':>5}{'mean':>9}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}  (ms)")
    for key in ("first_turn", "choice_turn", "follow_up_turn", "all_turns"):
        s = result[key]
        print(f"{key:<16}{s['turns']:>5}{s['mean_ms']:>9.1f}{s['p50_ms']:>9.1f}{s['p95_ms']:>9.1f}"
              f"{s['p99_ms']:>9.1f}{s['max_ms']:>9.1f}")
    b = result["breakdown_ms"]
    print(f"mean per turn: parser {b['parser_ms_per_turn']:.1f} ms, index search {b['index_search_ms_per_turn']:.1f} ms, "
          f"engine (plan, agreement, scoring, session save) {b['engine_ms_per_turn']:.1f} ms")
    print(f"target p95 <= {TARGET_P95_MS:.0f} ms: {'met' if result['meets_target'] else 'MISSED'}")
    if args.json:
        atomic_write_text(args.json, json.dumps(result, indent=2))
    if args.plot:
        plot(result, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
