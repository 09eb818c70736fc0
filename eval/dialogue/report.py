"""What the dialogue evaluation writes: results.md tables, the success@k chart and readable transcripts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eval.dialogue.customer import BUDGET, Session
from eval.dialogue.metrics import KS
from eval.provenance import provenance_lines
from eval.report import save_figure
from parsers.files import atomic_write_text

_ROWS = (("wrong_per_session", "wrong answers / session"), ("handoff_rate", "hand-off rate"),
         ("turns_to_success", "bot turns to success"), ("session_success", "every step succeeded"),
         ("honest_end_gold_absent", "gold-absent: ends honestly (<= 1 wrong)"),
         ("step1_success@3_gold_present", "gold-present: step 1 success@3"),
         ("step1_success@3_gold_present_closed_pool", "the same dialogues in the closed pool: step 1 success@3"),
         ("step1_success@3_gold_present_open_minus_closed", "open - closed on them (paired)"))


def _ci(m: dict | None, *, percent: bool = True) -> str:
    if not m or m["value"] != m["value"]:  # absent or NaN
        return "-"
    if percent:
        return f"{m['value']:.1%} [{m['low']:.1%}, {m['high']:.1%}]"
    return f"{m['value']:.2f} [{m['low']:.2f}, {m['high']:.2f}]"


def _steps(pool: dict) -> int:
    names = next(iter(pool.values()), {}).get("measures", {})
    return sum(1 for k in names if k.endswith(f"_success@{KS[0]}") and k.startswith("step"))


def pool_table(pool: dict) -> list[str]:
    """Return one Markdown table: a row per measure, a column per bot."""
    bots = list(pool)
    lines = ["| measure | " + " | ".join(bots) + " |", "|---" * (len(bots) + 1) + "|"]
    for step in range(_steps(pool)):
        for k in KS:
            key = f"step{step + 1}_success@{k}"
            n = pool[bots[0]]["measures"][key]["n"]
            lines.append(f"| step {step + 1} success@{k} (n={n}) | "
                         + " | ".join(_ci(pool[b]["measures"].get(key)) for b in bots) + " |")
    for key, label in _ROWS:
        if key in pool[bots[0]]["measures"]:
            percent = key not in ("wrong_per_session", "turns_to_success")
            lines.append(f"| {label} | " + " | ".join(_ci(pool[b]["measures"].get(key), percent=percent)
                                                     for b in bots) + " |")
    for key in ("greetings_after_handoff", "false_handoff_reasons", "misrouted_first_messages"):
        lines.append(f"| {key.replace('_', ' ')} (count) | " + " | ".join(str(pool[b]["zero_counts"][key])
                                                                         for b in bots) + " |")
    return lines


def paired_lines(pool: dict) -> list[str]:
    out = []
    for anchor in ("dense", "bm25", "dtq-no-dt"):
        diffs = pool.get("dtq", {}).get(f"vs_{anchor}")
        if not diffs:
            continue
        parts = [f"{name} {d['value']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]" for name, d in diffs.items()
                 if d["value"] == d["value"]]
        out.append(f"- dtq - {anchor} (paired bootstrap over sessions): " + "; ".join(parts))
    return out


def markdown(results: Sequence[dict], *, command: str, setup: dict) -> str:
    lines = ["# Simulated-customer dialogue evaluation", "", f"Command: `{command}`", "",
             *(provenance_lines(setup) if "data" in setup else []), "",
             *([f"Calibrator: {setup['calibrator']} (fitted on the team's own dialogues)", ""]
               if setup.get("calibrator", "shipped") != "shipped" else []),
             f"Seed {setup.get('seed')}. Values: share or mean with a 95% bootstrap CI over sessions. success@k of step i: the step's gold "
             "answer shown within k bot turns of that step (over dialogues with a step i; a step never reached "
             "fails). Open pool: the gold answers of a seeded half of the dialogues are removed.", "",
             "The customer (`eval/dialogue/customer.py`): opens with the mechanics title, else the first logged "
             "turn; accepts the step's gold answer and sends the next logged follow-up; rejects any other answer "
             "with a seeded phrase; picks the gold option by number, else 'none of these'; answers any other bot "
             "turn with the body (once), then the step's follow-up (once), then 'I don't have more details'; "
             f"{BUDGET} bot turns per step; after a hand-off it sends 'hello? is anyone there?' once. Baselines: "
             "dense / BM25 next result not yet shown, searched with the customer's messages so far.", ""]
    for res in results:
        lines += [f"## {res['dataset']}", "", f"{res['description']}", "",
                  f"{res['n_dialogues']} dialogues; pool {res['n_pool']} answers (open pool {res['n_open_pool']}, "
                  f"gold absent for {res['gold_absent_open_pool']}); engine ranker: {res['ranker'] or '-'}; "
                  f"seconds: {res['seconds']}", ""]
        for name, why in res["skipped"].items():
            lines.append(f"- {name} skipped: {why}")
        for pool_name, pool in res["pools"].items():
            if not pool:
                continue
            lines += [f"### {pool_name} pool", "", *pool_table(pool), "", *paired_lines(pool), ""]
        for pool_name, multi in (res.get("multi_part") or {}).items():
            lines += multi_part_lines(pool_name, multi)
    return "\n".join(lines) + "\n"


def multi_part_lines(pool_name: str, multi: dict) -> list[str]:
    """Return the multi-part questions' table: the engine with and without the tree, and their paired difference."""
    steps = sorted((k for k in multi["dtq"] if k.startswith("step")), key=lambda k: int(k[4:k.index("_")]))
    rows = (*((k, f"step {k[4:k.index('_')]} success@3", True) for k in steps),
            ("later_steps_success@3", "steps after the first, success@3 (part i at step i)", True),
            ("session_success", "every step succeeded", True), ("wrong_per_session", "wrong answers / session", False))
    lines = [f"### {pool_name} pool, multi-part questions (DT-Q plans them in 2 or more parts): {multi['n']} sessions",
             "", "| measure | dtq | dtq-no-dt |", "|---|---|---|"]
    lines += [f"| {label} | {_ci(multi['dtq'][key], percent=pct)} | {_ci(multi['dtq-no-dt'][key], percent=pct)} |"
              for key, label, pct in rows]
    diffs = multi["dtq_minus_no_dt"]
    parts = [f"{name} {d['value']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]" for name, d in diffs.items()
             if d["value"] == d["value"]]
    return [*lines, "", "- dtq - dtq-no-dt on them (paired bootstrap over sessions): " + ("; ".join(parts) or "-"), ""]


def plot_success(path: Path, results: Sequence[dict]) -> Path | None:
    """Draw step-1 success@k per bot: a row per set, a column per pool; return the path (None without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    rows = [r for r in results if any(r["pools"].values())]
    if not rows:
        return None
    pools = sorted({p for r in rows for p, pool in r["pools"].items() if pool}, key=["closed", "open"].index)
    fig, axes = plt.subplots(len(rows), len(pools), figsize=(4.5 * len(pools), 3.2 * len(rows)), squeeze=False)
    for row, res in zip(axes, rows):
        for ax, pool_name in zip(row, pools):
            _success_panel(ax, res["pools"].get(pool_name) or {}, f"{res['dataset']}, {pool_name} pool")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def _success_panel(ax, pool: dict, title: str) -> None:
    for bot, data in pool.items():
        ms = [data["measures"][f"step1_success@{k}"] for k in KS]
        ax.errorbar(KS, [m["value"] for m in ms], yerr=[[m["value"] - m["low"] for m in ms],
                                                      [m["high"] - m["value"] for m in ms]],
                    marker="o", capsize=3, label=bot)
    ax.set_title(title)
    ax.set_xlabel("bot turns (k)")
    ax.set_ylabel("step 1 success@k")
    ax.set_xticks(list(KS))
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    if pool:
        ax.legend()


def transcript(session: Session, *, gold: Sequence[str] = (), max_chars: int = 400) -> list[str]:
    """Return the session as readable lines: ``customer>`` / ``bot [kind]>``, gold answers and options marked."""
    outcome = "succeeded" if session.succeeded else ("handed off" if session.handed_off else "failed")
    lines = [f"### {session.bot}: {outcome}, {session.wrong_answers} wrong answers"
             + ("" if session.gold_present else " (gold absent from the pool)"), ""]
    if session.false_handoff_reason:
        lines.append(f"FALSE HAND-OFF REASON: {session.false_handoff_reason}  ")
    for line in session.lines:
        text = " ".join(line.text.split())
        text = text if len(text) <= max_chars else text[:max_chars] + " ..."
        if line.speaker == "customer":
            lines.append(f"    customer> {text}")
            continue
        mark = " [GOLD]" if line.gold else (f" [wrong: {line.answer_id}]" if line.answer_id else "")
        lines.append(f"    bot [{line.kind}]{mark}> {text}")
        step_gold = gold[line.step] if line.step < len(gold) else ""
        lines += [f"        option {o.number}: {o.answer_id or '-'}" + (" [GOLD]" if o.answer_id == step_gold else "")
                  for o in line.options]
    return lines + [""]


def write_transcripts(out: Path, name: str, pool: str, by_bot: dict[str, list[Session]], ids: Sequence[str],
                      gold: dict[str, tuple[str, ...]]) -> Path:
    """Write the sampled dialogues' sessions of every bot to ``out/transcripts/<set>_<pool>.md``."""
    lines = [f"# {name}, {pool} pool: transcripts of {len(ids)} sampled dialogues", ""]
    for did in ids:
        lines += [f"## dialogue {did} (gold per step: {', '.join(gold.get(did, ()))})", ""]
        for sessions in by_bot.values():
            lines += [line for s in sessions if s.dialogue_id == did for line in transcript(s, gold=gold.get(did, ()))]
    path = out / "transcripts" / f"{name}_{pool}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path
