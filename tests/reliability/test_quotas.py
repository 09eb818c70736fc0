"""Probe finding 4 (issue 14): "no quotas".

Reproduced here: one client created 7,599 sessions in 10 s; sessions never expired; three clients sending
long searches pushed a normal customer's turn from 0.04 s to 3.8 s. Each quota is checked for the refusal
(status, code, ``Retry-After``) and for the other, well-behaved client still being served.
"""

from __future__ import annotations

import asyncio
import sqlite3

import pytest
from protection_helpers import (  # noqa: F401  (the fixtures are used by name)
    API_KEY,
    app_client_fixture,
    assert_error,
    index_file_fixture,
    protected_index_fixture,
)

from dtdialog.api.errors import ApiError
from dtdialog.api.fair_gate import FairGate

QUESTION = "My car will not start although I replaced the battery and the spark plugs."


def _retry_after(response) -> int:
    value = int(response.headers["Retry-After"])
    assert value >= 1
    return value


def test_a_burst_of_new_sessions_is_cut_at_the_rate_and_others_are_still_served(app_client):
    abuser = app_client(address="10.0.0.66", session_rate="5/minute")
    codes = [abuser.post("/sessions").status_code for _ in range(8)]
    assert codes[:5] == [201] * 5
    refused = abuser.post("/sessions")
    assert_error(refused, 429, "rate_limited")
    assert _retry_after(refused) <= 60
    customer = app_client(address="10.0.0.7", app=abuser.app)
    sid = customer.post("/sessions")
    assert sid.status_code == 201, sid.text
    assert customer.post(f"/sessions/{sid.json()['session_id']}/messages", json={"text": QUESTION}).status_code == 200


def test_a_burst_of_turns_is_cut_at_the_rate_and_others_are_still_served(app_client):
    abuser = app_client(address="10.0.0.66", turn_rate="3/minute")
    sid = abuser.post("/sessions").json()["session_id"]
    for _ in range(3):
        assert abuser.post(f"/sessions/{sid}/messages", json={"text": QUESTION}).status_code == 200
    refused = abuser.post(f"/sessions/{sid}/messages", json={"text": QUESTION})
    assert_error(refused, 429, "rate_limited")
    _retry_after(refused)
    customer = app_client(address="10.0.0.7", app=abuser.app)
    other = customer.post("/sessions").json()["session_id"]
    assert customer.post(f"/sessions/{other}/messages", json={"text": QUESTION}).status_code == 200


def test_searches_share_a_rate_with_parses(app_client):
    client = app_client(search_rate="2/minute")
    assert client.post("/parse", json={"text": QUESTION}).status_code == 200
    assert client.get("/search", params={"q": QUESTION}).status_code == 200
    assert_error(client.post("/search", json={"query": QUESTION}), 429, "rate_limited")


def test_the_engine_budget_stops_a_heavy_client_but_not_a_light_one(app_client):
    heavy = app_client(address="10.0.0.66", engine_seconds=0.01)  # one hundredth of a second per minute
    assert heavy.get("/search", params={"q": QUESTION}).status_code == 200  # loads the engine: not charged
    assert heavy.get("/search", params={"q": QUESTION}).status_code == 200  # charged: the budget is used up
    refused = heavy.post("/parse", json={"text": QUESTION})
    assert_error(refused, 429, "engine_budget_exceeded")
    _retry_after(refused)
    light = app_client(address="10.0.0.7", app=heavy.app)
    assert light.get("/search", params={"q": QUESTION}).status_code == 200


def test_a_search_question_has_the_turn_limit(app_client):
    client = app_client()
    long_question = "My car will not start although I replaced the battery. " * 100  # 5,600 characters
    assert_error(client.post("/search", json={"query": long_question}), 413, "text_too_long")
    # the query-string mode only retrieves (no parse): it keeps the general text limit
    assert client.post("/search", json={"query": long_question, "mode": "query"}).status_code == 200


def test_a_long_parse_needs_the_key(app_client):
    client = app_client(api_key=API_KEY)
    text = "My car will not start although I replaced the battery. " * 100  # 5,600 characters, over a turn
    refused = assert_error(client.post("/parse", json={"text": text}), 413, "text_too_long")
    assert "API key" in refused["message"]
    assert client.post("/parse", json={"text": text}, headers={"X-API-Key": API_KEY}).status_code == 200


def _age(sessions_path, session_ids, seconds):
    with sqlite3.connect(sessions_path) as conn:
        # the row's column (what purges and counts read) and the record's own field (what a load reads)
        conn.executemany("UPDATE sessions SET updated = updated - ?1, data = json_set(data, '$.updated', updated - ?1) "
                         "WHERE id = ?2", [(seconds, sid) for sid in session_ids])


def test_the_live_session_cap_and_idle_expiry(app_client, tmp_path):
    client = app_client(max_sessions=3, session_ttl="1h")
    ids = [client.post("/sessions").json()["session_id"] for _ in range(3)]
    full = client.post("/sessions")
    assert_error(full, 503, "session_limit_reached")
    _retry_after(full)
    _age(tmp_path / "sessions.sqlite", ids[:2], 2 * 3600)  # two sessions idle for two hours
    assert client.post("/sessions").status_code == 201  # expired sessions do not count
    assert_error(client.get(f"/sessions/{ids[0]}"), 404, "session_expired")
    assert_error(client.post(f"/sessions/{ids[1]}/messages", json={"text": QUESTION}), 404, "session_expired")
    assert client.get(f"/sessions/{ids[2]}").status_code == 200
    with sqlite3.connect(tmp_path / "sessions.sqlite") as conn:  # an expired session is purged when touched
        assert conn.execute("SELECT COUNT(*) FROM sessions WHERE id IN (?, ?)", ids[:2]).fetchone()[0] == 0


def test_sessions_purge_removes_only_the_old_sessions_and_prints_one_line(tmp_path, capsys):
    from dtdialog.cli import main
    from dtdialog.dialogue.session import SessionRecord
    from dtdialog.dialogue.session_store import SessionStore

    path = tmp_path / "sessions.sqlite"
    with SessionStore(path) as store:
        for sid in ("old-1", "old-2", "new-1"):
            record = SessionRecord(id=sid)
            record.add_message("user", f"hello from {sid}")
            store.save(record)
    _age(path, ["old-1", "old-2"], 8 * 86400)
    assert main(["sessions", "purge", "--older-than", "7d", "--sessions", str(path), "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith("would purge 2 of 3 sessions")
    assert main(["sessions", "purge", "--older-than", "7d", "--sessions", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("purged 2 of 3 sessions idle for more than 7d")
    with SessionStore(path) as store:
        assert store.ids() == ["new-1"]
        assert store.load("new-1").transcript


@pytest.mark.parametrize(("argv", "needle"), [
    (["sessions", "purge", "--older-than", "a week"], "--older-than"),
    (["sessions", "purge", "--older-than=-3d"], "--older-than"),
    (["sessions", "purge", "--older-than", "7d", "--sessions", "/nonexistent/sessions.sqlite"], "no session store"),
])
def test_sessions_purge_bad_input_is_one_line(capsys, argv, needle):
    from dtdialog.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and needle in err and err.count("\n") == 1


def test_the_fair_gate_serves_a_light_client_before_a_heavy_clients_queue():
    async def scenario() -> list[str]:
        gate = FairGate(max_pending=8, wait=60)
        gate.record("heavy", 5.0)  # the heavy client has used the engine a lot lately
        order: list[str] = []
        release = asyncio.Event()

        async def call(client: str, label: str, hold: asyncio.Event | None = None) -> None:
            async with gate.turn(client):
                order.append(label)
                if hold is not None:
                    await hold.wait()

        first = asyncio.create_task(call("heavy", "heavy-1", release))
        await asyncio.sleep(0)
        queued = [asyncio.create_task(call("heavy", f"heavy-{i}")) for i in (2, 3, 4)]
        await asyncio.sleep(0)
        queued.append(asyncio.create_task(call("light", "light-1")))  # arrives last
        await asyncio.sleep(0)
        release.set()
        await asyncio.gather(first, *queued)
        return order

    assert asyncio.run(scenario()) == ["heavy-1", "light-1", "heavy-2", "heavy-3", "heavy-4"]


def test_the_fair_gate_bounds_waiting_calls_and_waiting_time():
    async def scenario() -> tuple[ApiError, ApiError, bool]:
        gate = FairGate(max_pending=1, wait=0.05)
        hold = asyncio.Event()

        async def holder() -> None:
            async with gate.turn("a"):
                await hold.wait()

        task = asyncio.create_task(holder())
        await asyncio.sleep(0)
        waiting = asyncio.create_task(gate._acquire("b"))
        await asyncio.sleep(0)
        with pytest.raises(ApiError) as too_many:
            await gate._acquire("b")
        with pytest.raises(ApiError) as busy:
            await waiting
        hold.set()
        await task
        async with gate.turn("c"):  # the gate is free again after the timeout and the release
            free = True
        return too_many.value, busy.value, free

    too_many, busy, free = asyncio.run(scenario())
    assert (too_many.status, too_many.code) == (429, "too_many_pending")
    assert (busy.status, busy.code) == (503, "engine_busy") and busy.headers["Retry-After"]
    assert free


@pytest.mark.timeout(30)
def test_a_request_cancelled_as_the_engine_is_handed_to_it_passes_the_engine_on():
    """Shutdown cancels the requests still waiting; one handed the engine in that same moment must stop too (with
    ``asyncio.wait_for`` it went on to the engine and its client was never answered), and the gate stays usable."""
    async def scenario() -> bool:
        gate = FairGate(max_pending=8, wait=60)
        await gate._acquire("a")  # a's call runs on the engine
        waiter = asyncio.create_task(gate._acquire("b"))
        await asyncio.sleep(0)  # b waits for the engine
        gate._release("a")  # a's call ends: the engine goes to b ...
        waiter.cancel()  # ... just as b's request is cancelled
        with pytest.raises(asyncio.CancelledError):
            await waiter
        await gate._acquire("c")  # b passed the engine on: c gets it at once (the timeout mark guards a hang)
        return gate.waiting("b") == 0

    assert asyncio.run(scenario())


def test_quota_settings_are_validated():
    from dtdialog.api import ApiSettings
    from parsers.errors import ConfigError

    for bad in ({"turn_rate": "lots"}, {"session_rate": "5 per fortnight"}, {"max_sessions": 0},
                {"session_ttl": "-1d"}, {"session_ttl": "soon"}, {"engine_seconds": -1}, {"max_pending": True},
                {"engine_wait": 0}, {"allowed_hosts": ()}, {"allowed_hosts": ("localhost:8000",)},
                {"allowed_hosts": ("http://x",)}, {"allowed_hosts": ("ev*l.example",)}):
        with pytest.raises(ConfigError):
            ApiSettings(**bad)
    settings = ApiSettings(turn_rate="off", session_ttl="7d", allowed_hosts=("LOCALHOST", "[::1]"))
    assert settings.turn_rate is None and settings.session_ttl == 7 * 86400
    assert settings.allowed_hosts == ("localhost", "::1")
