"""Does one customer keep their reply time while abusive clients hammer the server? (issue 14's quota target)

    python -m eval.abuse_bench                        # starts `dtdialog serve` with its default quotas
    python -m eval.abuse_bench --abusers 3 --turns 30 --rounds 2 --json out.json
    python -m eval.abuse_bench --engine-threads 1     # the server's engine runs one call at a time

One well-behaved customer (its own loopback address) sends turns ``--pause`` seconds apart, in sessions of
five turns. The run alternates rounds *alone* and *with* ``--abusers`` other addresses that loop, without
pausing and ignoring ``Retry-After``, over 4,000-character searches (the longest a customer message may be)
and 100,000-character parses. Both conditions are measured in the same run, interleaved, so a change in
the machine's load falls on both. Reports the customer's turn p50/p95/p99 in each condition, the p95 ratio
(the target is at most 2), the customer's errors, and how the abusers' requests were answered.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from eval.load_test import FOLLOW_UPS, QUESTIONS, local_server, loopback_address, percentiles

LONG_SEARCH = ("My car will not start although I replaced the battery and the starter, and the lights dim when "
               "I turn the key. ") * 36  # ~4,000 characters: a turn's limit
LONG_PARSE = "The engine stalls when it is cold, but it runs when it is warm. " * 1600  # ~100,000 characters
#: Sessions of the customer last this many turns (a real conversation; the session rate is not the subject).
TURNS_PER_SESSION = 5


async def _customer(client: httpx.AsyncClient, *, turns: int, pause: float, start: int) -> tuple[list[float], list[str]]:
    latencies: list[float] = []
    errors: list[str] = []
    sid, token = "", ""
    for t in range(turns):
        k = start + t
        if k % TURNS_PER_SESSION == 0 or not sid:
            r = await client.post("/sessions")
            if r.status_code != 201:
                errors.append(f"POST /sessions: {r.status_code} {r.text[:120]}")
                await asyncio.sleep(pause)
                continue
            sid, token = r.json()["session_id"], r.json()["token"]
            text = QUESTIONS[(k // TURNS_PER_SESSION) % len(QUESTIONS)]
        else:
            text = FOLLOW_UPS[k % len(FOLLOW_UPS)]
        began = time.perf_counter()
        r = await client.post(f"/sessions/{sid}/messages", json={"text": text}, headers={"X-Session-Token": token})
        if r.status_code == 200:
            latencies.append(time.perf_counter() - began)
        else:
            errors.append(f"turn: {r.status_code} {r.text[:120]}")
        await asyncio.sleep(pause)
    return latencies, errors


async def _abuser(client: httpx.AsyncClient, stop: asyncio.Event, answers: Counter) -> None:
    while not stop.is_set():
        for method, path, body in (("POST", "/search", {"query": LONG_SEARCH}), ("POST", "/parse", {"text": LONG_PARSE})):
            try:
                r = await client.request(method, path, json=body)
                answers[f"{path} {r.status_code}"] += 1
            except httpx.HTTPError as exc:
                answers[f"{path} {type(exc).__name__}"] += 1


def _client(url: str, address: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=url, timeout=120,
                             transport=httpx.AsyncHTTPTransport(local_address=address))


async def bench(url: str, *, abusers: int, turns: int, rounds: int, pause: float) -> dict[str, Any]:
    """Run ``rounds`` x (alone, with abusers) rounds of ``turns`` customer turns; return the report."""
    samples: dict[str, list[float]] = {"alone": [], "abused": []}
    errors: list[str] = []
    answers: Counter = Counter()
    async with _client(url, loopback_address(0)) as customer:
        # warm-up: the first turns load caches that neither condition should pay for
        await _customer(customer, turns=2, pause=0.0, start=0)
        k = 0
        for _ in range(rounds):
            for condition in ("alone", "abused"):
                stop = asyncio.Event()
                clients = [_client(url, loopback_address(1 + a)) for a in range(abusers if condition == "abused" else 0)]
                tasks = [asyncio.create_task(_abuser(c, stop, answers)) for c in clients]
                if tasks:
                    await asyncio.sleep(1.0)  # let the abusers fill the queue first
                lat, errs = await _customer(customer, turns=turns, pause=pause, start=k)
                k += turns
                stop.set()
                await asyncio.gather(*tasks, return_exceptions=True)
                for c in clients:
                    await c.aclose()
                samples[condition] += lat
                errors += errs
                await asyncio.sleep(1.0)
    alone, abused = percentiles(samples["alone"]), percentiles(samples["abused"])
    return {"url": url, "abusers": abusers, "turns_per_round": turns, "rounds": rounds, "pause_s": pause,
            "customer_turns": {k: len(v) for k, v in samples.items()}, "customer_errors": errors[:10],
            "alone_ms": alone, "abused_ms": abused,
            "p95_ratio": round(abused["p95"] / alone["p95"], 2) if alone["p95"] else None,
            "abuser_answers": dict(sorted(answers.items()))}


def format_report(rep: dict[str, Any]) -> str:
    """Return the report as a few lines."""
    threads = rep.get("engine_threads") or "default"
    lines = [f"abuse bench: 1 customer, {rep['abusers']} abusive clients, {rep['rounds']} x {rep['turns_per_round']} "
             f"turns per condition, {rep['pause_s']} s between turns, engine threads: {threads}",
             f"  alone:  p50 {rep['alone_ms']['p50']} ms  p95 {rep['alone_ms']['p95']} ms  p99 {rep['alone_ms']['p99']} ms",
             f"  abused: p50 {rep['abused_ms']['p50']} ms  p95 {rep['abused_ms']['p95']} ms  p99 {rep['abused_ms']['p99']} ms",
             f"  p95 ratio {rep['p95_ratio']} (target <= 2); customer errors {len(rep['customer_errors'])}",
             "  abusers were answered: " + ", ".join(f"{k}: {v}" for k, v in rep["abuser_answers"].items())]
    return "\n".join(lines + [f"  customer error: {e}" for e in rep["customer_errors"]])


def main(argv: list[str] | None = None) -> int:
    """Run the bench; return 0 when the customer met no error (the ratio is reported, not judged), else 1."""
    p = argparse.ArgumentParser(prog="python -m eval.abuse_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--abusers", type=int, default=3, help="abusive clients (1-20, default 3)")
    p.add_argument("--turns", type=int, default=30, help="customer turns per round (default 30)")
    p.add_argument("--rounds", type=int, default=2, help="rounds of each condition, interleaved (default 2)")
    p.add_argument("--pause", type=float, default=2.1, help="seconds between the customer's turns (default 2.1: "
                                                             "under the default 30 turns a minute)")
    p.add_argument("--index", type=Path, default=None, help="index for the started server (default: built-in corpus)")
    p.add_argument("--engine-threads", type=int, default=None,
                   help="the server's --engine-threads (1-16; default: the server's default)")
    p.add_argument("--json", type=Path, default=None, help="also write the report as JSON here")
    args = p.parse_args(argv)
    if not 1 <= args.abusers <= 20 or args.turns < 5 or args.rounds < 1 or args.pause < 0:
        print("error: --abusers must be 1-20, --turns at least 5, --rounds at least 1, --pause not negative",
              file=sys.stderr)
        return 2
    if args.engine_threads is not None and not 1 <= args.engine_threads <= 16:
        print("error: --engine-threads must be 1-16", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="dtdialog-abuse-") as tmp, \
            local_server(index=args.index, startup_timeout=600, workdir=Path(tmp), default_quotas=True,
                         engine_threads=args.engine_threads) as url:
        report = asyncio.run(bench(url, abusers=args.abusers, turns=args.turns, rounds=args.rounds, pause=args.pause))
    report["engine_threads"] = args.engine_threads  # None: the server's default
    print(format_report(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if not report["customer_errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
