"""Fixtures of the reliability suite (the hostile probe of issue 14 kept as tests): a small answer index, apps over
it, and ways to run a command on a full or read-only file system."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dtdialog.api import ApiSettings, create_app

REPO = Path(__file__).resolve().parents[2]
#: the clients hold the key: these tests probe faults, not access control
API_KEY = "reliability-probe-key-0123"
#: every STRIDE-th built-in dialogue goes into the small index: one or two per topic, quick to build
STRIDE = 15


@pytest.fixture(scope="session")
def small_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return a SQLite answer index over every ``STRIDE``-th built-in dialogue (built once per run, never written to)."""
    from data.builtin import load_builtin_corpus
    from index.builder import build_index
    from parsers.base import get_parser

    out = tmp_path_factory.mktemp("reliability-index") / "answers.sqlite"
    build_index(dialogues=load_builtin_corpus()[::STRIDE], parser=get_parser(), backend="sqlite", out=out,
                progress=False)
    return out


@pytest.fixture
def index_copy(small_index: Path, tmp_path: Path) -> Path:
    """Return a private copy of the small index (tests that write to it or lock it)."""
    dst = tmp_path / "index" / "answers.sqlite"
    dst.parent.mkdir()
    with sqlite3.connect(small_index) as src, sqlite3.connect(dst) as out:
        src.backup(out)
    return dst


@pytest.fixture
def make_client(small_index: Path, tmp_path: Path) -> Iterator[Callable[..., TestClient]]:
    """Return a factory of started TestClients over the small index (sessions in this test's tmp dir)."""
    defaults: dict[str, Any] = {"index_path": small_index, "sessions_path": tmp_path / "sessions.sqlite",
                                "api_key": API_KEY, "ranker": "rules"}
    with ExitStack() as started:  # every client is shut down (its engine closed) at teardown
        yield lambda **overrides: started.enter_context(
            TestClient(create_app(ApiSettings(**{**defaults, **overrides})), raise_server_exceptions=False,
                       headers={"X-API-Key": API_KEY}))


def python_env() -> dict[str, str]:
    """Return the environment for a child Python: this checkout first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def dtdialog_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "dtdialog", *args]


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Assert the command failed the way bad input must: exit 2, one ``error:`` line on stderr, no traceback."""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-2000:]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _namespaces_work() -> str | None:
    """Return None when ``unshare -m`` can mount here (root in a private mount namespace), else why not."""
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt 2>&1 || "
                            "mount -t tmpfs -o size=64k tmpfs /tmp 2>&1"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot mount in a private mount namespace ({(probe.stdout + probe.stderr).strip()[:120]})"
    return None


@pytest.fixture(scope="session")
def mount_namespace() -> None:
    """Skip unless a command can be run in a private mount namespace where it may mount (nothing leaks out)."""
    reason = _namespaces_work()
    if reason is not None:
        pytest.skip(f"no private mount namespace: {reason}")


def run_with_mounts(setup: str, command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in a private mount namespace after the shell lines ``setup`` (mounts seen by it alone)."""
    script = setup + '\nexec "$@"'
    return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *command], capture_output=True, text=True,
                          env=python_env(), **kwargs)


def readonly_setup(folder: Path) -> str:
    """Return the shell lines that make ``folder`` read-only (a read-only bind mount over itself)."""
    return f"mount --bind '{folder}' '{folder}' && mount -o remount,bind,ro '{folder}'"


def small_tmpfs_setup(folder: Path, size_kb: int) -> str:
    """Return the shell lines that mount a tmpfs of ``size_kb`` KiB on ``folder`` (a disk that fills up)."""
    return f"mount -t tmpfs -o size={size_kb}k tmpfs '{folder}'"
