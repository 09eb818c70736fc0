"""The listening sockets of ``dtdialog serve --workers N``: the supervisor holds the port without listening, each
worker gets a listening socket of its own in one SO_REUSEPORT group, and a port in use is refused in one line."""

from __future__ import annotations

import pickle
import socket

import pytest

from dtdialog.api import worker_sockets
from dtdialog.api.worker_sockets import WorkerListener, reserve
from eval.load_test import free_port
from parsers.errors import ConfigError

pytestmark = pytest.mark.skipif(not worker_sockets.supported(), reason="the platform has no SO_REUSEPORT")


def test_a_worker_listener_becomes_a_listening_socket_of_its_own_beside_the_reservation() -> None:
    port = free_port()
    with reserve("127.0.0.1", port) as held:
        assert held.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 0  # holds the port, takes no connection
        listener = WorkerListener("127.0.0.1", port, 128)  # all 40 connections wait at once
        # what a spawned worker gets: uvicorn's supervisor pickles its sockets into the worker
        first, second = (pickle.loads(pickle.dumps(listener)) for _ in range(2))
        with first, second:
            assert first.fileno() != second.fileno()
            for sock in (first, second):
                assert sock.getsockname() == ("127.0.0.1", port)
                assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1
            clients = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(40)]
            try:
                for sock in (first, second):
                    sock.setblocking(False)
                accepted = {id(sock): 0 for sock in (first, second)}
                for sock in (first, second):
                    while True:
                        try:
                            conn, _ = sock.accept()
                        except BlockingIOError:
                            break
                        conn.close()
                        accepted[id(sock)] += 1
                # every connection reached a listening socket, none was left with the reservation
                assert sum(accepted.values()) == len(clients)
            finally:
                for client in clients:
                    client.close()


def test_a_port_another_program_listens_on_is_one_config_error() -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        with pytest.raises(ConfigError, match=f"cannot listen on 127.0.0.1:{port}: "):
            reserve("127.0.0.1", port)


def test_a_second_server_cannot_join_the_group_of_a_running_one() -> None:
    # same user, SO_REUSEPORT on both: without the plain bind first, the second would share the first's connections
    port = free_port()
    with reserve("127.0.0.1", port), pickle.loads(pickle.dumps(WorkerListener("127.0.0.1", port, 16))):
        with pytest.raises(ConfigError, match="Address already in use"):
            reserve("127.0.0.1", port)
