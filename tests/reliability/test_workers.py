"""Issue 16 item 3: ``dtdialog serve --workers 2`` runs two real server processes on one port that share the index,
the sessions and the per-client rates: one session's concurrent turns through both stay serialised, a rate counts
across them, an answer added through one is found through the other, and ``kill -9`` of a worker mid-turn leaves
no session locked and no acknowledged turn lost.

Every request opens its own connection (``urllib``), so the kernel hands them to either worker; that both did work
is checked from their CPU time (``/proc``), not assumed.
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from reliability_helpers import API_KEY, assert_one_line_error, dtdialog_command, python_env

from eval.load_test import free_port
from parsers.errors import StorageBusyError

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")]
QUESTION = "My brakes squeal when I stop, even though the pads are new"
STARTED = "Application startup complete."


def call(url: str, body: dict | None = None, *, key: bool = False) -> tuple[int, dict]:
    """Return the status and JSON body of a request on a new connection; status 0 when no response came."""
    headers = {"content-type": "application/json", **({"X-API-Key": API_KEY} if key else {})}
    data = None if body is None else json.dumps(body).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=90) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")
    except (OSError, ValueError, http.client.HTTPException):  # refused, reset, cut short: not acknowledged
        return 0, {}


def children(pid: int) -> list[int]:
    """Return the worker processes of the server ``pid`` (uvicorn's spawned children)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"spawn_main" in cmdline:
            found.append(int(entry.name))
    return sorted(found)


def cpu_ticks(pid: int) -> int:
    """Return the user + system CPU ticks the process ``pid`` used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


class Workers:
    """A running ``dtdialog serve --workers 2`` over ``index`` and ``sessions``."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.proc, self.base, self.log = proc, f"http://127.0.0.1:{port}", log

    def pids(self) -> list[int]:
        return children(self.proc.pid)

    def ticks(self) -> dict[int, int]:
        return {pid: cpu_ticks(pid) for pid in self.pids()}

    def wait_serving(self, starts: int = 2) -> None:
        """Wait (polled; the timeout mark is the hang guard) until ``starts`` workers finished starting up."""
        while self.log.read_text(errors="replace").count(STARTED) < starts or call(self.base + "/healthz")[0] != 200:
            assert self.proc.poll() is None, self.log.read_text(errors="replace")[-3000:]
            time.sleep(0.2)

    def new_session(self) -> str:
        status, body = call(self.base + "/sessions", {})
        assert status == 201, body
        return body["session_id"]

    def turn(self, session_id: str, text: str) -> int:
        return call(f"{self.base}/sessions/{session_id}/messages", {"text": text})[0]

    def user_texts(self, session_id: str) -> list[str]:
        status, body = call(f"{self.base}/sessions/{session_id}")
        assert status == 200, body
        return [m["text"] for m in body["transcript"] if m["role"] == "user"]


@contextmanager
def serve(index: Path, tmp_path: Path, *extra: str) -> Iterator[Workers]:
    """Start ``dtdialog serve --workers 2`` (rules ranker, rates off unless ``extra`` sets them); stop it after."""
    port, log = free_port(), tmp_path / "serve.log"
    rates = [] if "--turn-rate" in extra else ["--turn-rate", "off"]
    cmd = dtdialog_command("serve", "--workers", "2", "--port", str(port), "--index", str(index), "--sessions",
                           str(tmp_path / "sessions.sqlite"), "--ranker", "rules", "--preload", "--log-level", "info",
                           "--session-rate", "off", "--search-rate", "off", *rates, *extra)
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                env={**python_env(), "DTDIALOG_API_KEY": API_KEY})
    server = Workers(proc, port, log)
    try:
        server.wait_serving()
        assert len(server.pids()) == 2, server.pids()
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def in_parallel(jobs: list, threads: int) -> list:
    """Return the results of the callables ``jobs`` run on ``threads`` threads at once."""
    results: list = [None] * len(jobs)
    todo = iter(range(len(jobs)))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                i = next(todo, None)
            if i is None:
                return
            results[i] = jobs[i]()

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return results


def assert_both_worked(before: dict[int, int], after: dict[int, int]) -> None:
    """Both workers used CPU time for the requests (an idle uvicorn worker uses next to none)."""
    assert before.keys() == after.keys()
    assert all(after[pid] - before[pid] >= 3 for pid in before), (before, after)


@pytest.mark.timeout(400)
def test_one_sessions_concurrent_turns_through_both_workers_are_serialised(index_copy: Path, tmp_path: Path) -> None:
    with serve(index_copy, tmp_path) as server:
        session = server.new_session()
        texts = [f"{QUESTION} (turn {i})" for i in range(16)]
        before = server.ticks()
        statuses = in_parallel([lambda t=t: server.turn(session, t) for t in texts], threads=8)
        assert_both_worked(before, server.ticks())
        assert statuses == [200] * len(texts)
        status, record = call(f"{server.base}/sessions/{session}")
        assert status == 200
        roles = [m["role"] for m in record["transcript"]]
        # every turn saved whole, none interleaved with another: user, bot, user, bot, ...
        assert roles == ["user", "bot"] * len(texts)
        assert sorted(server.user_texts(session)) == sorted(texts)
        assert [t["turn"] for t in record["traces"]] == list(range(1, len(texts) + 1))


@pytest.mark.timeout(300)
def test_a_clients_turn_rate_counts_across_the_workers(index_copy: Path, tmp_path: Path) -> None:
    limit = 6
    with serve(index_copy, tmp_path, "--turn-rate", f"{limit}/minute") as server:
        session = server.new_session()
        before = server.ticks()
        statuses = [server.turn(session, f"{QUESTION} ({i})") for i in range(2 * limit)]
        assert_both_worked(before, server.ticks())
        assert statuses == [200] * limit + [429] * limit  # not `limit` per worker


@pytest.mark.timeout(300)
def test_an_answer_added_through_one_worker_is_found_through_the_other(index_copy: Path, tmp_path: Path) -> None:
    answer = {"id": "workers-flux-1", "text": "Replace the flux capacitor of the hoverboard: a worn one makes the "
                                             "hoverboard wobble and hum at low speed."}
    query = "Why does my hoverboard wobble and hum? Could it be the flux capacitor?"
    with serve(index_copy, tmp_path) as server:
        assert call(server.base + "/search", {"query": query, "size": 3})[0] == 200  # both caches made before the write
        status, body = call(server.base + "/index/documents", {"answers": [answer]}, key=True)
        assert status == 200, body
        before = server.ticks()
        found = [call(server.base + "/search", {"query": query, "size": 3}) for _ in range(12)]
        assert_both_worked(before, server.ticks())
        assert all(status == 200 and body["hits"] and body["hits"][0]["id"] == answer["id"] for status, body in found)
        # the worker that did not write noticed the index's new generation and refreshed its caches
        assert "written by another process" in server.log.read_text(errors="replace")


@pytest.mark.timeout(400)
def test_kill_9_of_a_worker_mid_turn_leaves_no_session_locked_and_loses_no_acknowledged_turn(
        index_copy: Path, tmp_path: Path) -> None:
    with serve(index_copy, tmp_path) as server:
        sessions = [server.new_session() for _ in range(4)]
        acked: dict[str, list[str]] = {s: [] for s in sessions}
        stop = threading.Event()

        def customer(session: str) -> None:
            for i in range(200):
                if stop.is_set():
                    return
                text = f"{QUESTION} ({session[:6]} {i})"
                if server.turn(session, text) == 200:
                    acked[session].append(text)

        threads = [threading.Thread(target=customer, args=(s,)) for s in sessions]
        for t in threads:
            t.start()
        while sum(map(len, acked.values())) < 6:  # turns in flight on both workers
            time.sleep(0.05)
        victim = server.pids()[0]
        os.kill(victim, signal.SIGKILL)
        time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join()
        server.wait_serving(starts=3)  # uvicorn started a worker in the dead one's place
        assert victim not in server.pids()
        for session in sessions:
            stored = server.user_texts(session)
            assert [t for t in stored if t in acked[session]] == acked[session]  # every acknowledged turn, in order
            assert server.turn(session, f"{QUESTION} (after)") == 200  # nothing left the session locked


def _hold_turn_lock(store_path: str, session_id: str, ready) -> None:
    from dtdialog.session_store import SessionStore

    with SessionStore(store_path).turn_lock(session_id):
        ready.set()
        time.sleep(120)  # killed long before: the lock is never released by its holder


@pytest.mark.timeout(120)
def test_a_sessions_turn_lock_holds_across_processes_and_dies_with_its_holder(tmp_path: Path) -> None:
    from dtdialog.session_store import SessionStore

    store = SessionStore(tmp_path / "sessions.sqlite")
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    holder = context.Process(target=_hold_turn_lock, args=(str(store.path), "s1", ready))
    holder.start()
    try:
        assert ready.wait(60)
        with pytest.raises(StorageBusyError, match="session 's1'"):
            with store.turn_lock("s1", timeout=0.2):
                pass
        with store.turn_lock("s2", timeout=0.2):  # another session: another lock file
            pass
        os.kill(holder.pid, signal.SIGKILL)  # the kernel drops the lock of a killed holder
        holder.join(30)
        with store.turn_lock("s1", timeout=10):
            pass
    finally:
        if holder.is_alive():
            holder.kill()
        holder.join(30)


@pytest.mark.parametrize("value", ["0", "-1", "100000"])
def test_bad_worker_counts_are_one_line_errors(value: str, tmp_path: Path) -> None:
    proc = subprocess.run(dtdialog_command("serve", "--workers", value, "--port", str(free_port()), "--sessions",
                                           str(tmp_path / "s.sqlite")),
                          capture_output=True, text=True, env=python_env(), timeout=60)
    assert_one_line_error(proc, "workers must be an integer from 1 to")
