"""Load test of the HTTP API: N concurrent sessions x M turns against a server on 127.0.0.1.

    python -m eval.load_test --sessions 50 --turns 10            # starts its own server
    python -m eval.load_test --url http://127.0.0.1:8000         # targets a running one
    python -m eval.load_test --sessions 100 --turns 5 --distinct-addresses   # default quotas, one address each
    python -m eval.load_test --workers 1,2 --json out.json   # one server with 1 worker, then one with 2: ratio

Every session embeds a unique token in each of its turns; afterwards each transcript must hold
exactly the turns that session sent, in order (no lost turn) and no other session's token (no
leakage). Reports p50/p95/p99 latency and throughput; exits 1 on any error, loss or leak.
Bounded: at most ``--sessions`` x (``--turns`` + 2) requests and ``--timeout`` seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np

from eval.proc_sockets import connections_by_process
from eval.report import save_figure
from parsers.files import atomic_write_text

QUESTIONS = [
    "I have checked the spark plugs, replaced the battery, also replaced ignition coils and the solenoid, "
    "but I still could not start my car.",
    "My brakes squeal when I stop, even though the pads are new.",
    "The engine overheats in traffic but the coolant level is fine.",
    "The battery keeps dying overnight although it is only a month old.",
    "The check engine light came on and the engine idles rough when it is cold.",
    "My transmission slips between second and third gear when the car is warm.",
]
FOLLOW_UPS = [
    "It did start on the starting fluid at first, but now it does not.",
    "No, that did not help, what else could it be?",
    "I do not have special tools, is there something simpler?",
    "The noise gets worse when I turn left.",
    "I checked that already and it looked fine.",
    "It only happens after the car has been sitting overnight.",
    "Could it be a fuse or a relay instead?",
    "The lights on the dashboard flicker when it happens.",
    "Thanks, that sorted it out.",
]
#: uvicorn's line when a server process serves (one per worker)
STARTED = "Application startup complete."
_TOKEN = re.compile(r"\bLT[0-9a-f]{10}\b")


@dataclass
class SessionRun:
    """What one simulated customer sent and saw."""

    index: int
    token: str
    session_id: str = ""
    #: the session's own token from ``POST /sessions``, sent with every request on it
    session_token: str = ""
    sent: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def script(self, turns: int) -> list[str]:
        """Return this customer's ``turns`` messages, each carrying the session's token."""
        texts = [QUESTIONS[self.index % len(QUESTIONS)]]
        texts += [FOLLOW_UPS[(self.index + t) % len(FOLLOW_UPS)] for t in range(turns - 1)]
        return [f"{t} (ref {self.token})" for t in texts[:turns]]


def free_port() -> int:
    """Return a TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loopback_address(index: int) -> str:
    """Return the loopback source address of simulated customer ``index`` (127.1.x.y; all of 127/8 is loopback
    on Linux, so each customer is a client of its own to the server's per-address quotas)."""
    return f"127.1.{index // 250}.{index % 250 + 1}"


@contextmanager
def local_server(*, index: Path | None, startup_timeout: float, workdir: Path, customers: int = 1,
                 default_quotas: bool = False, engine_threads: int | None = None, workers: int = 1):
    """Start ``dtdialog serve`` on 127.0.0.1 with sessions in ``workdir``; yield its base URL; stop it afterwards.

    ``engine_threads``: the server's ``--engine-threads`` (None: its default); ``workers``: its ``--workers``.

    The quotas are on. With ``default_quotas`` they are the server's defaults (each simulated customer
    has its own address); else they are scaled to ``customers``: the server counts per client address,
    and every simulated customer then comes from 127.0.0.1 (default quotas are per real customer).
    """
    port = free_port()
    cmd = [sys.executable, "-m", "dtdialog", "serve", "--host", "127.0.0.1", "--port", str(port),
           "--sessions", str(workdir / "sessions.sqlite"), "--preload",
           # with workers, each one's "startup complete" line says when all serve (any one answers /healthz)
           "--log-level", "warning" if workers == 1 else "info"]
    if not default_quotas:
        cmd += ["--session-rate", f"{10 * customers}/minute", "--turn-rate", f"{30 * customers}/minute",
                "--search-rate", f"{30 * customers}/minute", "--engine-seconds", str(10 * customers),
                "--max-pending", str(8 * customers)]
    if index is not None:
        cmd += ["--index", str(index)]
    if engine_threads is not None:
        cmd += ["--engine-threads", str(engine_threads)]
    if workers != 1:
        cmd += ["--workers", str(workers)]
    log_path = workdir / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + startup_timeout
            while True:
                if proc.poll() is not None:
                    raise SystemExit(f"error: the server exited with code {proc.returncode}; log: {log_path}\n"
                                     + log_path.read_text(errors="replace")[-2000:])
                try:
                    if httpx.get(url + "/healthz", timeout=2).json().get("engine_loaded") and (
                            workers == 1 or log_path.read_text(errors="replace").count(STARTED) >= workers):
                        break
                except (httpx.HTTPError, ValueError):
                    pass
                if time.monotonic() > deadline:
                    raise SystemExit(f"error: the server did not become ready in {startup_timeout:.0f} s; log: {log_path}")
                time.sleep(0.3)
            yield url
        finally:
            stop_server(proc)


def stop_server(proc: subprocess.Popen, timeout: float = 15.0) -> None:
    """Stop a started server: SIGTERM, and SIGKILL when it is still there after ``timeout`` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def _request(client: httpx.AsyncClient, run: SessionRun, method: str, path: str, **kw: Any) -> httpx.Response | None:
    start = time.perf_counter()
    try:
        r = await client.request(method, path, **kw)
    except httpx.HTTPError as exc:
        run.errors.append(f"{method} {path}: {type(exc).__name__}: {exc}")
        return None
    run.latencies.append(time.perf_counter() - start)
    if r.status_code >= 400:
        run.errors.append(f"{method} {path}: HTTP {r.status_code} {r.text[:200]}")
        return None
    return r


async def run_session(client: httpx.AsyncClient, run: SessionRun, turns: int) -> None:
    """Create a session and send its turns one after another (a customer waits for each reply)."""
    r = await _request(client, run, "POST", "/sessions")
    if r is None:
        return
    run.session_id, run.session_token = r.json()["session_id"], r.json()["token"]
    for text in run.script(turns):
        r = await _request(client, run, "POST", f"/sessions/{run.session_id}/messages", json={"text": text},
                           headers={"X-Session-Token": run.session_token})
        if r is None:
            continue
        run.sent.append(text)
        if r.json().get("session_id") != run.session_id:
            run.errors.append(f"turn reply names session {r.json().get('session_id')!r}, expected {run.session_id!r}")


async def check_session(client: httpx.AsyncClient, run: SessionRun) -> dict[str, int]:
    """Return counts of lost turns and foreign tokens in this session's stored transcript."""
    if not run.session_id:
        return {"lost": len(run.sent), "leaked": 0}
    r = await client.get(f"/sessions/{run.session_id}", headers={"X-Session-Token": run.session_token})
    if r.status_code != 200:
        run.errors.append(f"GET session: HTTP {r.status_code}")
        return {"lost": len(run.sent), "leaked": 0}
    transcript = r.json().get("transcript", [])
    user_texts = [m.get("text", "") for m in transcript if m.get("role") == "user"]
    lost = 0 if user_texts == run.sent else max(1, len(set(run.sent) - set(user_texts)))
    tokens = set(_TOKEN.findall(json.dumps(transcript)))
    return {"lost": lost, "leaked": len(tokens - {run.token})}


async def _watch_connections(port: int, held: dict[int, int], every: float = 0.5) -> None:
    """Keep in ``held`` the look at how the server's processes share the connections on ``port`` that found the
    most of them (read from /proc, off the event loop; a finished customer's connection closes after a while)."""
    while True:
        _keep_busiest(held, await asyncio.to_thread(connections_by_process, port))
        await asyncio.sleep(every)


def _keep_busiest(held: dict[int, int], now: dict[int, int]) -> None:
    if sum(now.values()) > sum(held.values()):
        held.clear()
        held.update(now)


def percentiles(values: list[float]) -> dict[str, float]:
    """Return p50/p95/p99/max of ``values`` in milliseconds."""
    if not values:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
    arr = np.asarray(values) * 1000
    return {"p50": round(float(np.percentile(arr, 50)), 1), "p95": round(float(np.percentile(arr, 95)), 1),
            "p99": round(float(np.percentile(arr, 99)), 1), "max": round(float(arr.max()), 1)}


async def load_test(url: str, *, sessions: int, turns: int, timeout: float, request_timeout: float,
                    distinct_addresses: bool = False) -> dict[str, Any]:
    """Run the load test against ``url``; return the report (counts, latency percentiles, throughput).

    With ``distinct_addresses`` every customer connects from its own loopback address (``loopback_address``),
    else all share one connection pool from 127.0.0.1."""
    runs = [SessionRun(index=i, token="LT" + secrets.token_hex(5)) for i in range(sessions)]
    async with AsyncExitStack() as stack:
        if distinct_addresses:
            clients = [await stack.enter_async_context(httpx.AsyncClient(
                base_url=url, timeout=request_timeout,
                transport=httpx.AsyncHTTPTransport(local_address=loopback_address(r.index)))) for r in runs]
        else:
            limits = httpx.Limits(max_connections=sessions, max_keepalive_connections=sessions)
            shared = await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=request_timeout,
                                                                       limits=limits))
            clients = [shared] * sessions
        start = time.perf_counter()
        tasks = [asyncio.create_task(run_session(c, r, turns)) for c, r in zip(clients, runs)]
        held: dict[int, int] = {}
        port = urlsplit(url).port or 80
        watcher = asyncio.create_task(_watch_connections(port, held))
        done, pending = await asyncio.wait(tasks, timeout=timeout)
        watcher.cancel()
        _keep_busiest(held, connections_by_process(port))  # a short run: the last look is the one
        for t in pending:
            t.cancel()
        wall = time.perf_counter() - start
        checks = [await check_session(c, r) for c, r in zip(clients, runs)]
    n_turns = sum(len(r.sent) for r in runs)
    errors = [e for r in runs for e in r.errors]
    turn_latencies = [lat for r in runs for lat in r.latencies[1:]]  # [0] is POST /sessions
    return {
        "url": url, "client_addresses": "distinct" if distinct_addresses else "shared", "sessions": sessions, "turns_per_session": turns, "timed_out_sessions": len(pending),
        "requests": sum(len(r.latencies) for r in runs), "turns_ok": n_turns, "turns_expected": sessions * turns,
        "errors": len(errors), "error_samples": errors[:5],
        "lost_turns": sum(c["lost"] for c in checks), "leaked_tokens": sum(c["leaked"] for c in checks),
        "wall_seconds": round(wall, 2), "turns_per_second": round(n_turns / wall, 2) if wall else 0.0,
        "turn_latency_ms": percentiles(turn_latencies),
        "session_create_latency_ms": percentiles([r.latencies[0] for r in runs if r.latencies]),
        # what each customer met: a server that serves some customers slower than others shows here, not in p50
        "session_mean_turn_ms": sorted(round(float(np.mean(r.latencies[1:])) * 1000, 1)
                                       for r in runs if len(r.latencies) > 1),
        "connections_per_process": sorted(held.values(), reverse=True),
    }


def format_report(rep: dict[str, Any]) -> str:
    """Return the report as a few human-readable lines."""
    lat = rep["turn_latency_ms"]
    workers = f", {rep['server_workers']} server worker(s)" if "server_workers" in rep else ""
    load = f", load average {' '.join(map(str, rep['load_average']))}" if "load_average" in rep else ""
    lines = [
        f"load test: {rep['sessions']} sessions x {rep['turns_per_session']} turns against {rep['url']} "
        f"({rep['client_addresses']} client addresses{workers}{load})",
        f"  turns ok {rep['turns_ok']}/{rep['turns_expected']}, errors {rep['errors']}, lost turns {rep['lost_turns']}, "
        f"cross-session leaks {rep['leaked_tokens']}, timed-out sessions {rep['timed_out_sessions']}",
        f"  turn latency ms: p50 {lat['p50']}  p95 {lat['p95']}  p99 {lat['p99']}  max {lat['max']}",
        f"  throughput: {rep['turns_per_second']} turns/s over {rep['wall_seconds']} s ({rep['requests']} requests)",
    ]
    if means := rep.get("session_mean_turn_ms"):
        lines.append(f"  customers' mean turn ms: fastest {means[0]}, median {means[len(means) // 2]}, slowest {means[-1]}")
    if held := rep.get("connections_per_process"):
        lines.append(f"  connections held per server process: {' / '.join(map(str, held))}")
    return "\n".join(lines + [f"  error: {e}" for e in rep["error_samples"]])


def plot(reports: list[dict[str, Any]], path: Path) -> None:
    """Draw each run's customers, slowest last, by their mean turn latency (a fair server draws a flat line)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for rep in reports:
        means = rep.get("session_mean_turn_ms") or []
        held = rep.get("connections_per_process") or []
        label = (f"{rep.get('label') or str(rep.get('server_workers', '?')) + ' worker(s)'}: {rep['turns_per_second']} turns/s, "
                 f"p95 {rep['turn_latency_ms']['p95']:.0f} ms" + (f", connections {'/'.join(map(str, held))}" if held else ""))
        ax.plot(range(1, len(means) + 1), means, marker=".", label=label)
    ax.set_xlabel("customer (sorted by their mean turn latency)")
    ax.set_ylabel("mean turn latency (ms)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{reports[0]['sessions']} customers x {reports[0]['turns_per_session']} turns, sent back to back")
    ax.legend(fontsize=8, loc="lower right")  # the curves run along the top: a fair server keeps them flat
    ax.grid(alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def parse_workers(text: str) -> list[int]:
    """Return the worker counts of ``--workers`` ("2", or "1,2" for one run each); ``ValueError`` when bad."""
    counts = [int(part) for part in text.split(",") if part.strip()]
    if not counts or any(not 1 <= n <= 16 for n in counts):
        raise ValueError(text)
    return counts


def compare(reports: list[dict[str, Any]]) -> str:
    """Return the line comparing each run's throughput with the first run's (``--workers 1,2``)."""
    base = reports[0]["turns_per_second"] or float("nan")
    return "comparison: " + ", ".join(f"{r['server_workers']} worker(s) {r['turns_per_second']} turns/s "
                                      f"(x{r['turns_per_second'] / base:.2f}, load average {r['load_average'][0]:.2f})"
                                      for r in reports)


def main(argv: list[str] | None = None) -> int:
    """Run the load test; return 0 when there was no error, loss or leak, else 1 (2 for bad options)."""
    p = argparse.ArgumentParser(prog="python -m eval.load_test", description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=50, help="concurrent sessions (1-500, default 50)")
    p.add_argument("--turns", type=int, default=10, help="turns per session (1-100, default 10)")
    p.add_argument("--url", default=None, help="target a running server instead of starting one")
    p.add_argument("--index", type=Path, default=None, help="index for the started server (default: built-in corpus)")
    p.add_argument("--timeout", type=float, default=600.0, help="overall bound in seconds (default 600)")
    p.add_argument("--request-timeout", type=float, default=120.0, help="per-request bound in seconds (default 120)")
    p.add_argument("--startup-timeout", type=float, default=600.0,
                   help="seconds to wait for the started server (first run builds the built-in index)")
    p.add_argument("--distinct-addresses", action="store_true",
                   help="each customer connects from its own loopback address (127.1.x.y), and the started server "
                        "keeps its default per-address quotas (default: all from 127.0.0.1, quotas scaled up)")
    p.add_argument("--engine-threads", type=int, default=None,
                   help="the started server's --engine-threads (1-16; default: the server's default)")
    p.add_argument("--workers", default="1",
                   help="the started server's --workers (1-16, default 1); a list such as 1,2 runs the test once "
                        "per count, one server after the other, and compares their throughput")
    p.add_argument("--json", type=Path, default=None, help="also write the report as JSON here (a list with --workers 1,2)")
    p.add_argument("--plot", type=Path, default=None,
                   help="also draw each run's customers by their mean turn latency into this PNG")
    args = p.parse_args(argv)
    if not 1 <= args.sessions <= 500 or not 1 <= args.turns <= 100:
        print("error: --sessions must be 1-500 and --turns 1-100", file=sys.stderr)
        return 2
    if args.engine_threads is not None and (args.url or not 1 <= args.engine_threads <= 16):
        print("error: --engine-threads must be 1-16 and needs a started server (no --url)", file=sys.stderr)
        return 2
    try:
        workers = parse_workers(args.workers)
    except ValueError:
        print(f"error: --workers must be 1-16 or a comma-separated list of such counts, got {args.workers!r}",
              file=sys.stderr)
        return 2
    if args.url and (args.workers != "1" or not args.url.startswith(("http://127.0.0.1", "http://localhost", "http://[::1]"))):
        print("error: --url must point at this machine (127.0.0.1/localhost), without --workers", file=sys.stderr)
        return 2

    def go(url: str) -> dict[str, Any]:
        load = os.getloadavg()  # the machine is shared: the figures mean little without it
        report = asyncio.run(load_test(url, sessions=args.sessions, turns=args.turns, timeout=args.timeout,
                                       request_timeout=args.request_timeout, distinct_addresses=args.distinct_addresses))
        return {**report, "load_average": [round(x, 2) for x in load]}

    reports = []
    if args.url:
        reports.append(go(args.url.rstrip("/")))
    for count in [] if args.url else workers:
        with tempfile.TemporaryDirectory(prefix="dtdialog-load-") as tmp, \
                local_server(index=args.index, startup_timeout=args.startup_timeout, workdir=Path(tmp),
                             customers=args.sessions, default_quotas=args.distinct_addresses,
                             engine_threads=args.engine_threads, workers=count) as url:
            reports.append({**go(url), "server_workers": count})
        print(format_report(reports[-1]), flush=True)
    if args.url:
        print(format_report(reports[0]))
    if len(reports) > 1:
        print(compare(reports))
    if args.json:
        atomic_write_text(args.json, json.dumps(reports if len(reports) > 1 else reports[0], indent=2) + "\n")
    if args.plot:
        plot(reports, args.plot)
    ok = all(r["errors"] == 0 and r["lost_turns"] == 0 and r["leaked_tokens"] == 0
             and r["turns_ok"] == r["turns_expected"] and r["timed_out_sessions"] == 0 for r in reports)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
