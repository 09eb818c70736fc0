"""Does one customer keep their reply time while abusive clients hammer the server? (issues 14 and 31)

    python -m eval.abuse_bench                        # starts `dtdialog serve` with its default quotas
    python -m eval.abuse_bench --abusers 3 --turns 30 --rounds 2 --json out.json
    python -m eval.abuse_bench --abuse explain,rotating --rotate 40
    python -m eval.abuse_bench --engine-threads 1     # the server's engine runs one call at a time
    python -m eval.abuse_bench --slow-connections 1100  # the abusers also hold half-sent requests open

One well-behaved customer (its own loopback address) sends turns ``--pause`` seconds apart, in sessions of
five turns. The run alternates rounds *alone* and *with* ``--abusers`` other addresses that loop, without
pausing and ignoring ``Retry-After``, from a process of their own (the customer's client is not slowed by
theirs). Both conditions are measured in the same run, interleaved, so a change in the machine's load falls on
both. The abuses (``--abuse``, each abuser takes the next in turn):

* ``bulk``: 4,000-character searches (the longest a customer message may be) and 100,000-character parses;
* ``explain``: turns of brackets nested 2,000 deep with ``?explain=true``, several at once from one address;
* ``rotating``: new sessions and long turns, each from the next of ``--rotate`` addresses, so no one address
  reaches its quotas.

With ``--slow-connections N`` the abusers' addresses also hold N half-sent requests open between them (slowloris:
a header line a second, the head never ends), each reopened as soon as the server closes it. Reports the
customer's turn p50/p95/p99 in each condition, the p95 ratio (the target is at most 2), the customer's errors,
and how the abusers' requests were answered.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from eval.load_test import FOLLOW_UPS, QUESTIONS, local_server, loopback_address, percentiles
from parsers.files import atomic_write_text

LONG_SEARCH = ("My car will not start although I replaced the battery and the starter, and the lights dim when "
               "I turn the key. ") * 36  # ~4,000 characters: a turn's limit
LONG_PARSE = "The engine stalls when it is cold, but it runs when it is warm. " * 1600  # ~100,000 characters
BRACKET_BOMB = "(" * 2000 + "car" + ")" * 1996  # the probe's explain turn
#: Explain turns one ``explain`` abuser keeps in flight at once (the probe sent 8).
EXPLAIN_AT_ONCE = 8
ABUSES = ("bulk", "explain", "rotating")
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


async def _first_turn(client: httpx.AsyncClient, label: str, text: str, answers: Counter, **params: str) -> None:
    """Start a session and send its first turn, counting how each was answered under ``label``."""
    try:
        r = await client.post("/sessions")
        if r.status_code != 201:
            answers[f"{label}: POST /sessions {r.status_code}"] += 1
            return
        session = r.json()
        r = await client.post(f"/sessions/{session['session_id']}/messages", params=params, json={"text": text},
                              headers={"X-Session-Token": session["token"]})
        answers[f"{label} turn {r.status_code}"] += 1
    except httpx.HTTPError as exc:
        answers[f"{label} {type(exc).__name__}"] += 1


async def _explain_abuser(client: httpx.AsyncClient, stop: asyncio.Event, answers: Counter) -> None:
    async def one() -> None:
        while not stop.is_set():
            await _first_turn(client, "explain", BRACKET_BOMB, answers, explain="true")

    await asyncio.gather(*(one() for _ in range(EXPLAIN_AT_ONCE)))


async def _rotating_abuser(url: str, addresses: list[str], stop: asyncio.Event, answers: Counter) -> None:
    clients = [_client(url, a) for a in addresses]
    try:
        k = 0
        while not stop.is_set():
            await _first_turn(clients[k % len(clients)], "rotating", LONG_SEARCH, answers)
            k += 1
    finally:
        for c in clients:
            await c.aclose()


async def _slow_connections(url: str, address: str, count: int, stop: asyncio.Event, answers: Counter) -> None:
    """Hold ``count`` half-sent requests open from ``address`` until ``stop``, reopening each one the server ends;
    count how each ended (``slow 408``, ``slow 429``, ``slow closed``...)."""
    target = httpx.URL(url)

    async def hold() -> None:
        while not stop.is_set():
            try:
                reader, writer = await asyncio.open_connection(target.host, target.port, local_addr=(address, 0))
            except OSError as exc:
                answers[f"slow {type(exc).__name__}"] += 1
                await asyncio.sleep(0.1)
                continue
            writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            try:
                while not stop.is_set():
                    try:
                        head = await asyncio.wait_for(reader.read(13), timeout=1.0)
                    except asyncio.TimeoutError:
                        writer.write(b"X-Slow: 1\r\n")
                        continue
                    answers["slow " + (head[9:12].decode("ascii", "replace") or "closed")] += 1
                    break
            except OSError as exc:
                answers[f"slow {type(exc).__name__}"] += 1
            finally:
                writer.close()
            await asyncio.sleep(0.5)  # a reconnecting attacker, not a busy loop on this machine's CPU

    await asyncio.gather(*(hold() for _ in range(count)))


def _abuse_process(url: str, options: dict[str, Any], stop: Any, results: Any) -> None:
    """Run the abusers (``_start_abusers`` with ``options``) and ``slow_connections`` half-sent requests from their
    addresses until ``stop`` is set; put how they were answered in ``results``. A process of its own: in the
    customer's event loop, the abusers' hundreds of requests a second would delay the customer's own turns and be
    measured as the server's."""
    async def run() -> None:
        answers: Counter = Counter()
        done = asyncio.Event()
        tasks, clients, used = _start_abusers(url, abusers=options["abusers"], abuse=options["abuse"],
                                              rotate=options["rotate"], stop=done, answers=answers)
        total = options["slow_connections"]
        shares = zip(used, [total // len(used) + (i < total % len(used)) for i in range(len(used))]) if used else ()
        tasks += [asyncio.create_task(_slow_connections(url, a, n, done, answers)) for a, n in shares if n]
        while not stop.is_set():
            await asyncio.sleep(0.2)
        done.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        for c in clients:
            await c.aclose()
        results.put(dict(answers))

    asyncio.run(run())


def _start_abuse(url: str, options: dict[str, Any]) -> tuple[Any, Any, Any] | None:
    if not options["abusers"]:
        return None
    context = multiprocessing.get_context("spawn")
    stop, results = context.Event(), context.Queue()
    process = context.Process(target=_abuse_process, args=(url, options, stop, results), name="abuse-bench-abusers")
    process.start()
    return process, stop, results


async def _stop_abuse(abuse: tuple[Any, Any, Any] | None, answers: Counter) -> None:
    if abuse is None:
        return
    process, stop, results = abuse
    stop.set()
    answers.update(await asyncio.to_thread(results.get))
    await asyncio.to_thread(process.join)


def _client(url: str, address: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=url, timeout=120,
                             transport=httpx.AsyncHTTPTransport(local_address=address))


def _start_abusers(url: str, *, abusers: int, abuse: tuple[str, ...], rotate: int, stop: asyncio.Event,
                   answers: Counter) -> tuple[list[asyncio.Task], list[httpx.AsyncClient], list[str]]:
    """Start ``abusers`` abusers taking the ``abuse`` kinds in turn; return their tasks, clients and addresses."""
    tasks: list[asyncio.Task] = []
    clients: list[httpx.AsyncClient] = []
    used: list[str] = []
    next_address = 1
    for a in range(abusers):
        kind = abuse[a % len(abuse)]
        if kind == "rotating":
            addresses = [loopback_address(next_address + i) for i in range(rotate)]
            used += addresses
            next_address += rotate
            tasks.append(asyncio.create_task(_rotating_abuser(url, addresses, stop, answers)))
            continue
        used.append(loopback_address(next_address))
        client = _client(url, used[-1])
        next_address += 1
        clients.append(client)
        run = _abuser if kind == "bulk" else _explain_abuser
        tasks.append(asyncio.create_task(run(client, stop, answers)))
    return tasks, clients, used


async def bench(url: str, *, abusers: int, turns: int, rounds: int, pause: float,
                abuse: tuple[str, ...] = ("bulk",), rotate: int = 40, slow_connections: int = 0) -> dict[str, Any]:
    """Run ``rounds`` x (alone, with abusers) rounds of ``turns`` customer turns; return the report.
    ``slow_connections``: half-sent requests the abusers' addresses hold open between them."""
    samples: dict[str, list[float]] = {"alone": [], "abused": []}
    errors: list[str] = []
    answers: Counter = Counter()
    async with _client(url, loopback_address(0)) as customer:
        # warm-up: the first turns load caches that neither condition should pay for
        await _customer(customer, turns=2, pause=0.0, start=0)
        k = 0
        for _ in range(rounds):
            for condition in ("alone", "abused"):
                running = _start_abuse(url, {"abusers": abusers if condition == "abused" else 0, "abuse": abuse,
                                             "rotate": rotate, "slow_connections": slow_connections})
                if running:
                    await asyncio.sleep(3.0)  # let the abusers start (a spawned process) and fill the queue first
                lat, errs = await _customer(customer, turns=turns, pause=pause, start=k)
                k += turns
                await _stop_abuse(running, answers)
                samples[condition] += lat
                errors += errs
                await asyncio.sleep(1.0)
    alone, abused = percentiles(samples["alone"]), percentiles(samples["abused"])
    return {"url": url, "abusers": abusers, "abuse": list(abuse), "rotate": rotate, "slow_connections": slow_connections,
            "turns_per_round": turns, "rounds": rounds, "pause_s": pause,
            "customer_turns": {k: len(v) for k, v in samples.items()}, "customer_errors": errors[:10],
            "alone_ms": alone, "abused_ms": abused,
            "p95_ratio": round(abused["p95"] / alone["p95"], 2) if alone["p95"] else None,
            "abuser_answers": dict(sorted(answers.items()))}


def format_report(rep: dict[str, Any]) -> str:
    """Return the report as a few lines."""
    threads = rep.get("engine_threads") or "default"
    lines = [f"abuse bench: 1 customer, {rep['abusers']} abusive clients ({', '.join(rep.get('abuse') or ['bulk'])}; "
             f"{rep.get('slow_connections', 0)} slow connections), {rep['rounds']} x {rep['turns_per_round']} "
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
    p.add_argument("--abuse", default=",".join(ABUSES),
                   help=f"comma-separated abuses the abusers take in turn, of {', '.join(ABUSES)} (default: all)")
    p.add_argument("--rotate", type=int, default=40, help="addresses each 'rotating' abuser cycles over (default 40)")
    p.add_argument("--turns", type=int, default=30, help="customer turns per round (default 30)")
    p.add_argument("--rounds", type=int, default=2, help="rounds of each condition, interleaved (default 2)")
    p.add_argument("--pause", type=float, default=2.1, help="seconds between the customer's turns (default 2.1: "
                                                             "under the default 30 turns a minute)")
    p.add_argument("--index", type=Path, default=None, help="index for the started server (default: built-in corpus)")
    p.add_argument("--engine-threads", type=int, default=None,
                   help="the server's --engine-threads (1-16; default: the server's default)")
    p.add_argument("--slow-connections", type=int, default=0, metavar="N",
                   help="half-sent requests the abusers' addresses hold open between them (default 0)")
    p.add_argument("--json", type=Path, default=None, help="also write the report as JSON here")
    args = p.parse_args(argv)
    abuse = tuple(a.strip() for a in args.abuse.split(",") if a.strip())
    if not abuse or any(a not in ABUSES for a in abuse) or not 1 <= args.rotate <= 1000:
        print(f"error: --abuse must name some of {', '.join(ABUSES)}, and --rotate be 1-1000", file=sys.stderr)
        return 2
    if not 1 <= args.abusers <= 20 or args.turns < 5 or args.rounds < 1 or args.pause < 0 \
            or not 0 <= args.slow_connections <= 5000:
        print("error: --abusers must be 1-20, --turns at least 5, --rounds at least 1, --pause not negative, "
              "--slow-connections 0-5000",
              file=sys.stderr)
        return 2
    if args.engine_threads is not None and not 1 <= args.engine_threads <= 16:
        print("error: --engine-threads must be 1-16", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="dtdialog-abuse-") as tmp, \
            local_server(index=args.index, startup_timeout=600, workdir=Path(tmp), default_quotas=True,
                         engine_threads=args.engine_threads) as url:
        report = asyncio.run(bench(url, abusers=args.abusers, turns=args.turns, rounds=args.rounds, pause=args.pause,
                                   abuse=abuse, rotate=args.rotate, slow_connections=args.slow_connections))
    report["engine_threads"] = args.engine_threads  # None: the server's default
    print(format_report(report))
    if args.json:
        atomic_write_text(args.json, json.dumps(report, indent=2) + "\n")
    return 0 if not report["customer_errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
