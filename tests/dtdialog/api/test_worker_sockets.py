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

pytestmark = pytest.mark.skipif(not worker_sockets.supported(),
                                reason="the kernel does not spread an SO_REUSEPORT group's connections (Linux does)")


def test_only_linux_is_trusted_to_spread_a_groups_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_sockets.sys, "platform", "darwin")  # the option exists there, the spreading does not
    assert not worker_sockets.supported()


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


def test_a_second_server_cannot_take_the_port_while_the_first_is_starting() -> None:
    # no worker listens yet (the engine is loading): the hold alone must refuse the second server's first bind
    port = free_port()
    with reserve("127.0.0.1", port):
        with pytest.raises(ConfigError, match="Address already in use"):
            reserve("127.0.0.1", port)


def test_a_port_left_in_time_wait_by_a_server_without_reuseport_can_be_taken_again() -> None:
    with socket.socket() as old:  # what uvicorn's one socket, or a one-worker dtdialog serve, leaves behind
        old.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        old.bind(("127.0.0.1", 0))
        old.listen()
        port = old.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port), timeout=5)
        served, _ = old.accept()
        served.close()  # the server end closes first: its port keeps a connection in TIME_WAIT
        client.close()
    with reserve("127.0.0.1", port) as held:
        assert held.getsockname()[1] == port


def test_a_second_server_cannot_join_the_group_of_a_running_one() -> None:
    # same user, SO_REUSEPORT on both: without the plain bind first, the second would share the first's connections
    port = free_port()
    with reserve("127.0.0.1", port), pickle.loads(pickle.dumps(WorkerListener("127.0.0.1", port, 16))):
        with pytest.raises(ConfigError, match="Address already in use"):
            reserve("127.0.0.1", port)


def _serve_workers(monkeypatch: pytest.MonkeyPatch, tmp_path, port: int) -> dict:
    """Run ``serve_workers`` for 2 workers with the engine's preparation and uvicorn's runners recorded, not run."""
    import argparse

    import uvicorn
    import uvicorn.supervisors

    from dtdialog.api.settings import ApiSettings
    from dtdialog.commands import serve

    calls: dict = {}

    class Supervisor:
        def __init__(self, config, sockets):
            calls["multiprocess"] = (config, sockets)

        def run(self):  # the port is held while the workers run
            with pytest.raises(ConfigError, match="Address already in use"):
                reserve("127.0.0.1", port)
            calls["held"] = True

    monkeypatch.setattr(serve, "prepare_engine", lambda settings: calls.setdefault("prepared", settings))
    monkeypatch.setattr(serve, "shared_quota_dir", lambda p: tmp_path)
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: calls.setdefault("run", (app, options)))
    monkeypatch.setattr(uvicorn.supervisors, "Multiprocess", Supervisor)
    monkeypatch.delenv("DTDIALOG_WORKER_SETTINGS", raising=False)
    args = argparse.Namespace(host="127.0.0.1", port=port, log_level="warning")
    assert serve.serve_workers(ApiSettings(workers=2), args, []) == 0
    return calls


def test_serve_workers_hands_each_worker_a_listener_while_holding_the_port(monkeypatch, tmp_path) -> None:
    port = free_port()
    calls = _serve_workers(monkeypatch, tmp_path, port)
    config, sockets = calls["multiprocess"]
    assert calls["held"] and "run" not in calls and calls["prepared"].shared_dir == tmp_path
    assert config.workers == 2 and config.app == "dtdialog.api.app:worker_app" and config.factory
    assert sockets == [WorkerListener("127.0.0.1", port, config.backlog)]
    with reserve("127.0.0.1", port):  # given back afterwards
        pass


def test_where_the_kernel_does_not_spread_connections_the_workers_share_uvicorns_socket(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(worker_sockets, "supported", lambda: False)
    calls = _serve_workers(monkeypatch, tmp_path, free_port())
    app, options = calls["run"]
    assert "multiprocess" not in calls and app == "dtdialog.api.app:worker_app"
    assert options["workers"] == 2 and options["factory"] and options["access_log"] is False
