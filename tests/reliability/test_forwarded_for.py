"""Who a client is, behind a proxy or not: ``X-Forwarded-For`` is believed only from ``--forwarded-allow-ips``.

uvicorn's default believes it from loopback, so any process on the server's host could choose the address its
quotas are counted under (issue 14). These run a real ``dtdialog serve``, because the header is read by uvicorn,
not by the app.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from reliability_helpers import dtdialog_command, python_env

from eval.load_test import free_port

pytestmark = pytest.mark.timeout(180)


def _post_session(base: str, forwarded_for: str) -> int:
    request = urllib.request.Request(base + "/sessions", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json", "X-Forwarded-For": forwarded_for})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@contextmanager
def _server(index: Path, tmp_path: Path, *extra: str) -> Iterator[str]:
    port = free_port()
    log = tmp_path / f"serve-{port}.log"
    cmd = dtdialog_command("serve", "--port", str(port), "--index", str(index), "--sessions",
                           str(tmp_path / f"sessions-{port}.sqlite"), "--ranker", "rules", "--log-level", "warning",
                           "--session-rate", "2/minute", *extra)
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=python_env())
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=5) as response:
                    json.load(response)
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_by_default_a_forwarded_address_changes_nothing(small_index: Path, tmp_path: Path):
    with _server(small_index, tmp_path) as base:
        codes = [_post_session(base, f"10.9.9.{n}") for n in range(1, 4)]
    assert codes == [201, 201, 429]  # one client, 127.0.0.1, whatever the header claims


def test_a_listed_proxy_has_each_forwarded_client_counted_on_its_own(small_index: Path, tmp_path: Path):
    with _server(small_index, tmp_path, "--forwarded-allow-ips", "127.0.0.1") as base:
        codes = [_post_session(base, address) for address in ("10.9.9.1", "10.9.9.1", "10.9.9.2", "10.9.9.1")]
    assert codes == [201, 201, 201, 429]
