"""Issue 31, items 2-4: a turn's cost is bounded before it runs and charged while it runs; clients are counted by
network (IPv6 /64); new sessions have a global budget, and every way of starting one counts against the rates."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import pytest
from protection_helpers import app_client_fixture, assert_error, index_file_fixture, protected_index_fixture  # noqa: F401
from starlette.requests import Request

from dtdialog.api.errors import ApiError
from dtdialog.api.fair_gate import TURN, FairGate
from dtdialog.api.quotas import Quotas
from parsers.parse_cost import MAX_NESTING, MAX_REPEAT, MAX_RUN, nesting_depth
from parsers.text_input import clean_text

QUESTION = "My car will not start although I replaced the battery."
#: The probe's explain turn ("(" * 2000 + "car" + ")" * 1996) and its kin: each took the parser seconds.
COSTLY = {"bracket bomb": "(" * 2000 + "car" + ")" * 1996, "emoji run": "\N{GRINNING FACE}" * 3999,
          "quote run": '"' * 3999, "long path": "http://x.example/" + "a/" * 1990, "spaced brackets": "( " * 1000 + "car"}


@pytest.mark.parametrize("name", sorted(COSTLY))
def test_a_text_made_to_be_costly_is_bounded_before_the_parser_sees_it(name):
    cleaned = clean_text(COSTLY[name])
    assert nesting_depth(cleaned) <= MAX_NESTING
    assert max(len(run) for run in cleaned.split()) <= MAX_RUN
    assert not any(ch * (MAX_REPEAT + 1) in cleaned for ch in set(cleaned) if not ch.isalnum() and not ch.isspace())


def test_text_a_person_writes_is_parsed_as_written():
    text = "I replaced the battery (and the coils, see https://example.com/guide), but it still won't start..."
    assert clean_text(text) == text


def test_a_question_is_planned_from_a_bounded_number_of_edus_and_parts():
    from dtdialog.selection.selector import AnswerSelector
    from dtdialog.understanding.subtrees import MAX_PARTS, MAX_QUESTION_EDUS
    from parsers.base import get_parser

    question = " ".join(["The car stalls when it is cold, but it runs when it is warm, because the choke sticks."] * 40)
    plan = AnswerSelector(index=None, parser=get_parser()).plan(question)
    assert 0 < len(plan.tree.edus) <= MAX_QUESTION_EDUS
    assert 0 < len(plan.parts) <= MAX_PARTS
    assert question.startswith(plan.question)


def test_the_retrieval_depth_is_capped():
    from dtdialog.setup.engine_config import MAX_CANDIDATES, RetrievalConfig
    from parsers.errors import ConfigError

    with pytest.raises(ConfigError, match="candidates must be at most"):
        RetrievalConfig(candidates=MAX_CANDIDATES + 1)


def _request(quotas: Quotas, address: str) -> Request:
    async def call(fn, exclusive=False):  # the engine service's call, on a thread as the real one
        return await asyncio.to_thread(fn)

    app = SimpleNamespace(state=SimpleNamespace(service=SimpleNamespace(loaded=True, call=call), quotas=quotas))
    return Request({"type": "http", "client": (address, 40000), "headers": [], "app": app})


@pytest.mark.timeout(60)
def test_a_running_call_is_charged_to_the_budget_while_it_runs(tmp_path):
    """The probe's eight concurrent turns were all admitted because nothing was charged until a turn ended."""
    from dtdialog.api import ApiSettings

    quotas = Quotas(ApiSettings(sessions_path=tmp_path / "s.sqlite", engine_seconds=0.2, engine_threads=4))

    async def scenario() -> ApiError:
        request = _request(quotas, "10.0.0.9")
        started, release = threading.Event(), threading.Event()

        def slow() -> str:
            started.set()
            release.wait(30)
            return "done"

        first = asyncio.create_task(quotas.run(request, slow, lane=TURN))
        await asyncio.to_thread(started.wait, 30)
        await asyncio.sleep(0.4)  # the running call has now used twice the client's budget
        try:
            with pytest.raises(ApiError) as refused:
                await quotas.run(request, lambda: "second", lane=TURN)
        finally:
            release.set()
            assert await first == "done"
        other = _request(quotas, "10.0.0.10")  # another client's budget is its own
        assert await quotas.run(other, lambda: "other", lane=TURN) == "other"
        return refused.value

    refused = asyncio.run(scenario())
    assert (refused.status, refused.code) == (429, "engine_budget_exceeded")


def test_one_client_cannot_hold_every_engine_thread():
    async def scenario() -> tuple[bool, bool]:
        gate = FairGate(max_pending=8, wait=60, capacity=2)
        await gate._acquire("addr:a", TURN, cheap=True)
        second = asyncio.create_task(gate._acquire("addr:a", TURN, cheap=True))
        await asyncio.sleep(0)
        held_back = not second.done()
        await gate._acquire("addr:b", TURN, cheap=True)  # the other client finds the free thread at once
        gate._release("addr:a", TURN, kept=True)
        await asyncio.wait_for(second, 5)
        return held_back, gate.running_for("addr:a") == 1

    assert asyncio.run(scenario()) == (True, True)


def test_the_last_engine_thread_is_kept_for_light_clients_short_turns():
    """Heavy clients, and long turns from fresh addresses (the probe's rotating abusers), share the other threads;
    a chatting customer's short turn gets the last one."""
    async def scenario() -> tuple[bool, bool, bool]:
        gate = FairGate(max_pending=8, wait=60, capacity=3)
        gate.record("addr:heavy", 10.0)
        await gate._acquire("addr:heavy", TURN, cheap=True)  # short, but its client keeps the engine busy
        await gate._acquire("addr:fresh-1", TURN)  # a long turn from an address never seen before
        long_turn = asyncio.create_task(gate._acquire("addr:fresh-2", TURN))
        await asyncio.sleep(0)
        held_back = not long_turn.done()  # two such calls run: the third thread is kept
        kept = await asyncio.wait_for(gate._acquire("addr:customer", TURN, cheap=True), 5)
        gate._release("addr:customer", TURN, kept=kept)
        await asyncio.sleep(0)
        still_back = not long_turn.done()  # the kept thread is free again, and still not theirs
        gate._release("addr:fresh-1", TURN)
        await asyncio.wait_for(long_turn, 5)  # a long turn ended: the next one takes its thread
        return held_back, still_back, long_turn.done()

    assert asyncio.run(scenario()) == (True, True, True)


def test_ipv6_clients_are_counted_by_their_64_network(app_client):
    first = app_client(address="2001:db8:1:2::1", session_rate="2/minute", global_session_rate=None)
    same_net = app_client(address="2001:db8:1:2:ffff::9", app=first.app)
    other_net = app_client(address="2001:db8:1:3::1", app=first.app)
    assert first.post("/sessions").status_code == 201
    assert same_net.post("/sessions").status_code == 201
    assert_error(same_net.post("/sessions"), 429, "rate_limited")
    assert other_net.post("/sessions").status_code == 201


def test_new_sessions_from_many_addresses_meet_a_global_budget_and_going_conversations_go_on(app_client):
    first = app_client(address="10.1.0.1", global_session_rate="3/minute")
    session = first.post("/sessions").json()["session_id"]
    for n in (2, 3):
        assert app_client(address=f"10.1.0.{n}", app=first.app).post("/sessions").status_code == 201
    refused = app_client(address="10.1.0.4", app=first.app).post("/sessions")
    assert_error(refused, 503, "server_busy")
    assert int(refused.headers["Retry-After"]) >= 1
    webhook = app_client(address="10.1.0.5", app=first.app).post(
        "/webhooks/rest/webhook", json={"sender": "new-customer", "message": QUESTION})
    assert_error(webhook, 503, "server_busy")
    assert first.post(f"/sessions/{session}/messages", json={"text": QUESTION}).status_code == 200


def test_webhook_senders_count_against_the_clients_session_rate(app_client):
    """One address took 10 sessions and 20 webhook senders in 0.1 s and so filled the server's session cap."""
    client = app_client(address="10.2.0.1", session_rate="2/minute", turn_rate=None)
    assert client.post("/sessions").status_code == 201
    first = client.post("/webhooks/rest/webhook", json={"sender": "sender-1", "message": QUESTION})
    assert first.status_code == 200, first.text
    assert_error(client.post("/webhooks/rest/webhook", json={"sender": "sender-2", "message": QUESTION}),
                 429, "rate_limited")
    assert_error(client.post("/sessions"), 429, "rate_limited")
    # a conversation already going on is not a new session
    again = client.post("/webhooks/rest/webhook", json={"sender": "sender-1", "message": "it is a 2012 Honda"})
    assert again.status_code == 200, again.text


def test_a_client_asking_again_while_refused_waits_before_each_refusal(tmp_path, monkeypatch):
    """The probe's scripts ignored Retry-After: hundreds of refusals a second cost the server's event loop (and,
    through the GIL, the engine) as much as the turns they were refused."""
    from dtdialog.api import ApiSettings
    from dtdialog.api import quotas as quotas_module

    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(quotas_module.asyncio, "sleep", fake_sleep)
    quotas = Quotas(ApiSettings(sessions_path=tmp_path / "s.sqlite"))
    refusal = ApiError(429, "rate_limited", "too many turns")

    async def refuse(client: str) -> None:
        with pytest.raises(ApiError):
            await quotas.refuse(client, refusal)

    async def scenario() -> None:
        await refuse("addr:a")  # the first refusal is at once
        assert waits == []
        await refuse("addr:a")  # asked again at once: the refusal waits
        await refuse("addr:b")  # another client's first refusal does not
        assert waits == [quotas_module.REFUSAL_DELAY_S]

    asyncio.run(scenario())
