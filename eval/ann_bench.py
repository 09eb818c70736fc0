"""Vector search at up to 1M answers: HNSW (usearch) against exact float32 and exact int8 numpy search.

    python -m eval.ann_bench [--vectors 1000000] [--queries 500] [--real 50000] [--sweep-size 100000]
                             [--data-dir DIR] [--cache DIR] [--json OUT] [--plot PNG]

**Vectors.** Real texts of the shared data (``--data-dir``, default ``$DTDIALOG_SHARED_DATA``): mechanics
answers, Twitter and Ubuntu IRC turns, Reddit posts, the Fidelity FAQ answers, GUM sentences and the
2carpros fragments, split into sentences, deduplicated, up to ``--real`` of them, encoded with the int8 ONNX
MiniLM (``parsers.encoder.OnnxMiniLM``) and cached as ``.npy`` under ``--cache``. Real sentences run out
long before 1M: **the rest are synthetic**, each the normalised mean of 2 or 3 random real sentence vectors.
Mean pooling makes that close to encoding the joined sentences; the bench measures how close on 200 pairs
(cosine between "mean of the two vectors" and "vector of the two sentences joined") and prints it.

**Queries.** Real customer questions that are not in the pool: the 497 mechanics questions (title + body),
then Reddit r/MechanicAdvice titles, up to ``--queries``; none of their text is in the pool.

**Methods.** Exact float32 (the reference: recall@100 is measured against its top 100), exact int8
(rows scaled by 127 and rounded; numpy, blocks of 65k rows), and HNSW (``index.dense_ann``, what the dense
store uses) for a sweep of connectivity x search beam on a ``--sweep-size`` subset, then the chosen
connectivity at the full size. Per method: build seconds, index bytes, query p50/p95/p99 in ms (one query
at a time, one thread), recall@100. Exact searches are timed on ``--exact-timed`` queries only (they are
slow at 1M), recall on all.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from eval.report import save_figure
from parsers.errors import InputError
from parsers.files import atomic_write_text

K = 100
TARGET_P95_MS = 20.0
TARGET_RECALL = 0.95
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_TAG = re.compile(r"<[^>]+>")
_URL = re.compile(r"https?://\S+")


def _sentences(text: str) -> list[str]:
    text = " ".join(_URL.sub(" ", _TAG.sub(" ", text)).split())
    return [s for s in _SENTENCE.split(text) if 25 <= len(s) <= 400 and sum(c.isalpha() for c in s) >= 15]


def real_texts(data_dir: Path) -> tuple[list[str], list[str], dict[str, int]]:
    """Return (pool sentences, query questions, sentences per source); the pool holds no query text."""
    csv.field_size_limit(10_000_000)
    queries: list[str] = []
    mech = data_dir / "mechanics_qa" / "mechanics_qa_dev.jsonl"
    rows = [json.loads(line) for line in mech.read_text(encoding="utf-8").splitlines() if line.strip()]
    queries += [" ".join(f"{r['title']} {r.get('body', '')}".split()) for r in rows]
    sources: dict[str, list[str]] = {"mechanics answers": [s for r in rows for s in _sentences(r["answer"])]}
    reddit_rows = []
    for name in ("reddit_mechanicadvice_top.csv", "reddit_cartalk_top.csv"):
        with open(data_dir / "car_texts" / name, encoding="utf-8", newline="") as fh:
            reddit_rows += [(r["title"], r.get("selftext") or "") for r in csv.DictReader(fh)]
    queries += [t for t, _ in reddit_rows[:max(0, 1000 - len(queries))]]
    asked = {" ".join(q.split()) for q in queries}
    sources["reddit posts"] = [s for t, body in reddit_rows for s in _sentences(f"{t}. {body}")
                               if t not in asked]
    twitter = json.loads((data_dir / "support_dialogues" / "twitter_customer_care_dev.json").read_text("utf-8"))
    sources["twitter turns"] = [s for d in twitter for turn in d["dialogContent"] for s in _sentences(turn["message"])]
    irc = (data_dir / "support_dialogues" / "ubuntu_irc_threads_train_dev.jsonl").read_text("utf-8").splitlines()
    sources["irc turns"] = [s for line in irc if line.strip() for t in json.loads(line)["turns"]
                            for s in _sentences(t["text"])]
    with open(data_dir / "faq" / "fidelity_faq_answer_anatomy.csv", encoding="utf-8", errors="replace", newline="") as fh:
        sources["fidelity faq"] = [s for r in csv.DictReader(fh) for s in _sentences(r["ANSWER"])]
    with open(data_dir / "car_texts" / "carpros_fragments_entities.csv", encoding="utf-8", newline="") as fh:
        sources["2carpros fragments"] = [s for r in csv.reader(fh) if r for s in _sentences(r[0].split(" | ")[0])]
    sources["gum sentences"] = _gum_sentences(data_dir / "gum_rst" / "rstweb")
    pool: list[str] = []
    seen = set(asked)
    counts: dict[str, int] = {}
    for name, texts in sources.items():
        before = len(pool)
        for s in texts:
            key = s.lower()
            if key not in seen:
                seen.add(key)
                pool.append(s)
        counts[name] = len(pool) - before
    return pool, queries, counts


def _gum_sentences(folder: Path) -> list[str]:
    out: list[str] = []
    segment = re.compile(r"<segment[^>]*>(.*?)</segment>", re.S)
    for path in sorted(folder.glob("*.rs4")):
        text = " ".join(segment.findall(path.read_text(encoding="utf-8")))
        out += _sentences(text.replace("&amp;", "&").replace("&quot;", '"').replace("&apos;", "'"))
    return out


def encode_cached(texts: list[str], cache: Path, label: str, *, progress: bool = True) -> np.ndarray:
    """Return the int8-ONNX MiniLM vectors of ``texts``, reusing chunks that an earlier (or interrupted) run cached."""
    from parsers.encoder import shared_encoder

    encoder = shared_encoder()
    chunk = 2048
    parts = []
    with tqdm(total=len(texts), desc=f"encoding {label}", unit="text", file=sys.stderr, disable=not progress) as bar:
        for start in range(0, len(texts), chunk):
            block = texts[start:start + chunk]
            digest = hashlib.sha1(("\n".join(block) + encoder.model_id).encode()).hexdigest()[:16]
            path = cache / f"{label}-{digest}.npy"
            if path.is_file():
                parts.append(np.load(path))
            else:
                out = np.vstack([encoder.encode(block[i:i + 256]) for i in range(0, len(block), 256)])
                cache.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp.npy")
                np.save(tmp, out)
                tmp.replace(path)
                parts.append(out)
            bar.update(len(block))
    return np.vstack(parts).astype(np.float32)


def recombined(real: np.ndarray, n: int, *, seed: int = 0) -> np.ndarray:
    """Return ``n`` vectors: the real ones, then normalised means of 2-3 random real vectors (synthetic)."""
    if n <= len(real):
        return np.ascontiguousarray(real[:n])
    rng = np.random.default_rng(seed)
    out = np.empty((n, real.shape[1]), dtype=np.float32)
    out[:len(real)] = real
    step = 100_000
    for start in range(len(real), n, step):
        m = min(step, n - start)
        parts = rng.integers(0, len(real), size=(m, 3))
        three = rng.random(m) < 0.5
        block = real[parts[:, 0]] + real[parts[:, 1]] + np.where(three[:, None], real[parts[:, 2]], 0.0)
        out[start:start + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def recombination_check(pool: list[str], *, pairs: int = 200, seed: int = 0) -> dict[str, float]:
    """Return how close "mean of two sentence vectors" is to "vector of the two sentences joined" (cosines)."""
    from parsers.encoder import shared_encoder

    rng = random.Random(seed)
    chosen = [(rng.choice(pool), rng.choice(pool)) for _ in range(pairs)]
    enc = shared_encoder()
    a = enc.encode([x for x, _ in chosen])
    b = enc.encode([y for _, y in chosen])
    joined = enc.encode([f"{x} {y}" for x, y in chosen])
    mean = (a + b) / np.linalg.norm(a + b, axis=1, keepdims=True)
    cos = (mean * joined).sum(axis=1)
    return {"pairs": pairs, "mean_cosine": round(float(cos.mean()), 4), "p5_cosine": round(float(np.percentile(cos, 5)), 4),
            "min_cosine": round(float(cos.min()), 4),
            "baseline_cosine_of_the_two_sentences": round(float((a * b).sum(axis=1).mean()), 4)}


def exact_top(vectors: np.ndarray, queries: np.ndarray, k: int = K) -> np.ndarray:
    """Return the exact float32 top-``k`` rows per query (blocks of rows, all queries at once)."""
    best_s = np.full((len(queries), 0), -np.inf, dtype=np.float32)
    best_i = np.zeros((len(queries), 0), dtype=np.int64)
    for start in range(0, len(vectors), 131_072):
        s = queries @ np.asarray(vectors[start:start + 131_072]).T
        idx = np.argpartition(-s, min(k, s.shape[1] - 1), axis=1)[:, :k]
        s_all = np.concatenate([best_s, np.take_along_axis(s, idx, axis=1)], axis=1)
        i_all = np.concatenate([best_i, idx + start], axis=1)
        keep = np.argsort(-s_all, axis=1)[:, :k]
        best_s, best_i = np.take_along_axis(s_all, keep, axis=1), np.take_along_axis(i_all, keep, axis=1)
    return best_i


def recall(found: list[np.ndarray], truth: np.ndarray) -> float:
    return float(np.mean([len(set(f[:K].tolist()) & set(t.tolist())) / K for f, t in zip(found, truth)]))


def _pcts(ms: list[float], prefix: str = "") -> dict[str, float]:
    return {f"{prefix}p{p}_ms": round(float(np.percentile(ms, p)), 3) for p in (50, 95, 99)}


def _top_k(scores: np.ndarray, k: int = K) -> np.ndarray:
    top = np.argpartition(-scores, k)[:k] if k < len(scores) else np.arange(len(scores))
    return top[np.argsort(-scores[top])]


def bench_exact(vectors: np.ndarray, queries: np.ndarray, truth: np.ndarray, timed: int) -> list[dict[str, Any]]:
    """Time exact float32 and int8 search (one query at a time) and measure int8's recall."""
    results = []
    ms, cpu = [], []
    for q in queries[:timed]:
        t0, c = time.perf_counter(), time.thread_time()
        _top_k(vectors @ q)
        ms.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.thread_time() - c) * 1000)
    results.append({"method": "exact float32 (numpy)", "build_s": 0.0, "index_bytes": int(vectors.nbytes),
                    "recall_at_100": 1.0, "timed_queries": len(ms), **_pcts(ms), **_pcts(cpu, "cpu_")})
    t0 = time.perf_counter()
    q8 = np.clip(np.rint(vectors * 127), -127, 127).astype(np.int8)
    build = time.perf_counter() - t0

    def search8(q: np.ndarray) -> np.ndarray:
        qi = np.rint(q * 127).astype(np.float32)
        scores = np.concatenate([q8[s:s + 65_536].astype(np.float32) @ qi for s in range(0, len(q8), 65_536)])
        return _top_k(scores)

    ms, cpu = [], []
    for q in queries[:timed]:
        t0, c = time.perf_counter(), time.thread_time()
        search8(q)
        ms.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.thread_time() - c) * 1000)
    found = list(exact_top(q8, np.rint(queries * 127).astype(np.float32)))  # same ranking, all queries at once
    results.append({"method": "exact int8 (numpy)", "build_s": round(build, 2), "index_bytes": int(q8.nbytes),
                    "recall_at_100": round(recall(found, truth), 4), "timed_queries": len(ms), **_pcts(ms),
                    **_pcts(cpu, "cpu_")})
    return results


def bench_hnsw(vectors: np.ndarray, queries: np.ndarray, truth: np.ndarray, *, connectivity: int,
               efs: list[int], dtype: str = "i8", threads: int = 2) -> list[dict[str, Any]]:
    """Build one HNSW graph and measure every search beam in ``efs`` (one query at a time, one thread).

    Each query does what ``DenseStore.search`` does: the graph's ``oversample * k`` rows, re-scored exactly
    in float32, top ``k`` kept; the re-scoring is inside the timing.
    """
    from index.dense_ann import AnnIndex, AnnSettings

    settings = AnnSettings(connectivity=connectivity, expansion_add=128, dtype=dtype,
                           oversample=2 if dtype == "i8" else 1)
    t0 = time.perf_counter()
    ann = AnnIndex.build(vectors, settings, threads=threads, progress=True)
    build = time.perf_counter() - t0
    rows = []
    for ef in efs:
        ann._raw.expansion_search = ef
        ms, cpu, found = [], [], []
        for q in queries:
            t, c = time.perf_counter(), time.thread_time()
            cand = np.sort(ann.search(q, K))
            found.append(cand[_top_k(np.asarray(vectors[cand]) @ q)])
            ms.append((time.perf_counter() - t) * 1000)
            cpu.append((time.thread_time() - c) * 1000)
        rows.append({"method": f"HNSW usearch {dtype} M={connectivity} ef={ef}", "connectivity": connectivity,
                     "ef_search": ef, "dtype": dtype, "oversample": settings.oversample, "build_s": round(build, 1),
                     "build_threads": threads, "index_bytes": ann.nbytes,
                     "recall_at_100": round(recall(found, truth), 4), "timed_queries": len(ms), **_pcts(ms),
                     **_pcts(cpu, "cpu_")})
        print(f"  {rows[-1]['method']}: recall {rows[-1]['recall_at_100']}, p95 {rows[-1]['p95_ms']} ms "
              f"(thread CPU p95 {rows[-1]['cpu_p95_ms']} ms)",
              file=sys.stderr)
    return rows


def run(*, vectors: int, queries: int, real: int, sweep_size: int, data_dir: Path, cache: Path,
        configs: list[tuple[str, int]], efs: list[int], exact_timed: int, final: tuple[str, int] | None,
        threads: int) -> dict[str, Any]:
    """Return the data description, the recombination check, the sweep and the full-size comparison."""
    pool, questions, counts = real_texts(data_dir)
    if len(questions) < queries:
        raise InputError(f"only {len(questions)} real questions for --queries {queries}")
    rng = random.Random(0)
    rng.shuffle(pool)
    pool = pool[:real]
    real_vectors = encode_cached(pool, cache, "pool")
    query_vectors = encode_cached(questions[:queries], cache, "queries")
    check = recombination_check(pool)
    print(f"recombination check: {check}", file=sys.stderr)
    result: dict[str, Any] = {
        "real_sentences": len(pool), "real_by_source": counts, "synthetic": max(0, vectors - len(pool)),
        "synthetic_how": "normalised mean of 2 or 3 random real sentence vectors (half each)",
        "queries": queries, "recombination_check": check, "k": K, "cpu_count": os.cpu_count(),
        "load_average_start": round(os.getloadavg()[0], 2)}
    if sweep_size and sweep_size < vectors:
        sub = recombined(real_vectors, sweep_size)
        truth = exact_top(sub, query_vectors)
        result["sweep_size"] = sweep_size
        result["sweep"] = [row for dtype, m in configs for row in bench_hnsw(
            sub, query_vectors, truth, connectivity=m, dtype=dtype, efs=efs, threads=threads)]
        del sub
    full = recombined(real_vectors, vectors)
    t0 = time.perf_counter()
    truth = exact_top(full, query_vectors)
    result["exact_ground_truth_s"] = round(time.perf_counter() - t0, 1)
    rows = bench_exact(full, query_vectors, truth, exact_timed)
    dtype, connectivity = final or _choose(result.get("sweep", []))
    rows += bench_hnsw(full, query_vectors, truth, connectivity=connectivity, dtype=dtype, efs=efs, threads=threads)
    result["size"] = vectors
    result["full"] = rows
    ok = [r for r in rows if r["method"].startswith("HNSW") and r["recall_at_100"] >= TARGET_RECALL]
    best = min(ok, key=lambda r: r["p95_ms"]) if ok else None
    result["best_meeting_recall"] = best
    result["meets_target"] = bool(best and best["p95_ms"] <= TARGET_P95_MS)
    result["load_average_end"] = round(os.getloadavg()[0], 2)
    return result


def _choose(sweep: list[dict[str, Any]]) -> tuple[str, int]:
    """Return the (dtype, connectivity) whose row with recall >= 0.98 on the sweep has the lowest CPU p95 per query.

    CPU time, not wall time: on a shared machine the wall p95 is mostly waiting for a core.

    0.98, not the target's 0.95: recall falls as the store grows, the sweep is 10x smaller than the full run.
    """
    ok = [r for r in sweep if r["recall_at_100"] >= 0.98]
    best = min(ok, key=lambda r: r["cpu_p95_ms"]) if ok else None
    return (best["dtype"], best["connectivity"]) if best else ("i8", 16)


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in result.get("sweep", []):
        groups.setdefault(f"{r['dtype']} M={r['connectivity']} at {result['sweep_size'] // 1000}k", []).append(r)
    for r in result["full"]:
        if "connectivity" in r:
            groups.setdefault(f"{r['dtype']} M={r['connectivity']} at {result['size'] // 1000}k", []).append(r)
    for label, rows in groups.items():
        ax.plot([r["recall_at_100"] for r in rows], [r["p95_ms"] for r in rows], marker="o", label=label)
        for r in rows:
            ax.annotate(str(r["ef_search"]), (r["recall_at_100"], r["p95_ms"]), fontsize=7,
                        textcoords="offset points", xytext=(3, 3))
    for r in result["full"]:
        if "connectivity" not in r:
            ax.scatter([r["recall_at_100"]], [r["p95_ms"]], marker="x", s=60, label=f"{r['method']} {result['size'] // 1000}k")
    ax.axhline(TARGET_P95_MS, color="grey", ls="--", lw=0.8)
    ax.axvline(TARGET_RECALL, color="grey", ls="--", lw=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("recall@100 against exact float32")
    ax.set_ylabel("query p95, ms (1 query, 1 thread; log)")
    ax.set_title("HNSW (usearch) sweep, exact re-scoring included; numbers = ef_search")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


def _print(result: dict[str, Any]) -> None:
    print(f"{result['size']} vectors: {result['real_sentences']} real sentences "
          f"({', '.join(f'{k} {v}' for k, v in result['real_by_source'].items())}), "
          f"{result['synthetic']} SYNTHETIC ({result['synthetic_how']})")
    c = result["recombination_check"]
    print(f"recombination check on {c['pairs']} pairs: cosine(mean of the two vectors, vector of the joined text) "
          f"mean {c['mean_cosine']}, 5th pct {c['p5_cosine']}, min {c['min_cosine']} "
          f"(the two sentences themselves: {c['baseline_cosine_of_the_two_sentences']})")
    print(f"{'method':<44}{'build s':>9}{'MB':>9}{'recall':>8}{'p50':>9}{'p95':>9}{'p99':>9}{'cpu p95':>9}")
    for r in result.get("sweep", []) + result["full"]:
        size = result["sweep_size"] if r in result.get("sweep", []) else result["size"]
        print(f"{r['method'][:40] + f' {size // 1000}k':<44}{r['build_s']:>9}{r['index_bytes'] / 1e6:>9.1f}"
              f"{r['recall_at_100']:>8.3f}{r['p50_ms']:>9.2f}{r['p95_ms']:>9.2f}{r['p99_ms']:>9.2f}"
              f"{r['cpu_p95_ms']:>9.2f}")
    best = result["best_meeting_recall"]
    print(f"load average {result['load_average_start']} -> {result['load_average_end']} on {result['cpu_count']} cores")
    print(f"target p95 <= {TARGET_P95_MS:.0f} ms at recall@100 >= {TARGET_RECALL}: "
          + ("met" if result["meets_target"] else "MISSED")
          + (f" ({best['method']}: p95 {best['p95_ms']} ms, recall {best['recall_at_100']})" if best else ""))


def _config(text: str) -> tuple[str, int]:
    dtype, _, m = text.partition(":")
    if dtype not in ("i8", "f16", "f32") or not m.isdigit() or int(m) < 2:
        raise InputError(f"graph {text!r}: expected DTYPE:CONNECTIVITY, e.g. i8:16 (dtype i8, f16 or f32)")
    return dtype, int(m)


def main(argv: list[str] | None = None) -> int:
    from eval.entry import one_line_errors

    ap = argparse.ArgumentParser(prog="python -m eval.ann_bench", description=__doc__.split("\n")[0])
    ap.add_argument("--vectors", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--real", type=int, default=50_000, help="at most this many real sentences are encoded")
    ap.add_argument("--sweep-size", type=int, default=100_000, help="vectors of the sweep (0: no sweep)")
    ap.add_argument("--configs", nargs="+", default=["i8:16", "i8:32", "f16:16"],
                    help="sweep's graphs, DTYPE:CONNECTIVITY")
    ap.add_argument("--ef", type=int, nargs="+", default=[64, 200, 300, 500, 800],
                    help="search beams (usearch's beam is at least the rows asked: 200 for an int8 graph, 100 for f16)")
    ap.add_argument("--final", default=None, help="DTYPE:CONNECTIVITY of the full-size graph (default: the sweep's best)")
    ap.add_argument("--exact-timed", type=int, default=100, help="queries timed for the exact searches")
    ap.add_argument("--threads", type=int, default=2, help="threads for building the graph")
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--cache", type=Path, default=None, help="default: $DTDIALOG_HOME/ann_bench")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--plot", type=Path, default=None)
    args = ap.parse_args(argv)
    return one_line_errors(lambda: _main(args))


def _main(args: argparse.Namespace) -> int:
    from dtdialog.runtime.paths import data_home
    from eval.datasets import default_data_dir

    for name in ("vectors", "queries", "real"):
        if getattr(args, name) < 1:
            raise InputError(f"--{name} must be positive")
    if args.queries > args.real:
        raise InputError("--queries must not exceed --real")
    configs = [_config(c) for c in args.configs]
    final = _config(args.final) if args.final else None
    data_dir = args.data_dir or default_data_dir()
    if not (data_dir / "mechanics_qa" / "mechanics_qa_dev.jsonl").is_file():
        raise InputError(f"no shared data under {data_dir} (give --data-dir or $DTDIALOG_SHARED_DATA)")
    result = run(vectors=args.vectors, queries=args.queries, real=args.real, sweep_size=args.sweep_size,
                 data_dir=data_dir, cache=args.cache or data_home() / "ann_bench",
                 configs=configs, efs=args.ef, exact_timed=args.exact_timed, final=final, threads=args.threads)
    _print(result)
    if args.json:
        atomic_write_text(args.json, json.dumps(result, indent=2) + "\n")
    if args.plot:
        plot(result, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
