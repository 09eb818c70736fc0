"""The fair gate in front of the engine: which waiting call runs next, and which may not run yet.

The engine runs ``capacity`` calls at once. Every call has a lane (turn, bulk, exclusive); bulk calls hold at most
all slots but one; one slot is kept for light clients' cheap calls; a client other than an operator runs at most
``per_client`` calls at once; when a slot frees, the waiting client that used the engine least recently goes next.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from dtdialog.api.clients import is_operator
from dtdialog.api.errors import ApiError

#: How fast a client's recent engine use is forgotten when choosing who goes next (half-life, seconds).
USAGE_HALF_LIFE = 30.0
#: A client whose recent engine use (``FairGate.usage``) is below this many seconds is light: a customer chatting
#: uses well under one second; a client using its whole engine budget is at about seven.
LIGHT_USAGE_S = 2.0

#: The gate's lanes. A turn (session create, read, message) may take any free slot; a bulk call (search, parse,
#: index reads) at most ``capacity - 1`` of them, so one slot stays for turns; an exclusive call (what replaces
#: or mutates the runtime) runs alone.
TURN, BULK, EXCLUSIVE = "turn", "bulk", "exclusive"
LANES = (TURN, BULK, EXCLUSIVE)


class FairGate:
    """Lets up to ``capacity`` engine calls run at once and picks the next among the waiting clients by least recent use.

    Every call has a lane (``TURN``, ``BULK``, ``EXCLUSIVE``). Bulk calls hold at most ``capacity - 1`` slots (at
    least one); an exclusive call starts when nothing runs, and from the moment one waits no other call starts
    (writer preference: a steady stream of turns cannot starve an index write). With ``capacity`` 1 every lane
    is the same one shared lane: one call at a time, as the gate was before it had lanes.

    With ``capacity`` 2 or more, one slot is kept for the cheap calls of light clients (recent use under
    ``light_usage`` engine seconds): a short turn of a chatting customer. Every other call (a long or explained
    turn, a search, a client that keeps the engine busy, however many addresses it comes from) shares the other
    slots, so a customer's short turn waits at most for one other short call. And a client other than an
    operator runs at most ``per_client`` calls at once (default: all slots but one).
    """

    def __init__(self, *, max_pending: int, wait: float, capacity: int = 1, per_client: int | None = None,
                 light_usage: float = LIGHT_USAGE_S) -> None:
        if not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"capacity must be a positive integer, got {capacity!r}")
        self.max_pending = max_pending
        self.wait = wait
        self.capacity = capacity
        self.per_client = max(1, capacity - 1) if per_client is None else per_client
        self.light_usage = light_usage
        self._running = dict.fromkeys(LANES, 0)
        self._by_client: dict[str, int] = {}
        self._others = 0  # running calls other than light clients' cheap ones
        self._exclusive_waiting = 0
        self._queues: dict[str, deque[tuple[int, asyncio.Future[bool], str, bool]]] = {}
        self._usage: dict[str, tuple[float, float]] = {}
        self._order = itertools.count()

    @property
    def bulk_slots(self) -> int:
        """Return how many calls of the bulk lane may run at once."""
        return max(1, self.capacity - 1)

    def running(self) -> dict[str, int]:
        """Return how many calls of each lane run now."""
        return dict(self._running)

    def usage(self, client: str, now: float | None = None) -> float:
        """Return the client's recent engine seconds, halved every ``USAGE_HALF_LIFE`` seconds."""
        value, at = self._usage.get(client, (0.0, 0.0))
        now = time.monotonic() if now is None else now
        return value * 0.5 ** ((now - at) / USAGE_HALF_LIFE)

    def record(self, client: str, seconds: float) -> None:
        """Add ``seconds`` of engine use to ``client``."""
        now = time.monotonic()
        self._usage[client] = (self.usage(client, now) + seconds, now)
        if len(self._usage) > 10_000:  # forget clients whose use has decayed away
            self._usage = {c: v for c, v in self._usage.items() if self.usage(c, now) > 0.001}

    def waiting(self, client: str) -> int:
        """Return how many calls of ``client`` wait for the engine."""
        return len(self._queues.get(client, ()))

    def running_for(self, client: str) -> int:
        """Return how many calls of ``client`` run now."""
        return self._by_client.get(client, 0)

    @asynccontextmanager
    async def turn(self, client: str, lane: str = BULK, *, cheap: bool = False) -> AsyncIterator[None]:
        """Wait until ``client``'s call of ``lane`` may use the engine; release its slot on exit. ``cheap``: the
        call is short work (it may take the slot kept for light clients)."""
        kept = await self._acquire(client, lane, cheap=cheap)
        try:
            yield
        finally:
            self._release(client, lane, kept=kept)

    def _lane(self, lane: str) -> str:
        if lane not in LANES:
            raise ValueError(f"unknown lane {lane!r}")
        return BULK if self.capacity == 1 else lane  # one shared lane: every call alike

    def _admissible(self, lane: str, client: str, cheap: bool = False, now: float | None = None) -> bool:
        busy = sum(self._running.values())
        if self._running[EXCLUSIVE]:
            return False
        if lane == EXCLUSIVE:
            return busy == 0
        if busy >= self.capacity or self._exclusive_waiting:
            return False
        if not is_operator(client) and self._by_client.get(client, 0) >= self.per_client:
            return False
        if not self._keeps_slot(client, cheap, now) and self._others >= self.capacity - 1:
            return False  # the last slot is kept for light clients' cheap calls
        return lane == TURN or self._running[BULK] < self.bulk_slots

    def _keeps_slot(self, client: str, cheap: bool, now: float | None = None) -> bool:
        """Return True for a call that may run on the slot kept for light clients."""
        return self.capacity == 1 or (cheap and self.usage(client, now) < self.light_usage)

    def _take(self, client: str, lane: str, cheap: bool = False) -> bool:
        """Count a call of ``client`` as running; return whether it is one of the calls the kept slot is for."""
        self._running[lane] += 1
        self._by_client[client] = self._by_client.get(client, 0) + 1
        kept = self._keeps_slot(client, cheap)
        self._others += not kept
        return kept

    async def _acquire(self, client: str, lane: str = BULK, *, cheap: bool = False) -> bool:
        """Wait for a slot; return whether the call runs as a light client's cheap call (give it to ``_release``)."""
        lane = self._lane(lane)
        if self._admissible(lane, client, cheap):  # nothing waiting could take this slot (``_dispatch`` ran at every change)
            return self._take(client, lane, cheap)
        queue = self._queues.setdefault(client, deque())
        if len(queue) >= self.max_pending:
            raise ApiError(429, "too_many_pending", f"this client already has {len(queue)} requests waiting for the "
                           "engine; wait for their answers first", headers={"Retry-After": "1"})
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        entry = (next(self._order), future, lane, cheap)
        queue.append(entry)
        self._exclusive_waiting += lane == EXCLUSIVE
        try:
            # asyncio.wait, not wait_for: wait_for may swallow the task's cancellation when the engine is handed
            # over at the same moment (Python < 3.12), and a request cancelled at shutdown would then go on to the
            # engine, never to be answered (the connection closed without a 503)
            await asyncio.wait((future,), timeout=self.wait)
        except BaseException:
            self._give_up(client, entry)
            raise
        if not future.done():
            self._give_up(client, entry)
            raise ApiError(503, "engine_busy", f"the engine stayed busy for {self.wait:g} s; try again shortly",
                           headers={"Retry-After": "5"})
        return future.result()

    def _give_up(self, client: str, entry: tuple[int, asyncio.Future[bool], str, bool]) -> None:
        future = entry[1]
        if future.done() and not future.cancelled():
            # the slot was handed over just as this request gave up: pass it on
            self._release(client, entry[2], kept=future.result())
        else:
            future.cancel()
            self._forget(client, entry)
            self._dispatch()  # an exclusive call that gave up no longer holds the others back

    def _forget(self, client: str, entry: tuple[int, asyncio.Future[bool], str, bool]) -> None:
        queue = self._queues.get(client)
        if queue is not None and entry in queue:
            queue.remove(entry)
            self._exclusive_waiting -= entry[2] == EXCLUSIVE
            if not queue:
                del self._queues[client]

    def _release(self, client: str, lane: str = BULK, *, kept: bool = False) -> None:
        self._running[self._lane(lane)] -= 1
        self._others -= not kept
        left = self._by_client.get(client, 0) - 1
        if left > 0:
            self._by_client[client] = left
        else:
            self._by_client.pop(client, None)
        self._dispatch()

    def _dispatch(self) -> None:
        """Hand free slots to waiting calls: among each client's first call that may start now, the least-used
        client's (then the oldest) goes first."""
        now = time.monotonic()
        while True:
            ready = [(self.usage(client, now), entry[0], client, entry) for client, queue in self._queues.items()
                     for entry in (next((e for e in queue if self._admissible(e[2], client, e[3], now)), None),)
                     if entry is not None]
            if not ready:
                return
            _, _, client, entry = min(ready)
            self._forget(client, entry)
            if not entry[1].done():
                entry[1].set_result(self._take(client, entry[2], entry[3]))  # handed over: the slot stays taken
