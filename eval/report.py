"""Reconstruction reports: a Markdown table shaped like the paper's Table 1, a CSV and a PNG chart with CI bars.

Every file is written to a temporary name first and renamed into place, so an interrupted run
never leaves a half-written report.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.metrics import DIALOGUE_TYPES, MetricReport, MetricValue
from eval.provenance import provenance_lines
from parsers.files import atomic_write

# The paper's Table 1 (car repair, 2carpros.com, their own data): percent, ± as printed.
PAPER_TABLE1 = {
    "Baseline 1 (keywords)": (62.3, 60.2, 58.2, 52.5),
    "Baseline 2 (keywords + syntactic generalization)": (67.0, 63.8, 57.3, 55.6),
    "DT-Q dialogue formation": (72.3, 70.3, 65.1, 65.9),
}
PAPER_PM = {
    "Baseline 1 (keywords)": (4.5, 5.6, 5.0, 5.7),
    "Baseline 2 (keywords + syntactic generalization)": (4.8, 4.8, 5.3, 5.9),
    "DT-Q dialogue formation": (5.6, 4.9, 5.5, 5.7),
}


@dataclass
class MethodRun:
    """One method on one dataset: its metrics, or the reason it was skipped, and its wall time."""

    method: str
    label: str
    report: MetricReport | None = None
    skipped: str | None = None
    fit_seconds: float = 0.0
    rank_seconds: float = 0.0
    #: an engine method's ranker as its engine resolved it (``learned`` or ``rules``); empty for the others
    ranker: str = ""
    #: every dialogue's reconstruction, kept so a paired difference can be taken against another method's
    results: list = field(default_factory=list, repr=False)


@dataclass
class DatasetRun:
    """All methods on one dataset."""

    dataset: str
    description: str = ""
    own_data: bool = False
    n_dialogues: int = 0
    n_pool: int = 0
    runs: list[MethodRun] = field(default_factory=list)
    skipped: str | None = None
    command: str = ""
    seed: int = 13
    n_resamples: int = 1000
    k: int = 100
    #: how the figures were made (``eval.provenance.provenance``): data, pool, parser, encoder, ranker, commit
    provenance: dict = field(default_factory=dict)
    #: "method - its twin without the tree" -> metric name -> paired difference (``eval.metrics.paired_metrics``)
    paired: dict[str, dict[str, MetricValue]] = field(default_factory=dict)


def _pct(m: MetricValue | None, *, ci: bool = True) -> str:
    if m is None or math.isnan(m.value):
        return "—"
    if not ci:
        return f"{100 * m.value:.1f}"
    return f"{100 * m.value:.1f} [{100 * m.low:.1f}, {100 * m.high:.1f}]"


def _num(m: MetricValue) -> str:
    if math.isnan(m.value):
        return "—"
    return f"{m.value:.3f} [{m.low:.3f}, {m.high:.3f}]"


def markdown(run: DatasetRun) -> str:
    """Return the Markdown report of one dataset: Table 1, the retrieval metrics and the skipped methods."""
    out = io.StringIO()
    own = " (the project's own data)" if run.own_data else ""
    out.write(f"### {run.dataset}{own}\n\n")
    if run.skipped:
        out.write(f"Skipped: {run.skipped}\n\n")
        return out.getvalue()
    if run.provenance:
        out.write("".join(f"{line}\n" for line in provenance_lines(run.provenance)) + "\n")
    out.write(f"{run.description}. {run.n_dialogues} test dialogues, {run.n_pool} candidate answers. "
              f"Percent, 95% bootstrap CI over dialogues ({run.n_resamples} resamples, seed {run.seed}).\n\n")
    done = [r for r in run.runs if r.report is not None]
    if done:
        first = done[0].report
        out.write("| Dialog type | " + " | ".join(DIALOGUE_TYPES) + " |\n")
        out.write("|---|" + "---|" * len(DIALOGUE_TYPES) + "\n")
        out.write("| n (dialogues) | " + " | ".join(str(first.table1[t].n) for t in DIALOGUE_TYPES) + " |\n")
        for r in done:
            out.write(f"| {r.label} | " + " | ".join(_pct(r.report.table1[t]) for t in DIALOGUE_TYPES) + " |\n")
        out.write("\n")
        out.write("| Method | dialogue correct | step 1 acc | step 2 acc | step 3 acc | P@1 | "
                  f"{first.recall.name} | MRR@{run.k} | steps | fit s | rank s |\n")
        out.write("|---|---|---|---|---|---|---|---|---|---|---|\n")
        for r in done:
            rep = r.report
            steps = " | ".join(_pct(rep.per_step[i]) for i in (1, 2, 3))
            out.write(f"| {r.label} | {_pct(rep.primary)} | {steps} | {_pct(rep.p_at_1)} | {_pct(rep.recall)} | "
                      f"{_num(rep.mrr)} | {rep.p_at_1.n_steps} | {r.fit_seconds:.1f} | {r.rank_seconds:.1f} |\n")
        out.write("\n")
    out.write(paired_markdown(run))
    for r in run.runs:
        if r.skipped:
            out.write(f"- {r.label}: skipped — {r.skipped}\n")
    if any(r.skipped for r in run.runs):
        out.write("\n")
    return out.getvalue()


#: the paired columns shown: Table 1, the dialogue, P@1 and MRR (the CSV has every metric)
_PAIRED_COLUMNS = (*DIALOGUE_TYPES, "dialogue correct", "P@1", "MRR")


def paired_markdown(run: DatasetRun) -> str:
    """Return the table of "with the tree - without" paired differences (points, 95% paired bootstrap CI), or ""."""
    if not run.paired:
        return ""
    out = io.StringIO()
    out.write("With the tree minus without it, same dialogues (percentage points; MRR as a fraction), "
              "95% paired bootstrap CI over dialogues:\n\n")
    out.write("| Pair | " + " | ".join(_PAIRED_COLUMNS) + " |\n")
    out.write("|---|" + "---|" * len(_PAIRED_COLUMNS) + "\n")
    for pair, diffs in run.paired.items():
        cells = [_points(diffs[c], scale=1 if c == "MRR" else 100) for c in _PAIRED_COLUMNS]
        out.write(f"| {pair} | " + " | ".join(cells) + " |\n")
    return out.getvalue() + "\n"


def _points(m: MetricValue, *, scale: int = 100) -> str:
    if math.isnan(m.value):
        return "—"
    digits = 1 if scale == 100 else 3
    return f"{scale * m.value:+.{digits}f} [{scale * m.low:+.{digits}f}, {scale * m.high:+.{digits}f}]"


def paper_markdown() -> str:
    """Return the paper's Table 1 as Markdown (for side-by-side reading)."""
    out = io.StringIO()
    out.write("| Paper, Table 1 (2carpros.com car repair) | " + " | ".join(DIALOGUE_TYPES) + " |\n")
    out.write("|---|" + "---|" * len(DIALOGUE_TYPES) + "\n")
    for name, values in PAPER_TABLE1.items():
        cells = [f"{v:.1f} ± {pm:.1f}" for v, pm in zip(values, PAPER_PM[name])]
        out.write(f"| {name} | " + " | ".join(cells) + " |\n")
    return out.getvalue()


def csv_rows(run: DatasetRun) -> list[dict]:
    """Return one row per (method, metric): dataset, method, metric, value, ci_low, ci_high, n, n_steps."""
    rows = []
    for r in run.runs:
        if r.report is None:
            rows.append({"dataset": run.dataset, "method": r.method, "metric": "skipped", "value": "",
                         "ci_low": "", "ci_high": "", "n": "", "n_steps": "", "note": r.skipped or ""})
            continue
        for m in r.report.all_values():
            rows.append({"dataset": run.dataset, "method": r.method, "metric": m.name,
                         "value": "" if math.isnan(m.value) else f"{m.value:.4f}",
                         "ci_low": "" if math.isnan(m.low) else f"{m.low:.4f}",
                         "ci_high": "" if math.isnan(m.high) else f"{m.high:.4f}",
                         "n": m.n, "n_steps": m.n_steps, "note": ""})
    for pair, diffs in run.paired.items():
        rows += [{"dataset": run.dataset, "method": pair, "metric": m.name,
                  **{key: "" if math.isnan(v) else f"{v:.4f}" for key, v in (("value", m.value), ("ci_low", m.low),
                                                                              ("ci_high", m.high))},
                  "n": m.n, "n_steps": m.n_steps, "note": "paired bootstrap"} for m in diffs.values()]
    return rows


def write_markdown(path: Path, runs: Sequence[DatasetRun], *, title: str = "Dialogue reconstruction") -> None:
    """Write the Markdown report of ``runs`` (with the command and the paper's table) to ``path``."""
    text = f"# {title}\n\n"
    commands = sorted({r.command for r in runs if r.command})
    if commands:
        text += "Command: `" + "`, `".join(commands) + "`\n\n"
    text += "".join(markdown(r) for r in runs) + paper_markdown()
    atomic_write(Path(path), lambda fh: fh.write(text.encode("utf-8")))


def write_csv(path: Path, runs: Sequence[DatasetRun]) -> None:
    """Write every metric of ``runs`` as CSV rows to ``path``."""
    buf = io.StringIO()
    fields = ["dataset", "method", "metric", "value", "ci_low", "ci_high", "n", "n_steps", "note"]
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for run in runs:
        writer.writerows(csv_rows(run))
    atomic_write(Path(path), lambda fh: fh.write(buf.getvalue().encode("utf-8")))


def plot_accuracy(path: Path, run: DatasetRun) -> bool:
    """Draw accuracy by dialogue type (groups) and method (bars) with 95% CI bars; return False if nothing to draw
    or matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False

    done = [r for r in run.runs if r.report is not None]
    if not done:
        return False
    columns = [*DIALOGUE_TYPES, "P@1 (all steps)"]
    width = 0.8 / len(done)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for j, r in enumerate(done):
        values = [*(r.report.table1[t] for t in DIALOGUE_TYPES), r.report.p_at_1]
        xs, ys, lo, hi = [], [], [], []
        for i, m in enumerate(values):
            if math.isnan(m.value):
                continue
            xs.append(i - 0.4 + width * (j + 0.5))
            ys.append(100 * m.value)
            lo.append(100 * (m.value - m.low))
            hi.append(100 * (m.high - m.value))
        ax.bar(xs, ys, width=width, yerr=[lo, hi], capsize=3, label=r.label)
    ax.set_xticks(range(len(columns)))
    ax.set_xticklabels(columns, fontsize=8)
    ax.set_ylabel("correct (%)")
    ax.set_ylim(0, 100)
    own = ", own data" if run.own_data else ""
    ax.set_title(f"Dialogue reconstruction on {run.dataset}{own} ({run.n_dialogues} dialogues), 95% CI")
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return True


def save_figure(fig: Any, path: str | Path, **savefig_args: Any) -> Path:
    """Save the matplotlib ``fig`` to ``path`` through ``parsers.files.atomic_write`` (format by suffix); return it."""
    path = Path(path)
    return atomic_write(path, lambda fh: fig.savefig(fh, format=path.suffix.lstrip(".").lower() or "png",
                                                     **savefig_args))
