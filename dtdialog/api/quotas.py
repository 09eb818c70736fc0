"""Per-client quotas, so that one client cannot exhaust the server or stall the other customers.

* **Rates** (``limits``, moving window, in memory): ``POST /sessions``, turns, and ``/search`` + ``/parse``
  each have a per-client rate; over it: 429 ``rate_limited`` with ``Retry-After``.
* **Engine budget**: the engine seconds a client's requests used in the last minute (sliding window);
  a client over ``engine_seconds`` gets 429 ``engine_budget_exceeded`` until enough of it has aged out.
* **A fair turn at the engine** (``fair_gate.FairGate``): the engine runs ``engine_threads`` calls at once, and
  searches, parses and index reads hold at most all but one of them, so a customer's turn never waits
  behind them; when a slot frees, the waiting client that used the engine least recently goes next.
  Index writes, restores and rebuilds run alone. A client may have ``max_pending`` calls waiting
  (429 ``too_many_pending`` beyond), and no call waits longer than ``engine_wait`` (503 ``engine_busy``).
* **Sessions**: at most ``max_sessions`` live sessions (503 ``session_limit_reached``); a session idle for
  ``session_ttl`` expires (404 ``session_expired``) and is purged, at most every ``PURGE_EVERY`` seconds.

A client is its remote address, or its API key when it sends the right one (key holders are the operators:
their calls are not charged to an engine budget). With one server process the quota state lives in it; with
``dtdialog serve --workers N`` the rates and the session cap count across the workers (``shared_quotas``), while
the engine budget and the fair gate stay per process.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

from fastapi import Request

from dtdialog.api.clients import client_id, is_operator
from dtdialog.api.deps import get_service
from dtdialog.api.errors import ApiError
from dtdialog.api.fair_gate import BULK, EXCLUSIVE, FairGate
from dtdialog.api.settings import ApiSettings

log = logging.getLogger("dtdialog.api")
T = TypeVar("T")
#: Expired sessions are looked for at most this often (seconds).
PURGE_EVERY = 600.0
#: Engine time is counted in these units (seconds) against the budget.
BUDGET_UNIT = 0.01
#: A turn with at most this many characters (and no pictures) is cheap: the call a light client may run on the
#: slot kept for light clients. A 4,000-character turn takes the engine ten times as long as a 200-character one.
CHEAP_TURN_CHARS = 500
#: A client refused again within ``REFUSAL_MEMORY_S`` of its last refusal gets the next one after this many seconds:
#: a script that ignores ``Retry-After`` and asks in a loop then asks once a second instead of hundreds of times,
#: each of which costs the server as much as a turn costs the engine.
REFUSAL_DELAY_S = 1.0
REFUSAL_MEMORY_S = 10.0
#: The key all clients' new sessions are counted under for ``global_session_rate``.
ALL_CLIENTS = "all"
_RATE_WHAT = {"session": "new sessions", "turn": "turns", "search": "searches and parses"}
#: The rate kind of all clients' new sessions together (``global_session_rate``).
GLOBAL_SESSION = "global_session"


def bulk_text_limit(request: Request, settings: ApiSettings) -> int | None:
    """Return the text limit of a request that may be long (``/parse``): the turn limit for anonymous clients,
    None (``max_text_chars``) for operators.

    A call cannot be interrupted and holds an engine thread (bulk calls share all but one), so what an
    anonymous client may make it do in one request is bounded to a turn's worth (a 100,000-character parse
    holds a thread for seconds).
    """
    from dtdialog.understanding.intents import MAX_TURN_CHARS

    return None if is_operator(client_id(request, settings)) else min(settings.max_text_chars, MAX_TURN_CHARS)


def _retry_after(reset_time: float) -> dict[str, str]:
    return {"Retry-After": str(max(1, math.ceil(reset_time - time.time())))}


class Quotas:
    """The quotas of one app (rates, engine budget, fair gate, session cap and expiry)."""

    def __init__(self, settings: ApiSettings) -> None:
        self.settings = settings
        self.gate = FairGate(max_pending=settings.max_pending, wait=settings.engine_wait,
                             capacity=settings.engine_threads)
        self._rates: dict[str, list[Any]] = {}
        self._limiter: Any = None
        self._budget: Any = None
        self._budget_item: Any = None
        self._last_purge = 0.0
        self._shared: Any = None  # the rate counters shared by the workers (``dtdialog serve --workers N``)
        # start times of the calls each client has running: their time counts against the budget as it passes
        self._in_flight: dict[str, dict[int, float]] = {}
        self._calls = itertools.count()
        self._refused: dict[str, float] = {}  # when each client was last refused (``refuse``)
        # engine threads run session calls side by side: one purge at a time, and the live-session count and
        # the new session it admits are one step (two creations could otherwise both pass at the cap)
        self._sessions_lock = threading.Lock()
        rates = {kind: getattr(settings, f"{kind}_rate") for kind in _RATE_WHAT}
        rates[GLOBAL_SESSION] = settings.global_session_rate
        if any(rates.values()) or settings.engine_seconds > 0:
            from limits import parse, parse_many
            from limits.storage import MemoryStorage
            from limits.strategies import MovingWindowRateLimiter, SlidingWindowCounterRateLimiter

            storage = MemoryStorage()
            self._limiter = MovingWindowRateLimiter(storage)
            self._rates = {kind: parse_many(rate) for kind, rate in rates.items() if rate}
            if settings.engine_seconds > 0:
                self._budget = SlidingWindowCounterRateLimiter(storage)
                self._budget_item = parse(f"{max(1, round(settings.engine_seconds / BUDGET_UNIT))}/minute")
        if settings.shared_dir is not None and self._rates:
            from dtdialog.api.shared_quotas import SharedRates, longest_window

            self._shared = SharedRates(settings.shared_dir,
                                       longest_window=longest_window(i for v in self._rates.values() for i in v))

    # -- rates and budget (event loop) -------------------------------------------------
    def check_session_rate(self, client: str) -> None:
        """Count one new session of ``client``, and of all clients together; 429 ``rate_limited`` over the client's
        rate, 503 ``server_busy`` over ``global_session_rate`` (every way of starting a session calls this)."""
        self.check_rate("session", client)
        items = self._rates.get(GLOBAL_SESSION)
        if not items:
            return
        over = self._over(GLOBAL_SESSION, ALL_CLIENTS, items)
        if over is not None:
            raise ApiError(503, "server_busy", f"the server is starting too many new conversations (the limit is "
                           f"{over[0]} for all clients); the ones going on are served first; retry shortly",
                           headers=_retry_after(over[1]))

    def _over(self, kind: str, client: str, items: list[Any]) -> tuple[Any, float] | None:
        """Count one ``kind`` hit of ``client`` unless over one of ``items``; return (the item, its reset time) then."""
        if self._shared is not None:
            return self._shared.hit(kind, client, items)
        for item in items:
            if not self._limiter.test(item, kind, client):
                return item, self._limiter.get_window_stats(item, kind, client).reset_time
        for item in items:
            self._limiter.hit(item, kind, client)
        return None

    def check_rate(self, kind: str, client: str) -> None:
        """Count one ``kind`` request of ``client``; 429 ``rate_limited`` when it is over one of its rates."""
        items = self._rates.get(kind)
        if not items:
            return
        over = self._over(kind, client, items)
        if over is not None:
            raise ApiError(429, "rate_limited", f"too many {_RATE_WHAT[kind]} from this client (the limit is "
                           f"{over[0]}); retry later", headers=_retry_after(over[1]))

    def check_budget(self, client: str) -> None:
        """429 ``engine_budget_exceeded`` when ``client`` used up its engine seconds of the last minute, counting
        the time its calls running now have taken so far."""
        if self._budget is None or is_operator(client):
            return
        stats = self._budget.get_window_stats(self._budget_item, "engine", client)
        now = time.perf_counter()
        running = sum(now - start for start in list(self._in_flight.get(client, {}).values()))
        if stats.remaining - math.ceil(running / BUDGET_UNIT) < 1:
            raise ApiError(429, "engine_budget_exceeded", f"this client used its {self.settings.engine_seconds:g} "
                           "engine seconds of the last minute; retry later", headers=_retry_after(stats.reset_time))

    def charge(self, client: str, seconds: float) -> None:
        """Count ``seconds`` of engine time against ``client``'s budget and its place in the fair order."""
        self.gate.record(client, seconds)
        if self._budget is None or is_operator(client):
            return
        # ``limits`` refuses (and does not count) a hit larger than what is left: charge at most that, which
        # leaves the client at its limit until the window moves on
        left = self._budget.get_window_stats(self._budget_item, "engine", client).remaining
        cost = min(left, max(1, math.ceil(seconds / BUDGET_UNIT)))
        if cost > 0:
            self._budget.hit(self._budget_item, "engine", client, cost=cost)

    async def refuse(self, client: str, error: ApiError) -> None:
        """Raise ``error`` (a refusal), after ``REFUSAL_DELAY_S`` when ``client`` was refused moments ago too."""
        now = time.monotonic()
        last = self._refused.get(client)
        self._refused[client] = now
        if len(self._refused) > 10_000:  # forget the clients refused long ago
            self._refused = {c: t for c, t in self._refused.items() if now - t < REFUSAL_MEMORY_S}
        if last is not None and now - last < REFUSAL_MEMORY_S:
            await asyncio.sleep(REFUSAL_DELAY_S)
        raise error

    async def run(self, request: Request, fn: Callable[[], T], *, lane: str = BULK, cheap: bool = False) -> T:
        """Return ``fn()`` computed on an engine thread, within ``request``'s client's budget and fair turn.

        ``lane``: ``TURN`` for a customer's session calls, ``BULK`` for searches, parses and index reads,
        ``EXCLUSIVE`` for what replaces or mutates the runtime (it also runs alone on the engine side).
        ``cheap``: short work, such as a short turn (``is_cheap_turn``), that may use the slot kept for light clients.
        """
        service = get_service(request)
        client = client_id(request, self.settings)
        try:
            self.check_budget(client)
        except ApiError as refused:
            await self.refuse(client, refused)
        spent = [0.0]
        call = next(self._calls)

        def timed() -> T:
            start = time.perf_counter()
            if not loading:
                self._in_flight.setdefault(client, {})[call] = start
            try:
                return fn()
            finally:
                spent[0] = time.perf_counter() - start
                self._end_call(client, call)

        async with self.gate.turn(client, lane, cheap=cheap):
            self.check_budget(client)  # again: the calls it waited behind may have spent the budget meanwhile
            loading = not service.loaded  # loading the engine is not the first customer's doing
            try:
                return await service.call(timed, exclusive=lane == EXCLUSIVE)
            finally:
                self._end_call(client, call)
                if not loading:
                    self.charge(client, spent[0])

    def _end_call(self, client: str, call: int) -> None:
        calls = self._in_flight.get(client)
        if calls is not None:
            calls.pop(call, None)
            if not calls:
                self._in_flight.pop(client, None)

    # -- sessions (engine thread) --------------------------------------------------------
    def purge_due(self, store: Any) -> int:
        """Purge the expired sessions of ``store`` when the last purge is ``PURGE_EVERY`` old; return how many went."""
        ttl = self.settings.session_ttl
        now = time.time()
        with self._sessions_lock:
            if not ttl or now - self._last_purge < PURGE_EVERY:
                return 0
            self._last_purge = now
        purged = store.purge(updated_before=now - ttl)
        if purged:
            log.info("purged %d sessions idle for more than %.0f s", purged, ttl)
        return purged

    def _check_live(self, store: Any) -> None:
        ttl = self.settings.session_ttl
        live = store.count(updated_since=time.time() - ttl if ttl else None)
        if live >= self.settings.max_sessions:
            raise ApiError(503, "session_limit_reached", f"the server holds its maximum of "
                           f"{self.settings.max_sessions} live sessions; try again later",
                           headers={"Retry-After": "60"})

    def start_session(self, manager: Any, session_id: str | None = None) -> str:
        """Return the id of a new session of ``manager`` (``session_id``, else a fresh one), admitted under
        ``max_sessions`` (see ``admit_session``)."""
        self.purge_due(manager.store)
        with self._sessions_lock, self._admission():
            self._check_live(manager.store)
            return manager.start_session(session_id)

    def _admission(self) -> AbstractContextManager[None]:
        """Return the lock that makes the count and the creation one step across the workers (one process: none)."""
        if self.settings.shared_dir is None:
            return nullcontext()
        from dtdialog.api.shared_quotas import admission_lock

        return admission_lock(self.settings.shared_dir, timeout=self.settings.engine_wait)

    def expired(self, record: Any) -> bool:
        """Return True when the session ``record`` has been idle longer than ``session_ttl``."""
        ttl = self.settings.session_ttl
        return bool(ttl) and float(getattr(record, "updated", 0.0) or 0.0) < time.time() - ttl


def is_cheap_turn(text: Any, *, explain: bool = False) -> bool:
    """Return True for a turn short enough to be cheap work (see ``CHEAP_TURN_CHARS``); pictures never are."""
    return not explain and isinstance(text, str) and len(text) <= CHEAP_TURN_CHARS


def get_quotas(request: Request) -> Quotas:
    """Return the quotas of the app serving ``request``."""
    return request.app.state.quotas


def rate_limit(kind: str) -> Callable[[Request], Any]:
    """Return a route dependency that counts the request against the client's ``kind`` rate."""

    async def check(request: Request) -> None:
        quotas = get_quotas(request)
        client = client_id(request, quotas.settings)
        try:
            if kind == "session":
                quotas.check_session_rate(client)
            else:
                quotas.check_rate(kind, client)
        except ApiError as refused:
            await quotas.refuse(client, refused)

    return check
