"""Start-up loading: ``dtdialog serve`` loads the engine in the background; ``/healthz`` and ``/readyz`` say when
it is ready, and a failed load is reported there instead of hanging the first customer."""

from __future__ import annotations

import threading
import time

import pytest
from api_helpers import assert_error

from dtdialog.api.service import EngineService
from dtdialog.cli import build_parser


def _wait_until(condition) -> None:
    # polled, never timed: the test's timeout mark is the hang guard
    while not condition():
        time.sleep(0.05)


@pytest.mark.timeout(300)
def test_background_load_is_reported_until_done(make_client, monkeypatch):
    release = threading.Event()
    real_warm_up = EngineService.warm_up

    def held_warm_up(self):
        release.wait()
        real_warm_up(self)

    monkeypatch.setattr(EngineService, "warm_up", held_warm_up)
    client = make_client(warm_up_in_background=True)  # the lifespan starts the load; the client answers at once
    health = client.get("/healthz")
    assert health.status_code == 200, health.text  # alive while loading: a liveness probe must not kill it
    assert health.json()["loading"] is True and health.json()["ready"] is False
    assert health.json()["engine_loaded"] is False
    waiting = client.get("/readyz")
    assert_error(waiting, 503, "loading")
    assert waiting.headers["Retry-After"]
    release.set()
    _wait_until(lambda: client.get("/healthz").json()["ready"])
    body = client.get("/healthz").json()
    assert body["engine_loaded"] is True and body["loading"] is False and body["problem"] is None
    assert client.get("/readyz").status_code == 200


@pytest.mark.timeout(300)
def test_a_long_start_up_load_is_not_a_stalled_engine(make_client, monkeypatch):
    release = threading.Event()
    monkeypatch.setattr(EngineService, "warm_up", lambda self: release.wait())
    client = make_client(warm_up_in_background=True, health_stall_seconds=0.1)
    service = client.app.state.service
    _wait_until(lambda: service._executor is not None and service._executor.busy_seconds() > 0.3)
    try:
        assert client.get("/healthz").status_code == 200  # loading, not stuck
    finally:
        release.set()


@pytest.mark.timeout(300)
def test_a_failed_background_load_is_reported(make_client, tmp_path):
    notes = tmp_path / "notes.sqlite"
    notes.write_text("not an index\n" * 20)
    client = make_client(index_path=notes, warm_up_in_background=True)
    _wait_until(lambda: not client.get("/healthz").json()["loading"])
    body = client.get("/healthz").json()
    assert body["ready"] is False and body["engine_loaded"] is False
    assert body["problem"] and "/tmp/" not in body["problem"]  # one line, no server path
    error = assert_error(client.get("/readyz"), 503, "engine_unavailable")
    assert body["problem"] in error["message"]
    assert_error(client.post("/sessions"), 503, "engine_unavailable")  # requests try again, and fail the same way


def test_without_a_start_up_load_the_first_request_loads_the_engine(client):
    body = client.get("/healthz").json()
    assert body["ready"] is True and body["loading"] is False and body["engine_loaded"] is False
    assert client.get("/readyz").status_code == 200
    assert client.get("/healthz").json()["engine_loaded"] is False  # neither probe loads it


@pytest.mark.parametrize(("argv", "background", "preload"), [
    (["serve"], True, False), (["serve", "--preload"], False, True), (["serve", "--lazy"], False, False)])
def test_serve_loads_in_the_background_unless_told_otherwise(monkeypatch, tmp_path, argv, background, preload):
    import uvicorn

    from dtdialog.commands import serve

    seen = {}
    monkeypatch.setattr(uvicorn.Server, "run",
                        lambda server, sockets=None: seen.setdefault("settings", server.config.app.state.service.settings))
    monkeypatch.setattr(EngineService, "warm_up", lambda self: None)  # --preload loads before the server runs
    import socket

    with socket.socket() as probe:  # serve takes its port before anything else: a free one, not 8000
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = build_parser().parse_args([*argv, "--port", str(port), "--sessions", str(tmp_path / "s.sqlite")])
    assert serve.run(args) == 0
    assert seen["settings"].warm_up_in_background is background and seen["settings"].preload is preload


def test_preload_and_lazy_exclude_each_other():
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--preload", "--lazy"])
