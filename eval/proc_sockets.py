"""Which process holds which TCP socket of a local server, read from Linux's /proc (nothing is sent).

The load test reports how a server's workers shared the customers' connections with it, and the worker tests
pick a worker's connections with it. Elsewhere than Linux, every function finds nothing.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
_LISTEN, _ESTABLISHED = "0A", "01"


def tcp_inodes(port: int, *, client_port: int | None = None, listening: bool = False) -> set[str]:
    """Return the socket inodes (as /proc/PID/fd links name them) of this machine's TCP sockets whose local port is
    ``port``: the listening ones, the server ends of the connection from ``client_port``, or (neither given) the
    server ends of every established connection."""
    found = set()
    for table in _TABLES:
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, remote = (int(fields[k].rsplit(":", 1)[1], 16) for k in (1, 2))
            if local != port:
                continue
            if listening:
                wanted = fields[3] == _LISTEN
            elif client_port is not None:
                wanted = remote == client_port
            else:
                wanted = fields[3] == _ESTABLISHED
            if wanted:
                found.add(f"socket:[{fields[9]}]")
    return found


def socket_inodes(pid: int) -> set[str]:
    """Return the sockets process ``pid`` holds open (none when it is gone or not ours to read)."""
    held = set()
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return held
    for fd in fds:
        try:
            held.add(os.readlink(fd))
        except OSError:  # closed meanwhile
            continue
    return held


def connections_by_process(port: int) -> dict[int, int]:
    """Return, for each process holding any, how many server ends of established connections on ``port`` it holds."""
    ends = tcp_inodes(port)
    if not ends:
        return {}
    counts: Counter[int] = Counter()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            held = len(socket_inodes(int(entry.name)) & ends)
            if held:
                counts[int(entry.name)] = held
    return dict(counts)
