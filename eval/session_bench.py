"""Benchmark the session store's share of a turn as a session grows (``SessionStore.load`` + ``save``).

    python -m eval.session_bench [--turns 60] [--trace-kb 20] [--json OUT]

Each simulated turn does what ``DialogueManager.handle`` does with the store: load the record,
append two transcript lines and one trace of about ``--trace-kb`` kB (the size of a real
``--explain`` trace with ten kept and ten rejected candidates), and save. Two modes are timed on
separate files:

* ``turn`` - what the manager does since the review fix: ``load(traces=False)``, so the stored
  history is never read; ``save`` appends the one new trace and prunes to ``max_traces``.
* ``history`` - the previous behaviour: every turn loads and parses the latest ``max_traces``
  traces before saving.

Prints mean and p95 milliseconds per turn for early, middle and late windows of the session.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from eval.latency import summarize
from parsers.errors import DTDialogError
from parsers.files import atomic_write_text

MODES = ("turn", "history")


def synthetic_trace(turn: int, *, kb: int) -> dict[str, Any]:
    """Return a trace-shaped dict of about ``kb`` kilobytes of JSON for ``turn``."""
    candidate = {"id": "overheating-002#1", "dialogue_id": "overheating-002", "text": "x" * 160,
                 "retrieval_score": 1.0, "score": 1.0, "features": {"retrieval": 1.0, "agreement": 0.95},
                 "agreement": {"verdict": True, "score": 0.95, "chains": ["Concession[a b] -> Attribution[c d]"],
                               "missing": [], "addressed": 2, "required": 2}}
    size = len(json.dumps(candidate))
    n = max(1, kb * 1024 // size)
    return {"turn": turn, "user_text": "no, that didn't help", "intent": "reject", "notes": [],
            "steps": [{"step": 0, "candidates": [candidate] * (n // 2), "rejected": [candidate] * (n - n // 2)}],
            "decision": {"kind": "answer", "answer_id": "overheating-001#1"}}


def run(*, turns: int, trace_kb: int, max_traces: int = 50, folder: Path | None = None) -> dict[str, Any]:
    """Return per-mode latency summaries (ms per turn) for early, middle and late turn windows."""
    from dtdialog.dialogue.session import SessionRecord
    from dtdialog.dialogue.session_store import SessionStore

    if turns < 3:
        raise DTDialogError(f"--turns must be at least 3, got {turns}")
    result: dict[str, Any] = {"turns": turns, "trace_kb": trace_kb, "max_traces": max_traces, "modes": {}}
    with tempfile.TemporaryDirectory(prefix="dtq-session-bench-", dir=folder) as tmp:
        for mode in MODES:
            store = SessionStore(Path(tmp) / f"{mode}.sqlite", max_traces=max_traces)
            store.save(SessionRecord(id="bench"))
            times: list[float] = []
            for turn in tqdm(range(1, turns + 1), desc=f"{mode} turns", unit="turn", file=sys.stderr):
                start = time.perf_counter()
                record = store.load("bench", traces=(mode == "history"))
                record.turns = turn
                record.add_message("user", "the fan does come on when I turn on the air conditioning")
                record.add_message("bot", "Then the fan motor and its wiring are fine. " * 8, kind="answer")
                record.traces.append(synthetic_trace(turn, kb=trace_kb))
                store.save(record, keep_traces=max_traces)
                times.append((time.perf_counter() - start) * 1000)
            kept = len(store.load("bench").traces)
            store.close()
            third = max(1, turns // 3)
            result["modes"][mode] = {"early": summarize(times[:third]), "middle": summarize(times[third:2 * third]),
                                     "late": summarize(times[2 * third:]), "traces_kept": kept}
    return result


def format_result(result: dict[str, Any]) -> str:
    """Return the printable table of ``run``'s result."""
    lines = [f"session store per turn: {result['turns']} turns, traces of ~{result['trace_kb']} kB, "
             f"max_traces {result['max_traces']}",
             f"{'mode':10} {'window':8} {'mean':>8} {'p95':>8} {'max':>8}  (ms)"]
    for mode, windows in result["modes"].items():
        for name in ("early", "middle", "late"):
            s = windows[name]
            lines.append(f"{mode:10} {name:8} {s['mean_ms']:8.2f} {s['p95_ms']:8.2f} {s['max_ms']:8.2f}")
        lines.append(f"{mode:10} traces kept after the run: {windows['traces_kept']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.session_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=60, help="turns in the simulated session (default 60)")
    ap.add_argument("--trace-kb", type=int, default=20, help="approximate size of one turn trace (default 20 kB)")
    ap.add_argument("--json", type=Path, default=None, help="write the result as JSON here")
    args = ap.parse_args(argv)
    try:
        result = run(turns=args.turns, trace_kb=max(1, args.trace_kb))
    except DTDialogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_result(result))
    if args.json:
        atomic_write_text(args.json, json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
