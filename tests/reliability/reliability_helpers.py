"""Helpers of the reliability suite (imported by name: pytest puts this folder on sys.path): child processes of
this checkout, the one-line error check, and commands run in a private mount namespace (full or read-only disks)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
#: the clients hold the key: these tests probe faults, not access control
API_KEY = "reliability-probe-key-0123"
#: every STRIDE-th built-in dialogue goes into the small indexes: one or two per topic, quick to build (here, not in
#: conftest.py: ``from conftest import`` resolves to whichever test folder's conftest was imported first)
STRIDE = 15


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


def folder_snapshot(folder: Path) -> dict[str, tuple[int, int, bytes | str | None]]:
    """Return every entry of ``folder`` with its type, size and content (a link's target; a FIFO's nothing)."""
    out = {}
    for path in sorted(folder.iterdir()):
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            content: bytes | str | None = os.readlink(path)
        elif stat.S_ISREG(info.st_mode):
            content = path.read_bytes()
        else:
            content = None
        out[path.name] = (stat.S_IFMT(info.st_mode), info.st_size, content)
    return out


def namespaces_work() -> str | None:
    """Return None when ``unshare -m`` can mount here (root in a private mount namespace), else why not."""
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt 2>&1 || "
                            "mount -t tmpfs -o size=64k tmpfs /tmp 2>&1"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot mount in a private mount namespace ({(probe.stdout + probe.stderr).strip()[:120]})"
    return None


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


@contextmanager
def sqlite_lock_held_elsewhere(path: Path, mode: str = "IMMEDIATE") -> Iterator[None]:
    """Hold ``BEGIN <mode>`` (IMMEDIATE: the write lock; EXCLUSIVE: readers too, outside WAL) on the SQLite file
    ``path`` from another process while the block runs."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys\n"
         f"conn = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
         f"conn.execute('BEGIN {mode}')\nprint('locked', flush=True)\nsys.stdin.readline()\nconn.execute('ROLLBACK')"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.communicate("release\n")
