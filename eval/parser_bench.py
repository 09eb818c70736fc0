"""Benchmark an RST parser on GUM (or a corpus in GUM's layout): segmentation, RST-Parseval, speed.

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

The report names the corpus it ran on (the documents' name prefix, e.g. GUM or GENTLE) and prints the
published rows and issue 15's targets only where they compare like with like: GUM test, end to end.
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

from eval.report import save_figure
from parsers.base import get_parser
from parsers.errors import ConfigError, DTDialogError, InputError
from parsers.files import atomic_write_text
from parsers.gum import DEFAULT_GUM_DIR, GumDocument, iter_gum
from parsers.parseval import PUBLISHED_GUM, ParsevalCounts, aggregate, parseval
from parsers.tree import DiscourseTree

#: isanlp-rst ``gumrrg`` end-to-end results on GUM as published by its authors (percent).
PUBLISHED_ISANLP_GUMRRG = {k: round(100 * v, 1) for k, v in PUBLISHED_GUM["isanlp_rst_v3_gumrrg"].items()}
#: Published end-to-end rows shown beside ours (percent), with what is known of the GUM version each used.
PUBLISHED: dict[str, dict[str, Any]] = {
    "isanlp": {"label": "isanlp-rst v3 gumrrg", "scores": PUBLISHED_ISANLP_GUMRRG,
               "note": "XLM-R large, GPU; GUM 9.1 (eng.erst.gum), as its model card on Hugging Face "
                       "(tchewik/isanlp_rst_v3) states; ours is the GUM release in ../shared/data/gum_rst."},
    "dmrst": {"label": "DMRST (XLM-R base)", "scores": {k: round(100 * v, 1) for k, v in PUBLISHED_GUM["dmrst_xlmr_base_gum"].items()},
              "note": "GUM end to end, as quoted in issue 15; the GUM version is unknown (not found in the "
                      "sources searched), so the row is indicative only."},
}
#: Issue 15's targets on GUM test: end to end, over gold EDUs, and five-sentence texts/s on one core.
TARGETS = {"seg_f1": 0.93, "span_f1": 0.58, "nuc_f1": 0.42, "rel_f1": 0.33}
TARGETS_GOLD_EDUS = {"span_f1": 0.68, "rel_f1": 0.40}
TARGET_TEXTS_PER_S = 20.0

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


def _single_core(parser) -> None:
    """Pin torch (when a parser loaded it) to one thread and check the ONNX encoder runs one: the speed
    figures are per core."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
    encoder = getattr(getattr(parser, "encoder", None), "encoder", None)
    if encoder is not None and getattr(encoder, "threads", 1) != 1:
        raise ConfigError("the parse speed is per core: unset DTDIALOG_ENCODER_THREADS (or set it to 1)")


def throughput(parser, texts: list[str], *, repeats: int = 2) -> float:
    """Return texts/s of ``parser.parse_many`` over ``texts`` (batched, as the index builder parses)."""
    t0 = time.perf_counter()
    for _ in range(repeats):
        for _tree in parser.parse_many(texts):
            pass
    elapsed = time.perf_counter() - t0
    return len(texts) * repeats / elapsed if elapsed else float("inf")


def corpus_name(docs: list[GumDocument], gum_dir: Path | str) -> str:
    """Return the corpus the documents come from: their shared name prefix (``GUM_academic_art`` -> GUM),
    else the folder's name."""
    prefixes = {d.name.split("_", 1)[0] for d in docs}
    return prefixes.pop() if len(prefixes) == 1 else Path(gum_dir).name


def comparable_to_published(result: dict[str, Any]) -> bool:
    """Whether the published rows (GUM test, end to end) compare like with like with ``result``."""
    return result.get("corpus") == "GUM" and result.get("split") == "test" and not result.get("gold_edus")


def _parse_docs(parser, docs: list[GumDocument], *, gold_edus: bool, n_process: int) -> list[DiscourseTree]:
    texts = [d.tree.text for d in docs]
    if not gold_edus:
        return list(tqdm(parser.parse_many(texts, n_process=n_process), total=len(texts), desc="parse", file=sys.stderr))
    return [parser.parse_segmented(d.tree.text, [e.start for e in d.tree.edus])
            for d in tqdm(docs, desc="parse (gold EDUs)", file=sys.stderr)]


def run(gum_dir: Path | str, *, split: str = "test", parser_name: str = "rules", limit: int = 0,
        n_process: int = 1, latency_repeats: int = 3, gold_edus: bool = False) -> dict[str, Any]:
    """Return the benchmark results as a dict (scores in [0, 1], times in ms and texts/s).

    With ``gold_edus`` the parser builds trees over GUM's gold EDUs (``parse_segmented``); a parser
    without that method gives ``{"supported": False, ...}``.
    """
    docs = list(iter_gum(gum_dir, split=split))
    if limit:
        docs = docs[:limit]
    if not docs:
        raise InputError(f"no GUM documents for split {split!r} in {gum_dir}")
    parser = get_parser(parser_name)
    base = {"parser": parser_name, "corpus": corpus_name(docs, gum_dir), "split": split, "documents": len(docs),
            "gold_edus": gold_edus}
    if gold_edus and not hasattr(parser, "parse_segmented"):
        return {**base, "supported": False, "reason": f"parser {parser_name!r} cannot parse pre-segmented text"}
    _single_core(parser)
    parser.parse("Warm up the models. It is not timed.")
    t0 = time.perf_counter()
    preds = _parse_docs(parser, docs, gold_edus=gold_edus, n_process=n_process)
    elapsed = time.perf_counter() - t0
    counts = ParsevalCounts()
    by_genre: dict[str, ParsevalCounts] = {}
    mismatched = 0
    for doc, pred in zip(docs, preds):
        if pred.text != doc.tree.text:
            mismatched += 1  # cleaning changed the text: offsets would not line up
            continue
        c = parseval(doc.tree, pred)
        counts = counts + c
        by_genre[doc.genre] = by_genre.get(doc.genre, ParsevalCounts()) + c
    samples = list(CAR_ANSWERS) + five_sentence_windows([d.tree for d in docs])
    lat = latency_ms(parser, samples, repeats=latency_repeats)
    return {
        **base, "supported": True, "skipped_text_mismatch": mismatched,
        "scores": aggregate(counts), "counts": counts.to_dict(),
        "genres": {g: {"documents": c.docs, **aggregate(c)} for g, c in sorted(by_genre.items())},
        "texts_per_s": len(docs) / elapsed if elapsed else float("inf"),
        "edus_per_s": sum(len(p.edus) for p in preds) / elapsed if elapsed else float("inf"),
        "latency_texts": len(samples), "median_ms_5_sentences": statistics.median(lat),
        "p95_ms_5_sentences": percentile(lat, 95), "n_process": n_process,
        "five_sentence_texts_per_s": throughput(parser, samples),
    }


def _cell(result: dict[str, Any], key: str) -> str:
    if not result.get("supported", True):
        return "not supported"
    s = result["scores"]
    if key == "seg" and result.get("gold_edus"):
        return "gold"  # the parser was given GUM's EDUs: segmentation was not predicted
    if key == "seg":
        return f"{100 * s['seg_f1']:.1f} ({100 * s['seg_p']:.1f} / {100 * s['seg_r']:.1f})"
    if key in ("nondefault", "nondefault_rel"):
        return f"{100 * s[key + '_p']:.1f} / {100 * s[key + '_r']:.1f}"
    if key == "docs_s":
        return f"{result['texts_per_s']:.2f}"
    if key == "lat":
        return f"{result['median_ms_5_sentences']:.1f} / {result['p95_ms_5_sentences']:.1f}"
    if key == "five_s":
        return f"{result['five_sentence_texts_per_s']:.1f}" if "five_sentence_texts_per_s" in result else "–"
    return f"{100 * s[key + '_f1']:.1f}"


ROWS = (("EDU segmentation F1 (P / R)", "seg"), ("Span F1", "span"), ("Nuclearity F1", "nuc"),
        ("Relation F1", "rel"), ("Full F1", "full"), ("Non-default detection P / R (span)", "nondefault"),
        ("Non-default P / R (span + relation)", "nondefault_rel"), ("Throughput (documents/s)", "docs_s"),
        ("5-sentence answers/s, one core, batched", "five_s"), ("5-sentence answer, median / p95 ms", "lat"))


def _title(result: dict[str, Any]) -> str:
    mode = "gold EDUs" if result.get("gold_edus") else "predicted segmentation"
    return f"{result.get('corpus', 'unknown corpus')} {result['split']}, {result['documents']} documents, {mode}"


def markdown(result: dict[str, Any] | list[dict[str, Any]]) -> str:
    """Return the results (one parser or several) as a Markdown table, beside the published rows when they
    compare like with like (GUM test, end to end), plus a per-genre table."""
    results = result if isinstance(result, list) else [result]
    first = results[0]
    published = list(PUBLISHED.values()) if comparable_to_published(first) else []
    names = [r["parser"] for r in results] + [p["label"] for p in published]
    lines = [f"{_title(first)}\n\n| metric | {' | '.join(names)} |\n|---|{'---|' * len(names)}"]
    for label, key in ROWS:
        pub = [f"{p['scores'][key + '_f1']:.1f}" if key + "_f1" in p["scores"] else "–" for p in published]
        lines.append(f"| {label} | {' | '.join([_cell(r, key) for r in results] + pub)} |")
    if published:
        lines.append("")
        lines.extend(f"- {p['label']}: {p['note']}" for p in published)
    genres = sorted({g for r in results for g in r.get("genres", {})})
    metrics = ("span", "nuc", "rel", "full") if first.get("gold_edus") else ("seg", "span", "nuc", "rel", "full")
    if genres:
        header = " / ".join(k.capitalize() for k in metrics)
        lines += ["", f"Per genre (F1 x 100: {header}):", "",
                  f"| genre | docs | {' | '.join(names)} |", f"|---|---|{'---|' * len(names)}"]
        for g in genres:
            cells = []
            for r in results:
                s = r.get("genres", {}).get(g)
                cells.append(" / ".join(f"{100 * s[k + '_f1']:.1f}" for k in metrics)
                             if s else "–")
            docs = next(int(r["genres"][g]["documents"]) for r in results if g in r.get("genres", {}))
            lines.append(f"| {g} | {docs} | {' | '.join(cells)} |")
    return "\n".join(lines)


def plot(result: dict[str, Any] | list[dict[str, Any]], path: str | Path) -> Path:
    """Draw the parsers' F1 scores (beside the published rows when comparable) as a bar chart PNG; return it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = [r for r in (result if isinstance(result, list) else [result]) if r.get("supported", True)]
    first = results[0] if results else {"split": "?", "documents": 0}
    keys = ["span_f1", "nuc_f1", "rel_f1", "full_f1"] if first.get("gold_edus") else \
        ["seg_f1", "span_f1", "nuc_f1", "rel_f1", "full_f1"]
    series = [(f"{r['parser']} (measured)", [100 * r["scores"][k] for k in keys]) for r in results]
    if results and comparable_to_published(first):
        series += [(f"{p['label']} (published)", [p["scores"].get(k, 0.0) for k in keys]) for p in PUBLISHED.values()]
    colours = ["#d9480f", "#1c7ed6", "#2b8a3e", "#862e9c", "#adb5bd", "#868e96"]
    fig, ax = plt.subplots(figsize=(7.6, 3.8), dpi=110)
    width = 0.8 / len(series)
    for n, (label, values) in enumerate(series):
        xs = [x - 0.4 + width * (n + 0.5) for x in range(len(keys))]
        ax.bar(xs, values, width=width, label=label, color=colours[n % len(colours)])
        for x, v in zip(xs, values):
            if v:
                ax.text(x, v + 1, f"{v:.0f}", ha="center", fontsize=6)
    ax.set_xticks(list(range(len(keys))), [k.removesuffix("_f1").capitalize() for k in keys])
    ax.set_ylabel("F1 (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"RST parsing, {_title(first)}" if results else "RST parsing", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    out = save_figure(fig, path)
    plt.close(fig)
    return out


def targets_line(result: dict[str, Any]) -> str:
    """Return one line saying which of issue 15's targets ``result`` meets."""
    if not result.get("supported", True):
        return f"{result['parser']}: not supported in this mode"
    goals = TARGETS_GOLD_EDUS if result.get("gold_edus") else TARGETS
    s = result["scores"]
    parts = [f"{k} {100 * s[k]:.1f} ({'met' if s[k] >= v else 'missed'}, >= {100 * v:.0f})" for k, v in goals.items()]
    speed = result.get("five_sentence_texts_per_s", 0.0)
    parts.append(f"{speed:.1f} five-sentence texts/s ({'met' if speed >= TARGET_TEXTS_PER_S else 'missed'}, "
                 f">= {TARGET_TEXTS_PER_S:.0f})")
    return f"{result['parser']}: " + ", ".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.parser_bench", description=__doc__.splitlines()[0])
    ap.add_argument("--gum", default=str(DEFAULT_GUM_DIR), help="GUM RST folder (lisp_binary/, splits.tsv)")
    ap.add_argument("--split", default="test", choices=("train", "dev", "test"))
    ap.add_argument("--parser", default="rules", help="registered parser name, or several separated by commas")
    ap.add_argument("--gold-edus", action="store_true", help="build trees over GUM's gold EDUs (parsers that "
                    "accept pre-segmented text; others are reported as not supported)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N documents")
    ap.add_argument("--n-process", type=int, default=1)
    ap.add_argument("--latency-repeats", type=int, default=3)
    ap.add_argument("--json", dest="json_out", help="also write the results as JSON here")
    ap.add_argument("--plot", help="also draw the F1 scores beside the published ones as a PNG here")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.parser.split(",") if n.strip()]
    if not names or args.limit < 0 or args.latency_repeats < 1:
        print("error: --parser needs a name, --limit must be >= 0 and --latency-repeats >= 1", file=sys.stderr)
        return 2
    try:
        results = [run(args.gum, split=args.split, parser_name=name, limit=args.limit, n_process=args.n_process,
                       latency_repeats=args.latency_repeats, gold_edus=args.gold_edus) for name in names]
    except DTDialogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(markdown(results))
    if results[0]["corpus"] == "GUM" and args.split == "test":
        print("\ntargets (issue 15, GUM test):")
        for r in results:
            print("  " + targets_line(r))
    if args.json_out:
        atomic_write_text(args.json_out, json.dumps(results[0] if len(results) == 1 else results, indent=2))
    if args.plot:
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
