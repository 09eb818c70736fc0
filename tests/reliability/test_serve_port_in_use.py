"""A port in use is one `error:` line and exit code 2 for a one-process server, before the engine loads.

The probe found uvicorn's own bind failing after start-up: eight lines of its log and exit code 3.
"""

from __future__ import annotations

import socket
import subprocess
import sys


def test_a_port_in_use_is_one_error_line_and_exit_2(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run([sys.executable, "-m", "dtdialog", "serve", "--port", str(port), "--ranker", "rules",
                              "--sessions", str(tmp_path / "s.sqlite")], capture_output=True, text=True, timeout=300,
                             cwd=tmp_path)
    assert run.returncode == 2, run.stderr[-2000:]
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert lines == [f"error: cannot listen on 127.0.0.1:{port}: Address already in use"]
