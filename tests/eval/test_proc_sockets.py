"""``eval.proc_sockets``: which process holds which TCP socket of a local server, read from /proc."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from eval.proc_sockets import connections_by_process, socket_inodes, tcp_inodes

pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc")


def test_the_listener_and_the_server_ends_of_connections_are_found_with_their_process() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert tcp_inodes(port, listening=True) <= socket_inodes(os.getpid())
        assert len(tcp_inodes(port, listening=True)) == 1
        assert connections_by_process(port) == {}  # listening, nothing connected yet
        clients = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(3)]
        accepted = [server.accept()[0] for _ in clients]
        try:
            assert connections_by_process(port) == {os.getpid(): 3}  # the server ends; client ends have other ports
            first = tcp_inodes(port, client_port=clients[0].getsockname()[1])
            assert len(first) == 1 and first <= socket_inodes(os.getpid())
            accepted[0].close()
            assert connections_by_process(port) == {os.getpid(): 2}
        finally:
            for sock in clients + accepted:
                sock.close()


def test_a_port_nobody_uses_and_a_process_that_is_gone_find_nothing() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening or connected
    assert tcp_inodes(port, listening=True) == set() and connections_by_process(port) == {}
    assert socket_inodes(2**22 + 12345) == set()  # above any pid this machine hands out
