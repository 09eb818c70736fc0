"""Benchmark an RST parser on GUM: segmentation, RST-Parseval, non-default detection, speed.

    python -m eval.parser_bench --gum ../shared/data/gum_rst --split test [--parser rules] [--limit N] [--json OUT]

Each GUM document's gold text (its EDUs joined by spaces) is parsed end to end
(predicted segmentation), then scored with ``parsers.parseval`` against the gold
tree: EDU boundary P/R/F1; span / nuclearity / relation / full F1 over labelled
constituents of binarised trees, compared by character span (root and leaves
excluded, Morey et al. 2017 style); precision/recall of detecting non-default
relations. Speed: documents per second over the whole split, and the median /
95th-percentile latency of parsing one 5-sentence customer answer (car-repair
answers written for this benchmark plus 5-sentence windows of the split's
texts), one text at a time on one core, after the parser is loaded.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from parsers.base import get_parser
from parsers.errors import DTDialogError, InputError
from parsers.gum import DEFAULT_GUM_DIR, iter_gum
from parsers.parseval import ParsevalCounts, aggregate, parseval
from parsers.tree import DiscourseTree

#: isanlp-rst ``gumrrg`` end-to-end results on GUM as published by its authors (percent).
PUBLISHED_ISANLP_GUMRRG = {"seg_f1": 95.5, "span_f1": 67.4, "nuc_f1": 56.2, "rel_f1": 49.6, "full_f1": 48.7}
TARGETS = {"seg_f1": 0.85, "rel_f1": 0.30, "median_ms_5_sentences": 50.0}

#: Five-sentence car-repair answers, the kind of text the dialogue manager parses at run time.
CAR_ANSWERS: tuple[str, ...] = (
    "I have checked the spark plugs, replaced the battery, also replaced ignition coils and the solenoid, but I "
    "still could not start my car. The starter clicks when I turn the key. The dashboard lights come on. "
    "If I jump it from another car, nothing changes. What should I check next?",
    "A clicking starter usually means the solenoid is not getting enough current. Check the ground strap between "
    "the engine and the body, because a corroded ground causes exactly this. Clean both ends with a wire brush. "
    "Then measure the voltage at the starter while someone turns the key. If it drops below ten volts, the cable "
    "is bad.",
    "My brakes squeal when I stop at low speed, although the pads were replaced last month. The noise goes away "
    "after a few miles. The mechanic said that the rotors are fine. I drive mostly in the city. Is this normal "
    "or should I go back to the shop?",
    "Squealing after new pads is often caused by glazing. The pads need to be bedded in so that a layer of "
    "material transfers to the rotor. Do a few hard stops from forty miles per hour without coming to a full "
    "stop. If the noise stays, ask the shop to apply anti-squeal paste. Cheap pads squeal more, so consider "
    "ceramic ones next time.",
    "The check engine light came on yesterday, and the car hesitates when I accelerate. I read the code with a "
    "cheap scanner. It says P0301, which means a misfire in cylinder one. I swapped the coil with cylinder two "
    "to see whether the misfire follows it. Since then the light has not come back.",
    "When the engine is cold, it idles rough for a minute. After it warms up, it runs smoothly. The fuel economy "
    "has dropped by about ten percent. I replaced the air filter, but that did not help. Could the coolant "
    "temperature sensor be the problem?",
)


def five_sentence_windows(trees: list[DiscourseTree], *, limit: int = 40) -> list[str]:
    """Return up to ``limit`` texts of 5 consecutive gold sentences taken from ``trees``."""
    out: list[str] = []
    for tree in trees:
        by_sent: dict[int, list[str]] = {}
        for edu in tree.edus:
            by_sent.setdefault(edu.sentence, []).append(edu.text)
        sents = [" ".join(v) for _, v in sorted(by_sent.items())]
        for i in range(0, len(sents) - 4, 25):
            out.append(" ".join(sents[i: i + 5]))
            if len(out) >= limit:
                return out
    return out


def latency_ms(parser, texts: list[str], *, repeats: int = 3) -> list[float]:
    """Return the wall-clock milliseconds of ``parser.parse`` on each text, ``repeats`` times each."""
    for text in texts[:3]:  # warm-up: lazy model loading and caches are not latency
        parser.parse(text)
    out = []
    for _ in range(repeats):
        for text in texts:
            t0 = time.perf_counter()
            parser.parse(text)
            out.append((time.perf_counter() - t0) * 1000)
    return out


def percentile(values: list[float], q: float) -> float:
    """Return the ``q``-th percentile (0-100) of ``values`` by linear interpolation."""
    data = sorted(values)
    if not data:
        return float("nan")
    k = (len(data) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def run(gum_dir: Path | str, *, split: str = "test", parser_name: str = "rules", limit: int = 0,
        n_process: int = 1, latency_repeats: int = 3) -> dict[str, Any]:
    """Return the benchmark results as a dict (scores in [0, 1], times in ms and texts/s)."""
    docs = list(iter_gum(gum_dir, split=split))
    if limit:
        docs = docs[:limit]
    if not docs:
        raise InputError(f"no GUM documents for split {split!r} in {gum_dir}")
    parser = get_parser(parser_name)
    parser.parse("Warm up the models. It is not timed.")
    texts = [d.tree.text for d in docs]
    counts = ParsevalCounts()
    mismatched = 0
    t0 = time.perf_counter()
    preds = list(tqdm(parser.parse_many(texts, n_process=n_process), total=len(texts), desc="parse", file=sys.stderr))
    elapsed = time.perf_counter() - t0
    for doc, pred in zip(docs, preds):
        if pred.text != doc.tree.text:
            mismatched += 1  # cleaning changed the text: offsets would not line up
            continue
        counts = counts + parseval(doc.tree, pred)
    scores = aggregate(counts)
    samples = list(CAR_ANSWERS) + five_sentence_windows([d.tree for d in docs])
    lat = latency_ms(parser, samples, repeats=latency_repeats)
    return {
        "parser": parser_name, "split": split, "documents": len(docs), "skipped_text_mismatch": mismatched,
        "scores": scores, "counts": counts.to_dict(),
        "texts_per_s": len(docs) / elapsed if elapsed else float("inf"),
        "edus_per_s": sum(len(p.edus) for p in preds) / elapsed if elapsed else float("inf"),
        "latency_texts": len(samples), "median_ms_5_sentences": statistics.median(lat),
        "p95_ms_5_sentences": percentile(lat, 95), "n_process": n_process,
    }


def markdown(result: dict[str, Any]) -> str:
    """Return the results as a Markdown table next to the published isanlp-rst gumrrg figures."""
    s = result["scores"]
    rows = [
        ("EDU segmentation F1 (P / R)", f"{100 * s['seg_f1']:.1f} ({100 * s['seg_p']:.1f} / {100 * s['seg_r']:.1f})",
         PUBLISHED_ISANLP_GUMRRG["seg_f1"]),
        ("Span F1", f"{100 * s['span_f1']:.1f}", PUBLISHED_ISANLP_GUMRRG["span_f1"]),
        ("Nuclearity F1", f"{100 * s['nuc_f1']:.1f}", PUBLISHED_ISANLP_GUMRRG["nuc_f1"]),
        ("Relation F1", f"{100 * s['rel_f1']:.1f}", PUBLISHED_ISANLP_GUMRRG["rel_f1"]),
        ("Full F1", f"{100 * s['full_f1']:.1f}", PUBLISHED_ISANLP_GUMRRG["full_f1"]),
        ("Non-default detection P / R (span)", f"{100 * s['nondefault_p']:.1f} / {100 * s['nondefault_r']:.1f}", "–"),
        ("Non-default P / R (span + relation)",
         f"{100 * s['nondefault_rel_p']:.1f} / {100 * s['nondefault_rel_r']:.1f}", "–"),
        ("Throughput (GUM documents/s)", f"{result['texts_per_s']:.2f}", "–"),
        ("5-sentence answer, median / p95 ms", f"{result['median_ms_5_sentences']:.1f} / "
         f"{result['p95_ms_5_sentences']:.1f}", "–"),
    ]
    head = (f"GUM {result['split']}, {result['documents']} documents, parser `{result['parser']}` "
            f"(predicted segmentation)\n\n| metric | {result['parser']} | isanlp-rst gumrrg (published) |\n|---|---|---|")
    return head + "\n" + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows)


def plot(result: dict[str, Any], path: str | Path) -> Path:
    """Draw the F1 scores next to the published isanlp-rst gumrrg ones as a bar chart PNG; return the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = ["seg_f1", "span_f1", "nuc_f1", "rel_f1", "full_f1"]
    names = ["Seg", "Span", "Nuc", "Rel", "Full"]
    ours = [100 * result["scores"][k] for k in keys]
    theirs = [PUBLISHED_ISANLP_GUMRRG[k] for k in keys]
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=110)
    xs = range(len(keys))
    ax.bar([x - 0.2 for x in xs], ours, width=0.4, label=f"{result['parser']} (measured)", color="#d9480f")
    ax.bar([x + 0.2 for x in xs], theirs, width=0.4, label="isanlp-rst gumrrg (published)", color="#adb5bd")
    for x, v in zip(xs, ours):
        ax.text(x - 0.2, v + 1, f"{v:.1f}", ha="center", fontsize=8)
    ax.set_xticks(list(xs), names)
    ax.set_ylabel("F1 (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"RST parsing on GUM {result['split']} ({result['documents']} documents, end to end)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    tmp = out.with_name(out.name + ".part.png")
    fig.savefig(tmp)
    plt.close(fig)
    tmp.replace(out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.parser_bench", description=__doc__.splitlines()[0])
    ap.add_argument("--gum", default=str(DEFAULT_GUM_DIR), help="GUM RST folder (lisp_binary/, splits.tsv)")
    ap.add_argument("--split", default="test", choices=("train", "dev", "test"))
    ap.add_argument("--parser", default="rules", help="registered parser name")
    ap.add_argument("--limit", type=int, default=0, help="only the first N documents")
    ap.add_argument("--n-process", type=int, default=1)
    ap.add_argument("--latency-repeats", type=int, default=3)
    ap.add_argument("--json", dest="json_out", help="also write the results as JSON here")
    ap.add_argument("--plot", help="also draw the F1 scores next to isanlp-rst's as a PNG here")
    args = ap.parse_args(argv)
    try:
        result = run(args.gum, split=args.split, parser_name=args.parser, limit=args.limit,
                     n_process=args.n_process, latency_repeats=args.latency_repeats)
    except DTDialogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(markdown(result))
    s = result["scores"]
    print(f"\ntargets: seg F1 {s['seg_f1']:.3f} (>= {TARGETS['seg_f1']}), rel F1 {s['rel_f1']:.3f} "
          f"(>= {TARGETS['rel_f1']}), median {result['median_ms_5_sentences']:.1f} ms "
          f"(< {TARGETS['median_ms_5_sentences']:.0f})")
    if args.json_out:
        out = Path(args.json_out)
        tmp = out.with_suffix(out.suffix + ".tmp")
        tmp.write_text(json.dumps(result, indent=2), encoding="utf-8")
        tmp.replace(out)
    if args.plot:
        plot(result, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
