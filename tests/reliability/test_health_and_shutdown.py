"""Probe finding 1, continued: while the engine hung, ``/healthz`` still answered ok and SIGTERM was ignored.

``/healthz`` now fails on a stalled engine call (503 ``not_ready``), ``/readyz`` also on a lock that stays taken
(``test_honest_health``: and on the session store or index another process holds), the engine thread is a daemon that
shutdown waits for only a bounded time, and ``dtdialog serve`` exits on SIGTERM with turns in flight.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from reliability_helpers import dtdialog_command, python_env

from dtdialog.api.service import EngineService
from dtdialog.api.settings import ApiSettings
from eval.load_test import free_port


def _wait_until(condition) -> None:
    # polled, never timed: the test's timeout mark is the hang guard
    while not condition():
        time.sleep(0.05)


@pytest.mark.timeout(120)
def test_healthz_fails_while_an_engine_call_is_stuck_and_recovers(make_client):
    client = make_client(health_stall_seconds=0.2)
    assert client.get("/healthz").status_code == 200
    service = client.app.state.service
    release = threading.Event()
    stuck = service.submit(release.wait)
    try:
        _wait_until(lambda: client.get("/healthz").status_code == 503)
        body = client.get("/healthz").json()
        assert body["error"]["code"] == "not_ready" and "engine call" in body["error"]["message"]
    finally:
        release.set()
    stuck.result()
    assert client.get("/healthz").status_code == 200


@pytest.mark.timeout(120)
def test_readyz_fails_while_the_session_store_lock_is_stuck(make_client):
    client = make_client()
    client.post("/sessions")  # loads the engine
    store = client.app.state.service.runtime().store
    with store._lock:  # a thread that never lets go of the store (what the deadlock looked like)
        response = client.get("/readyz")
        assert client.get("/healthz").status_code == 200  # a process check: a stuck turn shows as a stalled engine
    assert response.status_code == 503 and "session store" in response.json()["error"]["message"]
    _wait_until(lambda: client.get("/readyz").status_code == 200)  # its last answer is reused for a second


@pytest.mark.timeout(60)
def test_close_gives_up_on_an_engine_call_that_never_returns(tmp_path):
    service = EngineService(ApiSettings(sessions_path=tmp_path / "s.sqlite"))
    never = threading.Event()
    service.submit(never.wait)
    service.close(timeout=0.2)  # returns although the call is still running (the hang guard is the mark)
    assert not never.is_set()
    never.set()


def _post(url: str, body: dict, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_sigterm_stops_serve_with_turns_in_flight(small_index: Path, tmp_path: Path):
    """Turns stuck on a locked session store keep the engine busy for ~4 x 5 s; SIGTERM still ends the server:
    uvicorn's grace period, then ``EngineService.close``'s bounded wait (serve.SHUTDOWN_GRACE_S + CLOSE_TIMEOUT_S)."""
    sessions = tmp_path / "sessions.sqlite"
    port = free_port()
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(dtdialog_command("serve", "--port", str(port), "--index", str(small_index), "--sessions",
                                               str(sessions), "--ranker", "rules", "--preload"),
                              stdout=log, stderr=subprocess.STDOUT, env=python_env())
    base = f"http://127.0.0.1:{port}"
    holder = None
    try:
        _wait_until(lambda: _healthy(base) or server.poll() is not None)
        assert server.poll() is None, (tmp_path / "serve.log").read_text()
        created = [_post(base + "/sessions", {})[1] for _ in range(4)]
        holder = subprocess.Popen([sys.executable, "-c", "import sqlite3, sys\n"
                                   f"c = sqlite3.connect({str(sessions)!r}, isolation_level=None)\n"
                                   "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); sys.stdin.readline()"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        results: list[int] = []
        turns = [threading.Thread(target=lambda s=s: results.append(
            _post(f"{base}/sessions/{s['session_id']}/messages", {"text": "My battery dies overnight although it is new."},
                  {"X-Session-Token": s["token"]})[0]))
            for s in created]
        for t in turns:
            t.start()
        time.sleep(1.0)  # let the turns reach the engine (not a timing assertion: any order gives the same outcome)
        started = time.monotonic()
        server.send_signal(signal.SIGTERM)
        code = server.wait()  # the hang guard is the timeout mark
        print(f"serve exited {code} {time.monotonic() - started:.1f} s after SIGTERM")
        for t in turns:
            t.join()
    finally:
        if holder is not None:
            holder.communicate("release\n")
        if server.poll() is None:
            server.kill()
            server.wait()
        log.close()
    output = (tmp_path / "serve.log").read_text()
    assert code in (0, -signal.SIGTERM), output[-3000:]  # uvicorn re-raises SIGTERM once it has shut down
    assert "Application shutdown complete" in output, output[-3000:]
    assert len(results) == len(created) and all(s == 503 for s in results), results  # busy or shutting down, never 500


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(base + "/healthz", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False
