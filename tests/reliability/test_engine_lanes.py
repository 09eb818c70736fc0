"""Probe finding 4, the last target: three clients sending long searches stretched a customer's turn, because every
engine call ran on one thread and a turn waited for the search in flight.

The engine now runs ``engine_threads`` calls at once and ``FairGate`` keeps a slot for turns. Reproduced and checked
here: the gate's reserved slot and its exclusive lane, exclusive engine calls never overlapping another call, turns of
different sessions and searches run side by side giving exactly what each gives alone, concurrent posts to one
session losing no turn, and ``engine_threads=1`` keeping the one shared lane.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from protection_helpers import NO_QUOTAS

from dtdialog.api.fair_gate import BULK, EXCLUSIVE, TURN, FairGate
from dtdialog.api.routes_search import run_search
from dtdialog.api.service import EngineService, RuntimeLock
from dtdialog.api.settings import ApiSettings
from parsers.errors import ConfigError

SCRIPTS = [
    ["My brakes squeal when I stop, even though the pads are new.", "No, that did not help, what else could it be?",
     "The noise gets worse when I turn left."],
    ["The battery keeps dying overnight although it is only a month old.", "I checked that already and it looked fine.",
     "Could it be a fuse or a relay instead?"],
    ["I have checked the spark plugs, replaced the battery, also replaced ignition coils and the solenoid, but I "
     "still could not start my car.", "It did start on the starting fluid at first, but now it does not.",
     "I do not have special tools, is there something simpler?"],
    ["The engine overheats in traffic but the coolant level is fine.", "It only happens after the car has been "
     "sitting overnight.", "Thanks, that sorted it out."],
]
SEARCHES = [("My car will not start although I replaced the battery and the starter, and the lights dim when I turn "
             "the key. " * 8, "question"), ("brakes squeal new pads", "question"), ("coolant AND overheat", "query")]


# -- the gate ----------------------------------------------------------------------------------------------------
def _hold(gate: FairGate, client: str, lane: str, log: list[str], release: asyncio.Event) -> asyncio.Task:
    async def call() -> None:
        async with gate.turn(client, lane, cheap=lane == TURN):  # a customer's short turn
            log.append(f"{client}:{lane}")
            await release.wait()

    return asyncio.create_task(call())


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_a_turn_gets_the_reserved_slot_while_bulk_calls_fill_the_others():
    async def scenario() -> tuple[list[str], dict[str, int], int]:
        gate = FairGate(max_pending=8, wait=60, capacity=3)
        log: list[str] = []
        release = asyncio.Event()
        tasks = [_hold(gate, c, BULK, log, release) for c in ("a", "b", "c")]  # c's search is the third: it waits
        await _settle()
        tasks.append(_hold(gate, "customer", TURN, log, release))
        await _settle()
        running, waiting = gate.running(), gate.waiting("c")
        release.set()
        await asyncio.gather(*tasks)
        return log, running, waiting

    log, running, waiting = asyncio.run(scenario())
    assert running == {TURN: 1, BULK: 2, EXCLUSIVE: 0}
    assert waiting == 1
    assert log[:3] == ["a:bulk", "b:bulk", "customer:turn"] and log[3] == "c:bulk"


def test_a_turn_waits_only_when_every_slot_runs_a_turn_or_the_bulk_calls_left_it_none():
    async def scenario() -> tuple[int, int, dict[str, int]]:
        gate = FairGate(max_pending=8, wait=60, capacity=2)
        log: list[str] = []
        release = asyncio.Event()
        tasks = [_hold(gate, "x", TURN, log, release), _hold(gate, "y", TURN, log, release)]
        await _settle()
        tasks += [_hold(gate, "z", TURN, log, release), _hold(gate, "w", BULK, log, release)]
        await _settle()
        waiting = gate.waiting("z") + gate.waiting("w")
        running = dict(gate.running())
        release.set()
        await asyncio.gather(*tasks)
        return waiting, len(log), running

    waiting, served, running = asyncio.run(scenario())
    assert running == {TURN: 2, BULK: 0, EXCLUSIVE: 0} and waiting == 2 and served == 4


def test_an_exclusive_call_runs_alone_and_holds_back_the_calls_after_it():
    async def scenario() -> list[str]:
        gate = FairGate(max_pending=8, wait=60, capacity=3)
        events: list[str] = []
        first, second = asyncio.Event(), asyncio.Event()

        async def call(client: str, lane: str, hold: asyncio.Event | None = None) -> None:
            async with gate.turn(client, lane):
                assert gate.running()[EXCLUSIVE] == 0 or sum(gate.running().values()) == 1
                events.append(f"start {client}")
                if hold is not None:
                    await hold.wait()
                events.append(f"end {client}")

        tasks = [asyncio.create_task(call("turn-1", TURN, first)), asyncio.create_task(call("search", BULK, first))]
        await _settle()
        tasks.append(asyncio.create_task(call("writer", EXCLUSIVE, second)))
        await _settle()
        tasks.append(asyncio.create_task(call("turn-2", TURN)))  # a free slot, but the writer waits: it waits too
        await _settle()
        events.append("release first")
        first.set()
        await _settle()
        events.append("release writer")
        second.set()
        await asyncio.gather(*tasks)
        return events

    events = asyncio.run(scenario())
    assert events.index("start writer") > events.index("end turn-1") and events.index("start writer") > events.index(
        "end search")
    assert events.index("start turn-2") > events.index("end writer") > events.index("release writer")


def test_with_one_engine_thread_every_lane_shares_one_slot():
    async def scenario() -> tuple[list[str], dict[str, int]]:
        gate = FairGate(max_pending=8, wait=60, capacity=1)
        log: list[str] = []
        release = asyncio.Event()
        tasks = [_hold(gate, "abuser", BULK, log, release)]
        await _settle()
        tasks.append(_hold(gate, "customer", TURN, log, release))
        await _settle()
        running = dict(gate.running())
        release.set()
        await asyncio.gather(*tasks)
        return log, running

    log, running = asyncio.run(scenario())
    assert sum(running.values()) == 1 and log == ["abuser:bulk", "customer:turn"]


def test_the_engine_threads_setting_is_validated(tmp_path: Path):
    for bad in (0, 17, "2", True, 1.5):
        with pytest.raises(ConfigError, match="engine_threads"):
            ApiSettings(sessions_path=tmp_path / "s.sqlite", engine_threads=bad)
    assert ApiSettings(sessions_path=tmp_path / "s.sqlite").engine_threads == 2


# -- the engine side ---------------------------------------------------------------------------------------------
class _Overlap:
    """Instrumented fake engine calls: counts the calls running at once and notes any exclusive call that was not alone."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.most = 0
        self.violations: list[str] = []

    def call(self, exclusive: bool) -> Callable[[], None]:
        def run() -> None:
            with self.lock:
                self.active += 1
                self.most = max(self.most, self.active)
                if exclusive and self.active != 1:
                    self.violations.append(f"an exclusive call started beside {self.active - 1} others")
            time.sleep(0.002)  # widens the window in which an overlap would show; nothing is timed
            with self.lock:
                if exclusive and self.active != 1:
                    self.violations.append(f"a call started beside an exclusive one ({self.active} running)")
                self.active -= 1

        return run


@pytest.mark.timeout(60)
def test_exclusive_engine_calls_never_overlap_another_call(tmp_path: Path):
    service = EngineService(ApiSettings(sessions_path=tmp_path / "s.sqlite", engine_threads=4))
    probe = _Overlap()
    try:
        futures = [service.submit(probe.call(exclusive=i % 7 == 3), exclusive=i % 7 == 3) for i in range(140)]
        for future in futures:
            future.result()
    finally:
        service.close()
    assert probe.violations == []
    assert probe.most >= 2  # the shared calls did run side by side: the check above had something to catch


@pytest.mark.timeout(60)
def test_an_index_file_swapped_in_is_reloaded_alone_before_the_next_call(tmp_path: Path):
    """A build renamed a new file over the served one: the next call reloads it, after the calls in flight and
    before any other starts (the reload replaces the runtime they use)."""
    service = EngineService(ApiSettings(sessions_path=tmp_path / "s.sqlite", engine_threads=3))
    probe = _Overlap()
    swapped = threading.Event()
    reloads: list[int] = []

    class FakeIndex:
        def replaced_on_disk(self) -> bool:
            return swapped.is_set() and not reloads

    class FakeRuntime:
        index = FakeIndex()

    def reload() -> None:  # stands in for loading the new file; counted as an exclusive call
        probe.call(exclusive=True)()
        reloads.append(1)

    service._runtime = FakeRuntime()
    service._reload_replaced = reload
    try:
        first = [service.submit(probe.call(exclusive=False)) for _ in range(6)]
        swapped.set()
        rest = [service.submit(probe.call(exclusive=False)) for _ in range(30)]
        for future in first + rest:
            future.result()
    finally:
        service._runtime = None
        service.close()
    assert reloads == [1] and probe.violations == []


@pytest.mark.timeout(30)
def test_a_call_sharing_the_runtime_cannot_take_it_exclusively():
    lock = RuntimeLock()
    with lock.shared(), pytest.raises(RuntimeError, match="cannot replace"), lock.exclusive():
        pass
    with lock.exclusive(), lock.shared(), lock.exclusive():  # its exclusive holder may nest both
        assert lock.held_exclusively()
    assert not lock.held_exclusively() and not lock.held_shared()


def _turn_view(result: Any) -> dict[str, Any]:
    return {"reply": result.reply, "kind": str(result.kind), "state": str(result.state), "answer": result.answer_id,
            "options": [(o.number, o.label, getattr(o, "answer_id", None)) for o in result.options or ()],
            "confidence": result.confidence}


class _Counted:
    """Runs calls on the engine threads, counting how many ran at once."""

    def __init__(self, service: EngineService) -> None:
        self.service = service
        self.lock = threading.Lock()
        self.active = 0
        self.most = 0

    def __call__(self, fn: Callable[[], Any]) -> Any:
        def counted() -> Any:
            with self.lock:
                self.active += 1
                self.most = max(self.most, self.active)
            try:
                return fn()
            finally:
                with self.lock:
                    self.active -= 1

        return self.service.submit(counted).result()


def _script_runner(run_call: _Counted, script: list[str]) -> Callable[[], list[dict[str, Any]]]:
    manager = run_call.service.manager

    def run() -> list[dict[str, Any]]:
        sid = run_call(lambda: manager().start_session())
        return [_turn_view(run_call(lambda t=text: manager().handle(session_id=sid, text=t))) for text in script]

    return run


def _search_runner(run_call: _Counted, query: str, mode: str) -> Callable[[], dict[str, Any]]:
    service = run_call.service
    return lambda: run_call(lambda: run_search(service, query=query, size=5, mode=mode).model_dump())


@pytest.fixture(scope="module")
def dense_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return the reliability suite's small index built with the learned ranker's dense vectors and SG phrases."""
    pytest.importorskip("onnxruntime", reason="the learned ranker needs the [dense] extra")
    from reliability_helpers import STRIDE

    from data.builtin import load_builtin_corpus
    from dtdialog.setup.assembly import engine_parser_name
    from index.builder import build_index
    from parsers.base import get_parser

    out = tmp_path_factory.mktemp("lanes-dense") / "answers.sqlite"
    build_index(dialogues=load_builtin_corpus()[::STRIDE], parser=get_parser(engine_parser_name()), backend="sqlite", out=out,
                progress=False, dense=True)
    return out


@pytest.mark.timeout(300)
def test_turns_and_searches_side_by_side_give_what_each_gives_alone(small_index: Path, tmp_path: Path):
    _side_by_side_equals_alone(small_index, "rules", tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_learned_ranker_turns_and_searches_side_by_side_give_what_each_gives_alone(dense_index: Path, tmp_path: Path):
    """The same with the learned ranker: the query encoder (ONNX Runtime), its cache, the SG scorer and its parse thread."""
    _side_by_side_equals_alone(dense_index, "learned", tmp_path)


def _side_by_side_equals_alone(index: Path, ranker: str, tmp_path: Path) -> None:
    service = EngineService(ApiSettings(index_path=index, sessions_path=tmp_path / "s.sqlite", ranker=ranker,
                                        engine_threads=3, **NO_QUOTAS))
    run_call = _Counted(service)
    jobs: dict[str, Callable[[], Any]] = {f"session {i}": _script_runner(run_call, s) for i, s in enumerate(SCRIPTS)}
    jobs |= {f"search {i}": _search_runner(run_call, q, m) for i, (q, m) in enumerate(SEARCHES)}
    try:
        alone = {name: job() for name, job in jobs.items()}  # one call at a time
        assert run_call.most == 1 and service.runtime().ranker == ranker
        together: dict[str, list[Any]] = {name: [] for name in jobs}
        errors: list[BaseException] = []

        def repeat(name: str) -> None:
            try:
                for _ in range(3):
                    together[name].append(jobs[name]())
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=repeat, args=(name,)) for name in jobs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        service.close()
    assert errors == []
    assert run_call.most >= 2  # the calls did run side by side
    for name, results in together.items():
        assert results == [alone[name]] * 3, name


def test_concurrent_posts_to_one_session_keep_its_transcript_whole(make_client):
    client = make_client(engine_threads=3, max_pending=16)
    sid = client.post("/sessions").json()["session_id"]
    texts = [f"{SCRIPTS[i % 4][0]} (message {i})" for i in range(8)]
    replies: dict[str, str] = {}
    errors: list[str] = []

    def post(text: str) -> None:
        r = client.post(f"/sessions/{sid}/messages", json={"text": text})
        if r.status_code == 200:
            replies[text] = r.json()["reply"]
        else:
            errors.append(f"{r.status_code} {r.text[:200]}")

    threads = [threading.Thread(target=post, args=(t,)) for t in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    record = client.get(f"/sessions/{sid}").json()
    transcript = record["transcript"]
    assert [m["role"] for m in transcript] == ["user", "bot"] * len(texts)
    pairs = {transcript[i]["text"]: transcript[i + 1]["text"] for i in range(0, len(transcript), 2)}
    assert pairs == replies  # every turn once, each reply right after the message it answered
    assert sorted(t["turn"] for t in record["traces"]) == list(range(1, len(texts) + 1))
