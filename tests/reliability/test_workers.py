"""Issue 16 item 3: ``dtdialog serve --workers 2`` runs two real server processes on one port that share the index,
the sessions and the per-client rates: one session's concurrent turns through both stay serialised, a rate counts
across them, an answer added through one is found through the other, and ``kill -9`` of a worker mid-turn leaves
no session locked and no acknowledged turn lost.

Requests go to a chosen worker: each worker listens on a socket of its own and the kernel picks one for a new
connection, so connections are opened until each worker has accepted enough of them (which worker holds one is
read from /proc), and a connection stays with its worker (keep-alive).
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

from eval.load_test import free_port, stop_server
from eval.proc_sockets import socket_inodes, tcp_inodes
from parsers.errors import StorageBusyError

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")]
QUESTION = "My brakes squeal when I stop, even though the pads are new"
STARTED = "Application startup complete."


def _headers(key: bool, token: str) -> dict[str, str]:
    """Return a request's headers: JSON, with the API key and with a session's token when asked for."""
    return {"content-type": "application/json", **({"X-API-Key": API_KEY} if key else {}),
            **({"X-Session-Token": token} if token else {})}


def call(url: str, body: dict | None = None, *, key: bool = False, token: str = "") -> tuple[int, dict]:
    """Return the status and JSON body of a request on a new connection; status 0 when no response came."""
    headers = _headers(key, token)
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


def accepting_worker(conn: http.client.HTTPConnection, port: int, pids: list[int]) -> int:
    """Return which of ``pids`` accepted ``conn`` (holds the server end of the connection)."""
    assert conn.sock.getpeername()[1] == port
    ends = tcp_inodes(port, client_port=conn.sock.getsockname()[1])
    holders = [pid for pid in pids if socket_inodes(pid) & ends]
    assert len(holders) == 1, (holders, pids)
    return holders[0]


def send(conn: http.client.HTTPConnection, method: str, path: str, body: dict | None = None, *,
         key: bool = False, token: str = "") -> tuple[int, dict]:
    """Return the status and JSON body of a request on the kept-alive ``conn``; status 0 when no response came."""
    headers = _headers(key, token)
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    except (OSError, ValueError, http.client.HTTPException):
        conn.close()
        return 0, {}


class Workers:
    """A running ``dtdialog serve --workers 2`` over ``index`` and ``sessions``."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.proc, self.port, self.base, self.log = proc, port, f"http://127.0.0.1:{port}", log
        self.tokens: dict[str, str] = {}  # each session's token, by id

    def pids(self) -> list[int]:
        return children(self.proc.pid)

    def connections(self, per_worker: int) -> dict[int, list[http.client.HTTPConnection]]:
        """Return ``per_worker`` kept-alive connections accepted by each worker."""
        pinned: dict[int, list[http.client.HTTPConnection]] = {pid: [] for pid in self.pids()}
        for _ in range(64 * per_worker):  # the kernel spreads connections by their addresses: this is plenty
            if all(len(conns) == per_worker for conns in pinned.values()):
                return pinned
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=90)
            assert send(conn, "GET", "/healthz")[0] == 200  # answered, so accepted
            mine = pinned[accepting_worker(conn, self.port, list(pinned))]
            if len(mine) < per_worker:
                mine.append(conn)
            else:
                conn.close()
        raise AssertionError(f"connections did not reach every worker: {[len(c) for c in pinned.values()]}")

    def wait_serving(self, starts: int = 2) -> None:
        """Wait (polled; the timeout mark is the hang guard) until ``starts`` workers finished starting up."""
        while self.log.read_text(errors="replace").count(STARTED) < starts or call(self.base + "/healthz")[0] != 200:
            assert self.proc.poll() is None, self.log.read_text(errors="replace")[-3000:]
            time.sleep(0.2)

    def new_session(self) -> str:
        status, body = call(self.base + "/sessions", {})
        assert status == 201, body
        self.tokens[body["session_id"]] = body["token"]
        return body["session_id"]

    def turn(self, session_id: str, text: str) -> int:
        return call(f"{self.base}/sessions/{session_id}/messages", {"text": text}, token=self.tokens[session_id])[0]

    def user_texts(self, session_id: str) -> list[str]:
        status, body = call(f"{self.base}/sessions/{session_id}", token=self.tokens[session_id])
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
        stop_server(proc, timeout=30)


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


@pytest.mark.timeout(400)
def test_one_sessions_concurrent_turns_through_both_workers_are_serialised(index_copy: Path, tmp_path: Path) -> None:
    with serve(index_copy, tmp_path) as server:
        session = server.new_session()
        conns = [c for pinned in server.connections(per_worker=4).values() for c in pinned]
        texts = [[f"{QUESTION} (connection {c} turn {i})" for i in range(3)] for c in range(len(conns))]

        def customer(conn: http.client.HTTPConnection, mine: list[str]) -> list[int]:
            return [send(conn, "POST", f"/sessions/{session}/messages", {"text": t}, token=server.tokens[session])[0]
                    for t in mine]

        statuses = in_parallel([lambda c=c, m=m: customer(c, m) for c, m in zip(conns, texts)], threads=len(conns))
        assert statuses == [[200] * 3] * len(conns)
        status, record = call(f"{server.base}/sessions/{session}", token=server.tokens[session])
        assert status == 200
        sent = [t for mine in texts for t in mine]
        # every turn saved whole, none interleaved with another: user, bot, user, bot, ...
        assert [m["role"] for m in record["transcript"]] == ["user", "bot"] * len(sent)
        stored = server.user_texts(session)
        assert sorted(stored) == sorted(sent)
        for mine in texts:  # each connection's turns in the order it sent them
            assert [t for t in stored if t in mine] == mine
        assert [t["turn"] for t in record["traces"]] == list(range(1, len(sent) + 1))


@pytest.mark.timeout(300)
def test_each_worker_listens_on_a_socket_of_its_own_so_a_burst_reaches_both(index_copy: Path, tmp_path: Path) -> None:
    # On uvicorn's one shared socket the first worker to wake accepted whole bursts: 49 of 50 connections once,
    # 38 of 50 for a whole load test. With a socket per worker the kernel spreads them (22 to 28 of 50, measured).
    # The 60 connections come from one address: lift the per-client connection cap (32 per worker), which would
    # otherwise refuse a worker's 33rd and make this a test of the cap, not of the spread.
    with serve(index_copy, tmp_path, "--max-connections-per-client", "100") as server:
        pids = server.pids()
        listening = {pid: socket_inodes(pid) & tcp_inodes(server.port, listening=True) for pid in [server.proc.pid, *pids]}
        assert not listening[server.proc.pid]  # the supervisor only holds the port
        assert all(len(listening[pid]) == 1 for pid in pids), listening
        assert len(set.union(*(listening[pid] for pid in pids))) == len(pids)  # not one shared socket
        conns = [http.client.HTTPConnection("127.0.0.1", server.port, timeout=90) for _ in range(60)]
        for conn in conns:  # all waiting to be accepted before any is answered
            conn.connect()
        assert all(send(conn, "GET", "/healthz")[0] == 200 for conn in conns)
        held = [accepting_worker(conn, server.port, pids) for conn in conns]
        # fewer than 12 of 60 on one worker happens by chance about once in 500,000 starts
        assert min(held.count(pid) for pid in pids) >= 12, held


@pytest.mark.timeout(300)
def test_a_clients_turn_rate_and_the_session_cap_count_across_the_workers(index_copy: Path, tmp_path: Path) -> None:
    limit, cap = 6, 4
    with serve(index_copy, tmp_path, "--turn-rate", f"{limit}/minute", "--max-sessions", str(cap)) as server:
        session = server.new_session()
        first, second = (pinned[0] for pinned in server.connections(per_worker=1).values())
        statuses = [send(first if i % 2 else second, "POST", f"/sessions/{session}/messages",
                         {"text": f"{QUESTION} ({i})"}, token=server.tokens[session])[0] for i in range(2 * limit)]
        assert statuses == [200] * limit + [429] * limit  # not `limit` per worker
        # creations side by side on both workers: the count and the creation are one step across them
        conns = [c for pinned in server.connections(per_worker=4).values() for c in pinned]
        created = in_parallel([lambda c=c: [send(c, "POST", "/sessions", {}) for _ in range(2)] for c in conns],
                              threads=len(conns))
        statuses = sorted(status for pair in created for status, _ in pair)
        assert statuses == [201] * (cap - 1) + [503] * (2 * len(conns) - cap + 1)  # one session existed
        assert all(body["error"]["code"] == "session_limit_reached"
                   for pair in created for status, body in pair if status == 503)


@pytest.mark.timeout(300)
def test_an_answer_added_through_one_worker_is_found_through_the_other(index_copy: Path, tmp_path: Path) -> None:
    answer = {"id": "workers-flux-1", "text": "Replace the flux capacitor of the hoverboard: a worn one makes the "
                                             "hoverboard wobble and hum at low speed."}
    query = "Why does my hoverboard wobble and hum? Could it be the flux capacitor?"
    with serve(index_copy, tmp_path) as server:
        for pinned in server.connections(per_worker=1).values():  # both workers' caches made before the write
            assert send(pinned[0], "POST", "/search", {"query": query, "size": 3})[0] == 200
        writer, reader = server.connections(per_worker=1).values()
        status, body = send(writer[0], "POST", "/index/documents", {"answers": [answer]}, key=True)
        assert status == 200, body
        found = [send(conn, "POST", "/search", {"query": query, "size": 3}) for conn in (reader[0], writer[0])]
        assert all(status == 200 and body["hits"] and body["hits"][0]["id"] == answer["id"] for status, body in found)
        # the worker that did not write noticed the index's new generation and refreshed its caches
        assert "written by another process" in server.log.read_text(errors="replace")


@pytest.mark.timeout(400)
def test_kill_9_of_a_worker_mid_turn_leaves_no_session_locked_and_loses_no_acknowledged_turn(
        index_copy: Path, tmp_path: Path) -> None:
    with serve(index_copy, tmp_path) as server:
        pinned = server.connections(per_worker=2)
        victim = next(iter(pinned))
        conns = {server.new_session(): conn for conns in pinned.values() for conn in conns}
        acked: dict[str, list[str]] = {s: [] for s in conns}
        stop = threading.Event()

        def customer(session: str) -> None:
            conn: http.client.HTTPConnection | None = conns[session]
            for i in range(200):
                if stop.is_set():
                    return
                text = f"{QUESTION} ({session[:6]} {i})"
                path = f"/sessions/{session}/messages"
                # after its worker died, a customer comes back on a new connection (to the other worker or its heir)
                token = server.tokens[session]
                status = (send(conn, "POST", path, {"text": text}, token=token)[0] if conn
                          else call(server.base + path, {"text": text}, token=token)[0])
                if status == 0:
                    conn = None
                if status == 200:
                    acked[session].append(text)

        threads = [threading.Thread(target=customer, args=(s,)) for s in conns]
        for t in threads:
            t.start()
        while sum(map(len, acked.values())) < 8:  # turns in flight on both workers
            time.sleep(0.02)
        os.kill(victim, signal.SIGKILL)
        time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join()
        server.wait_serving(starts=3)  # uvicorn started a worker in the dead one's place
        assert victim not in server.pids()
        for session in conns:
            stored = server.user_texts(session)
            assert [t for t in stored if t in acked[session]] == acked[session]  # every acknowledged turn, in order
            assert server.turn(session, f"{QUESTION} (after)") == 200  # nothing left the session locked


def _hold_turn_lock(store_path: str, session_id: str, ready) -> None:
    from dtdialog.dialogue.session_store import SessionStore

    with SessionStore(store_path).turn_lock(session_id):
        ready.set()
        time.sleep(120)  # killed long before: the lock is never released by its holder


@pytest.mark.timeout(120)
def test_a_sessions_turn_lock_holds_across_processes_and_dies_with_its_holder(tmp_path: Path) -> None:
    from dtdialog.dialogue.session_store import SessionStore

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


@pytest.mark.timeout(180)
def test_a_bad_index_with_workers_is_one_line_error_before_anything_listens(tmp_path: Path) -> None:
    bad = tmp_path / "answers.sqlite"
    bad.write_text("not an index\n", encoding="utf-8")
    proc = subprocess.run(dtdialog_command("serve", "--workers", "2", "--port", str(free_port()), "--index", str(bad),
                                           "--sessions", str(tmp_path / "s.sqlite")),
                          capture_output=True, text=True, env=python_env(), timeout=170)
    assert_one_line_error(proc, "is not a dtdialog index")


@pytest.mark.timeout(120)
def test_a_port_in_use_is_one_line_error_before_the_engine_loads(tmp_path: Path) -> None:
    import socket

    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        bad = tmp_path / "answers.sqlite"  # its error would come first if the port were taken after loading the engine
        bad.write_text("not an index\n", encoding="utf-8")
        proc = subprocess.run(dtdialog_command("serve", "--workers", "2", "--port", str(port), "--index", str(bad),
                                               "--sessions", str(tmp_path / "s.sqlite")),
                              capture_output=True, text=True, env=python_env(), timeout=110)
    assert_one_line_error(proc, f"cannot listen on 127.0.0.1:{port}")
