"""Slow and greedy connections (issue 31, item 5): 1,100 half-sent requests from one address made normal requests
time out, and the server's log grew to 233 MB in 15 s ("Too many open files").

A real ``dtdialog serve`` (the guard is uvicorn's protocol, not the app) with short deadlines and a small
per-client cap. "Closed" means the server ended the connection: its socket reads end-of-file (after a 408 or 429)
or is reset, long before the test's own generous socket timeout.
"""

from __future__ import annotations

import io
import json
import logging
import resource
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from reliability_helpers import dtdialog_command, python_env

from eval.load_test import free_port

pytestmark = pytest.mark.timeout(240)

HEADER_TIMEOUT = 1.0
BODY_TIMEOUT = 2.0
PER_CLIENT = 4
#: how long the test waits for the server to close a connection: anything shorter than forever would do
HOLD_BOUND_S = 30.0
HALF_HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
HALF_BODY = b"POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"


@contextmanager
def _server(index: Path, tmp_path: Path, open_files: int | None = None) -> Iterator[tuple[int, Path]]:
    port = free_port()
    log = tmp_path / "serve.log"
    cmd = dtdialog_command("serve", "--port", str(port), "--index", str(index), "--sessions",
                           str(tmp_path / "sessions.sqlite"), "--ranker", "rules", "--log-level", "info",
                           "--header-timeout", str(HEADER_TIMEOUT), "--body-timeout", str(BODY_TIMEOUT),
                           "--max-connections-per-client", str(PER_CLIENT))
    with log.open("wb") as out:
        limit = None if open_files is None else (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (open_files,) * 2))
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=python_env(), preexec_fn=limit)
    try:
        while True:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
                    if json.load(response).get("engine_loaded"):
                        break
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        yield port, log
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _connect(port: int, data: bytes, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=HOLD_BOUND_S, source_address=(source, 0))
    sock.sendall(data)
    return sock


def _answer_until_closed(sock: socket.socket) -> bytes:
    """Return what the server sent before closing the connection; a socket timeout (held open) fails the test."""
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
    except ConnectionResetError:
        pass
    return received


def test_half_a_request_head_or_body_is_closed_and_a_full_request_still_answered(small_index, tmp_path):
    with _server(small_index, tmp_path) as (port, _log), ExitStack() as sockets:
        head = sockets.enter_context(_connect(port, HALF_HEAD))
        body = sockets.enter_context(_connect(port, HALF_BODY))
        silent = sockets.enter_context(_connect(port, b""))
        assert _answer_until_closed(head).startswith(b"HTTP/1.1 408 ")
        assert _answer_until_closed(body).startswith(b"HTTP/1.1 408 ")
        assert _answer_until_closed(silent).startswith(b"HTTP/1.1 408 ")
        # the deadline stops once the head is in: a complete request is answered as before
        whole = sockets.enter_context(_connect(port, HALF_HEAD + b"Connection: close\r\n\r\n"))
        assert _answer_until_closed(whole).startswith(b"HTTP/1.1 200 ")


def test_one_address_cannot_hold_more_connections_nor_crowd_out_another(small_index, tmp_path):
    with _server(small_index, tmp_path) as (port, log), ExitStack() as sockets:
        held = [sockets.enter_context(_connect(port, HALF_HEAD[:10])) for _ in range(PER_CLIENT)]
        time.sleep(0.2)  # the held ones are counted before the extra ones arrive
        extra = [sockets.enter_context(_connect(port, b"")) for _ in range(40)]
        answers = [_answer_until_closed(sock) for sock in extra]
        assert all(a.startswith(b"HTTP/1.1 429 ") or a == b"" for a in answers), answers[:3]
        assert sum(a.startswith(b"HTTP/1.1 429 ") for a in answers) > 0
        # another address is a client of its own: answered while the first one's slots are all taken
        other = sockets.enter_context(_connect(port, HALF_HEAD + b"Connection: close\r\n\r\n", source="127.0.0.2"))
        assert _answer_until_closed(other).startswith(b"HTTP/1.1 200 ")
        for sock in held:  # the held ones end at their deadline too: nothing is held forever
            assert _answer_until_closed(sock).startswith(b"HTTP/1.1 408 ")
    refusals = [line for line in log.read_text().splitlines() if "refused a connection" in line]
    assert 0 < len(refusals) <= 10  # 40 refusals, a few lines: the log cannot grow with the flood


def test_more_connections_than_open_files_are_refused_not_logged_without_end(small_index, tmp_path):
    # the probe's flood: accept failing with "Too many open files" and a traceback for each connection it dropped
    with _server(small_index, tmp_path, open_files=512) as (port, log), ExitStack() as sockets:
        flood = [sockets.enter_context(_connect(port, HALF_HEAD[:10], source=f"127.3.{n // 250}.{n % 250 + 1}"))
                 for n in range(600)]
        answers = [_answer_until_closed(sock) for sock in flood]  # each one refused (503) or timed out (408)
        assert all(a[:13] in (b"HTTP/1.1 503 ", b"HTTP/1.1 408 ", b"") for a in answers), {a[:13] for a in answers}
        whole = sockets.enter_context(_connect(port, HALF_HEAD + b"Connection: close\r\n\r\n", source="127.0.0.2"))
        assert _answer_until_closed(whole).startswith(b"HTTP/1.1 200 ")
    text = log.read_text()
    assert "Too many open files" not in text
    assert len(text.splitlines()) < 100


def test_a_flood_of_one_error_writes_a_bounded_number_of_lines():
    from dtdialog.api import log_flood

    out = io.StringIO()
    handler = logging.StreamHandler(out)
    logger = logging.getLogger("test_slowloris.flood")
    logger.addHandler(handler)
    logger.propagate = False
    clock = [0.0]
    handler.addFilter(log_flood.RepeatLimitFilter(handler, burst=10, interval=60.0, clock=lambda: clock[0]))
    try:
        for n in range(100_000):
            clock[0] = n * 0.001  # 100,000 errors in 100 s: two intervals
            logger.error("socket.accept() out of system resource: %s", "[Errno 24] Too many open files")
        logger.error("something else")
    finally:
        logger.removeHandler(handler)
    lines = out.getvalue().splitlines()
    assert len(lines) <= 25, len(lines)
    assert lines.count("socket.accept() out of system resource: [Errno 24] Too many open files") == 20
    assert "59990 similar messages suppressed in 60 s: socket.accept() out of system resource: %s" in lines
    assert lines[-1] == "something else"
