"""The benchmark's Markdown report and its picture."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eval.already_tried.measure import MethodResult, Share


def _pct(s: Share | None) -> str:
    return "—" if s is None else f"{100 * s.value:.1f} [{100 * s.low:.1f}, {100 * s.high:.1f}]"


def _diff(d: dict) -> str:
    text = f"{100 * d['diff']:+.1f} [{100 * d['diff_low']:+.1f}, {100 * d['diff_high']:+.1f}]"
    if "ratio" in d:
        text += f"; ×{d['ratio']:.2f} [{d['ratio_low']:.2f}, {d['ratio_high']:.2f}]"
    return text


def table(results: Sequence[MethodResult], against: dict[str, dict], base: str) -> list[str]:
    lines = ["| method | first answer repeats what was tried, % [95% CI] | first answer relevant and new, % | "
             f"relevant, % | repeats − {base} (pts; ratio) | relevant and new − {base} (pts) | no candidate ranked |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        pair = against.get(r.method)
        lines.append(f"| {r.label} | {_pct(r.repeats)} | {_pct(r.relevant_new)} | {_pct(r.relevant)} | "
                     f"{_diff(pair['repeats']) if pair else '—'} | "
                     f"{_diff(pair['relevant_new']).split(';')[0] if pair else '—'} | {r.unranked} |")
    return lines


def markdown(*, command: str, header: Sequence[str], sections: Sequence[tuple[str, list[str]]],
             extraction: dict | None, agreement: dict | None) -> str:
    lines = ["# Redundant advice: does the first answer repeat what the customer already did?", "",
             f"Command: `{command}`", "", *header, ""]
    for title, body in sections:
        lines += [f"## {title}", "", *body, ""]
    if extraction:
        lines += ["## What the engine reads as tried", "",
                  f"Over {extraction['questions']} questions: something extracted in {extraction['detected']}; "
                  f"judged phrases found {extraction['phrases_found']}/{extraction['phrases']} "
                  f"(recall {extraction['recall']:.2f}); extracted actions naming a judged part "
                  f"{extraction['actions_right']}/{extraction['actions']} (precision {extraction['precision']:.2f}).", ""]
        reading = extraction.get("repeat_reading")
        if reading:
            lines += [f"The demotion rule (those actions against each candidate's main recommendation) over "
                      f"{reading['candidates']} judged candidates: flags {reading['caught']} of the {reading['repeats']} "
                      f"judged to repeat what was tried (recall {reading['recall']:.2f}) and {reading['flagged_wrong']} "
                      f"others (precision {reading['precision']:.2f}).", ""]
    if agreement:
        lines += ["## Agreement of two independent judges", "",
                  f"{agreement['questions']} questions judged twice.", "", "| label | items | agree | Cohen's kappa |",
                  "|---|---|---|---|"]
        lines += [f"| {a['label']} | {a['items']} | {a['agree']:.2f} | {a['kappa']:.2f} |" for a in agreement["labels"]]
        lines.append("")
    return "\n".join(lines)


def plot(path: Path, results: Sequence[MethodResult]) -> Path | None:
    """Draw each method's two shares with CIs; return the path (None without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    from eval.report import save_figure

    fig, ax = plt.subplots(figsize=(7, 3.8))
    width = 0.38
    for k, (attr, name) in enumerate((("repeats", "repeats what was tried"), ("relevant_new", "relevant and new"))):
        shares = [getattr(r, attr) for r in results]
        xs = [i + (k - 0.5) * width for i in range(len(results))]
        vals = [100 * s.value for s in shares]
        errs = [[100 * (s.value - s.low) for s in shares], [100 * (s.high - s.value) for s in shares]]
        ax.bar(xs, vals, width, yerr=errs, capsize=3, label=f"first answer {name}")
    ax.set_xticks(range(len(results)), [r.method for r in results])
    ax.set_ylabel("% of questions (95% CI)")
    ax.set_ylim(0, 100)
    ax.grid(axis="y", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path
