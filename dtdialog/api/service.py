"""The engine behind the API: one ``dtdialog.setup.assembly`` engine per app (parser, index, selector, manager), loaded on first use.

Engine calls run on ``ApiSettings.engine_threads`` daemon worker threads (``EnginePool``), so a customer's turn
need not wait for another client's search in flight (``fair_gate.FairGate`` keeps one of them for turns). The
runtime is shared by all of them under a ``RuntimeLock``: ordinary calls hold it shared; what replaces or
mutates the runtime (index writes, restore, rebuild, ``refresh_selector``, ``replace_runtime``, reloading an
index file a build swapped in) holds it alone. Why each engine part is safe to share is in docs/api.md
("Sessions and concurrency").
"""

from __future__ import annotations

import asyncio
import functools
import logging
import queue
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from concurrent.futures import TimeoutError as FuturesTimeout
from contextlib import contextmanager
from typing import Any, TypeVar

from dtdialog.api.errors import ApiError, scrub_paths
from dtdialog.api.readiness import ReadinessProbe
from dtdialog.api.settings import ApiSettings
from parsers.errors import DTDialogError, StorageError

log = logging.getLogger("dtdialog.api")
T = TypeVar("T")


#: Seconds ``close`` waits for the engine calls in flight before giving up on them (shutdown stays bounded).
CLOSE_TIMEOUT_S = 3.0
#: Seconds before a replaced index file that failed to load is tried again.
RELOAD_RETRY_S = 60.0
#: Seconds before a failed start-up load is tried again (when ``/readyz`` is asked).
WARM_UP_RETRY_S = 10.0


class RuntimeLock:
    """A readers-writer lock over the loaded runtime: engine calls share it, replacing or mutating calls hold it alone.

    Writer-preferring: once an exclusive call waits, no new shared call starts, so a rebuild or an index write
    is not starved by a steady stream of turns. Re-entrant for its exclusive holder (an exclusive call may make
    shared or exclusive calls of its own); a thread that holds it shared and asks for it exclusively gets a
    ``RuntimeError`` at once instead of a deadlock with itself.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared: Counter[int] = Counter()  # thread id -> shared holds
        self._writer: int | None = None
        self._depth = 0
        self._writers_waiting = 0

    def held_exclusively(self) -> bool:
        """Return True when the calling thread holds the lock exclusively."""
        return self._writer == threading.get_ident()

    def held_shared(self) -> bool:
        """Return True when the calling thread holds the lock shared."""
        return threading.get_ident() in self._shared

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Hold the lock shared (a no-op for its exclusive holder)."""
        me = threading.get_ident()
        if self._writer == me:
            yield
            return
        with self._cond:
            self._cond.wait_for(lambda: self._writer is None and not self._writers_waiting)
            self._shared[me] += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared[me] -= 1
                if not self._shared[me]:
                    del self._shared[me]
                self._cond.notify_all()

    @contextmanager
    def exclusive(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the lock alone: wait for the shared holders to finish; ``TimeoutError`` after ``timeout`` seconds."""
        me = threading.get_ident()
        with self._cond:
            if self._writer != me:
                if me in self._shared:
                    raise RuntimeError("an engine call that shares the runtime cannot replace it")
                self._writers_waiting += 1
                try:
                    free = self._cond.wait_for(lambda: self._writer is None and not self._shared, timeout)
                finally:
                    self._writers_waiting -= 1
                if not free:
                    self._cond.notify_all()  # shared callers held back for this writer may go on
                    raise TimeoutError("the engine calls in flight did not finish")
                self._writer = me
            self._depth += 1
        try:
            yield
        finally:
            with self._cond:
                self._depth -= 1
                if not self._depth:
                    self._writer = None
                    self._cond.notify_all()


class EnginePool(Executor):
    """``threads`` daemon worker threads running the submitted calls from one queue; it knows how long each has run.

    Daemon threads, unlike ``ThreadPoolExecutor``'s workers (joined at interpreter exit): an engine call
    that never returns cannot keep the process alive after shutdown. A call whose future was cancelled
    before it started (its client gone, or shutdown) is skipped.
    """

    def __init__(self, name: str, threads: int = 1) -> None:
        self._queue: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = queue.SimpleQueue()
        self._started: dict[int, float] = {}
        self._threads = [threading.Thread(target=self._work, args=(i,), name=f"{name}-{i}", daemon=True)
                         for i in range(threads)]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        self._queue.put((future, functools.partial(fn, *args, **kwargs)))
        return future

    def busy_seconds(self) -> float:
        """Return how long the longest call in progress has been running (0.0 when all threads are idle)."""
        started = list(self._started.values())
        return time.monotonic() - min(started) if started else 0.0

    def _work(self, worker: int) -> None:
        while (item := self._queue.get()) is not None:
            future, call = item
            if not future.set_running_or_notify_cancel():
                continue
            self._started[worker] = time.monotonic()
            try:
                future.set_result(call())
            except BaseException as exc:  # handed to the caller through the future
                future.set_exception(exc)
            finally:
                self._started.pop(worker, None)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        for _ in self._threads:
            self._queue.put(None)
        if wait:
            for thread in self._threads:
                thread.join()


class EngineService:
    """Owns the engine objects of one app and the threads they run on."""

    def __init__(self, settings: ApiSettings) -> None:
        self.settings = settings
        self._executor: EnginePool | None = None
        self._executor_lock = threading.Lock()
        self.runtime_lock = RuntimeLock()
        # the first load (or parser) is made once even when two engine threads ask for it at the same time
        self._load_lock = threading.RLock()
        self._parser: Any = None
        self._runtime: Any = None
        self._retry_reload_at = 0.0
        # the index generation the selector's caches were made from (see ``_refresh_if_written``)
        self._generation: str | None = None
        # the start-up load running in the background (``start_warm_up``), and why it failed (one line)
        self._warming: Future[None] | None = None
        self.warm_up_problem: str | None = None
        self._retry_warm_up_at = 0.0
        self.readiness = ReadinessProbe(self)

    # -- threading -------------------------------------------------------
    def _pool(self) -> EnginePool:
        with self._executor_lock:
            if self._executor is None:
                self._executor = EnginePool("dtdialog-engine", self.settings.engine_threads)
            return self._executor

    def _guarded(self, fn: Callable[[], T], exclusive: bool) -> Callable[[], T]:
        """Return ``fn`` run under the runtime lock (alone when ``exclusive``), after loading a swapped index file."""

        def run() -> T:
            if not exclusive:
                self._reload_if_replaced()  # exclusively, before this call shares the runtime it replaces
                self._refresh_if_written()
            with self.runtime_lock.exclusive() if exclusive else self.runtime_lock.shared():
                return fn()

        return run

    async def call(self, fn: Callable[..., T], *, exclusive: bool = False, **kwargs: Any) -> T:
        """Return ``fn(**kwargs)`` computed on an engine thread (``exclusive``: with no other engine call running)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool(), self._guarded(functools.partial(fn, **kwargs), exclusive))

    def submit(self, fn: Callable[..., T], *, exclusive: bool = False, **kwargs: Any) -> Future[T]:
        """Queue ``fn(**kwargs)`` on an engine thread from synchronous code; return its future."""
        return self._pool().submit(self._guarded(functools.partial(fn, **kwargs), exclusive))

    def close(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """Wait (at most ``timeout`` seconds in all) for the engine calls in flight, then release the index and the
        session store.

        An engine call still running after that is abandoned (its thread is a daemon): shutting down
        never hangs on it, and SQLite's journal undoes any write it had not committed.
        """
        with self._executor_lock:
            executor, self._executor = self._executor, None
        if executor is None:
            return
        deadline = time.monotonic() + timeout
        try:
            executor.submit(self._close_resources, deadline).result(timeout=timeout)
        except (FuturesTimeout, TimeoutError):
            log.error("an engine call was still running after %.0f s; shutting down without waiting for it", timeout)
        executor.shutdown(wait=False)

    def stall_problem(self) -> str | None:
        """Return why this process's engine is stuck (one call has run for longer than
        ``settings.health_stall_seconds``), else None: the liveness check, it touches no file."""
        executor = self._executor
        busy = executor.busy_seconds() if executor is not None else 0.0  # the longest-running call of any thread
        # a start-up load may build the index for minutes: that is "loading" (``loading``), not a stalled engine
        if busy > self.settings.health_stall_seconds and not self.loading:
            return f"an engine call has been running for {busy:.0f} s"
        return None

    def runtime_if_loaded(self) -> Any:
        """Return the loaded ``Engine``, or None before the first load (never loads it)."""
        return self._runtime

    def retry_warm_up(self) -> None:
        """Start the start-up load again when it failed ``WARM_UP_RETRY_S`` or more ago: the fault (a locked or
        damaged index) may be gone, and a load balancer sends no request that would load the engine meanwhile."""
        if (self.warm_up_problem is not None and not self.loaded and not self.loading
                and time.monotonic() >= self._retry_warm_up_at):
            self.start_warm_up()

    @property
    def loading(self) -> bool:
        """Return True while the start-up load of ``start_warm_up`` is running."""
        return self._warming is not None and not self._warming.done()

    @property
    def ready(self) -> bool:
        """Return True when a request need not wait for a start-up load: none is running, and the engine is loaded
        or was never asked to load at start-up (``dtdialog serve --lazy``: the first request loads it)."""
        return not self.loading and (self.loaded or self.warm_up_problem is None)

    def start_warm_up(self) -> None:
        """Start ``warm_up`` on an engine thread and return at once: the port opens while the engine loads.

        A problem is logged as one line and kept in ``warm_up_problem`` (``/healthz`` shows it); requests then try
        the load again and answer 503 ``engine_unavailable`` while it fails.
        """
        if self.loaded or self.loading:
            return
        self.warm_up_problem = None
        started = time.monotonic()

        def warm() -> None:
            # the problem is kept before the future completes: ``ready`` never sees a done load without it
            try:
                self.warm_up()
            except Exception as exc:
                problem = str(exc) if isinstance(exc, DTDialogError) else f"{type(exc).__name__}: {exc}"
                self.warm_up_problem = scrub_paths(problem)
                self._retry_warm_up_at = time.monotonic() + WARM_UP_RETRY_S
                # a bug (not a bad index or backend) keeps its traceback in the log
                log.error("cannot load the engine: %s", problem, exc_info=not isinstance(exc, DTDialogError))
            else:
                log.info("engine ready after %.1f s", time.monotonic() - started)

        self._warming = self.submit(warm)

    def _close_resources(self, deadline: float) -> None:
        # alone: no engine call may be using the index or the store being closed
        with self.runtime_lock.exclusive(timeout=max(0.0, deadline - time.monotonic())):
            engine, self._runtime = self._runtime, None
            try:
                if engine is not None:
                    engine.close()
            except Exception:  # closing is best effort at shutdown
                log.warning("error while closing the engine", exc_info=True)

    # -- engine objects (call these on an engine thread) ------------------
    @property
    def loaded(self) -> bool:
        """Return True once the index and selector are loaded."""
        return self._runtime is not None

    def parser(self) -> Any:
        """Return the engine's RST parser, the one its index and ranker read and ``POST /parse`` runs (loads spaCy on
        first use)."""
        if self._parser is None:
            with self._load_lock:
                if self._parser is None:
                    if self._runtime is not None:
                        self._parser = self._runtime.parser
                    else:
                        from dtdialog.setup.assembly import engine_parser_name
                        from parsers.base import get_parser

                        self._parser = get_parser(engine_parser_name(self.settings.engine.parser))
        return self._parser

    def engine_spec(self, *, index_path=None):
        """Return the settings' ``EngineSpec`` (``index_path``: a freshly rebuilt index file to open instead)."""
        from dataclasses import replace

        if index_path is None:
            return self.settings.engine
        return replace(self.settings.engine, backend="sqlite", index_path=str(index_path), index_url=None,
                       corpus=None, corpus_format="builtin", corpus_digest=None)

    def profile(self) -> Any:
        """Return the ``Profile`` the served bot speaks: the loaded engine's, else read without loading the engine
        (the chat page asks for it first, and must not wait for spaCy and the ranker)."""
        runtime = self._runtime
        if runtime is not None:
            return runtime.profile
        from dtdialog.setup.profile import resolve_profile

        spec, index = self.settings.engine, self.settings.index_path
        info: dict[str, Any] = {}
        if spec.backend == "sqlite" and index is not None and spec.corpus is None and index.is_file():
            info = _index_info(index)
        return resolve_profile(path=spec.profile, info=info, builtin=index is None and spec.corpus is None)

    def build_engine(self, *, index_path=None) -> Any:
        """Return a new ``Engine`` built from the settings (see ``engine_spec``), sharing the loaded parser."""
        from dtdialog.runtime.gc_tuning import freeze_loaded
        from dtdialog.setup.assembly import build_engine

        engine = build_engine(self.engine_spec(index_path=index_path), progress=False, parser=self.parser())
        freeze_loaded()
        return engine

    def load(self) -> Any:
        """Return the ``Engine`` (parser, index, selector, manager), loading or building the index on first use.

        A problem raises its ``DTDialogError`` (``dtdialog serve --preload`` prints it as one line). A call that
        shares the runtime never replaces it here: ``call`` reloads a swapped index file before such a call starts.
        """
        if self._runtime is None:
            with self._load_lock:
                if self._runtime is None:
                    self._runtime = self.build_engine()
                    self._generation = self._index_generation(self._runtime)
                    self.warm_up_problem = None  # a later load succeeded: the start-up problem is over
                    log.info("engine loaded: %s index with %d answers", self.settings.backend,
                             self._runtime.index.count())
        elif not self.runtime_lock.held_shared():
            self._reload_if_replaced()
        return self._runtime

    def _reload_if_replaced(self) -> None:
        """Load the index file a build swapped in, with no other engine call running (see ``_reload_replaced``)."""
        def due(runtime: Any) -> bool:
            return runtime is not None and time.monotonic() >= self._retry_reload_at and runtime.index.replaced_on_disk()

        runtime = self._runtime
        if not due(runtime):
            return
        with self.runtime_lock.exclusive():
            # asked again: another engine thread may have reloaded it (or failed to) while this one waited
            if self._runtime is runtime and due(runtime):
                self._reload_replaced()

    @staticmethod
    def _index_generation(runtime: Any) -> str | None:
        """Return the generation of ``runtime``'s SQLite index (None for other backends: not followed)."""
        if runtime is None or getattr(runtime.index, "backend", "") != "sqlite":
            return None
        return runtime.index.generation()

    def _refresh_if_written(self) -> None:
        """Refresh the selector when another process wrote the index since its caches were made.

        Another worker of ``dtdialog serve --workers N`` answered ``POST /index/documents``: the new rows are in
        the shared file at once, but this process's dense vectors, SG phrases and cached DT analyses are not.
        The index's ``generation`` (a new random token at every write) says so: one key lookup per call.
        """
        runtime = self._runtime
        if runtime is None or self._generation is None or self._index_generation(runtime) == self._generation:
            return
        with self.runtime_lock.exclusive():
            # asked again: another engine thread may have refreshed while this one waited
            if self._runtime is runtime and self._index_generation(runtime) != self._generation:
                log.info("the index was written by another process: refreshing this worker's caches")
                self.refresh_selector()

    def note_index_written(self) -> None:
        """Take the index's new generation as this process's own write, one its caches need not be redone for."""
        with self.runtime_lock.exclusive():
            self._generation = self._index_generation(self._runtime)

    def _reload_replaced(self) -> None:
        """Load the index a build renamed over the served file (``dtdialog index build --out`` while serving).

        Without this the server would go on serving the old file's snapshot and write API answers into the new
        one. A new file that cannot be loaded is logged, the old one stays served, and it is tried again later.
        """
        from pathlib import Path

        location = Path(self._runtime.index_location)
        try:
            fresh = self.build_engine(index_path=location)
        except DTDialogError as exc:
            self._retry_reload_at = time.monotonic() + RELOAD_RETRY_S
            log.error("the index file %s was replaced but cannot be loaded (still serving the old one): %s",
                      location, exc)
            return
        self.replace_runtime(fresh)
        log.warning("the index file %s was replaced by a build: now serving it (%d answers)", location,
                    fresh.index.count())

    def runtime(self) -> Any:
        """Return the loaded ``Engine`` (see ``load``); a problem loading it is a 503 ``engine_unavailable``."""
        try:
            return self.load()
        except StorageError:
            raise  # a disk or lock fault keeps its own status (507, 503) and code
        except DTDialogError as exc:
            # A server-side problem (bad index file, unreachable backend), not the client's input.
            log.error("cannot load the engine: %s", exc)
            raise ApiError(503, "engine_unavailable", "the answer index cannot be loaded: " + scrub_paths(str(exc))) from None

    def manager(self) -> Any:
        """Return the ``DialogueManager`` whose sessions live in the SQLite file ``settings.sessions_path``."""
        return self.runtime().manager

    def warm_up(self) -> None:
        """Load everything and run one search, so the first customer does not wait for spaCy and caches to load.

        Raises the loading problem's ``DTDialogError`` (not an HTTP error): it runs before serving.
        """
        self.load().selector.rank(question="It does not work any more, but the part is new.", size=1)

    def ranks_with_vectors(self) -> bool:
        """Return True when the loaded engine ranks with the learned ranker (dense vectors beside the index)."""
        return self._runtime is not None and self._runtime.ranker == "learned"

    def refresh_selector(self) -> None:
        """Give the engine a new selector (empty caches), after stored answers were replaced under the same ids.

        The ranking is rebuilt too: the learned ranker's dense vectors are refreshed for the changed answers.
        Runs with no other engine call in flight (``runtime_lock``).
        """
        with self.runtime_lock.exclusive():
            runtime = self.runtime()
            generation = self._index_generation(runtime)  # read first: a write landing during the refresh is seen later
            runtime.refresh(progress=False)
            self._generation = generation

    def replace_runtime(self, runtime: Any) -> None:
        """Swap in a freshly built engine (None: unload), closing the old one's index and session store.

        Runs with no other engine call in flight (``runtime_lock``): none may be using what is closed.
        """
        with self.runtime_lock.exclusive():
            old, self._runtime = self._runtime, runtime
            self._generation = self._index_generation(runtime)
            if old is None:
                return
            if old.store is not None:
                old.store.close()
            if runtime is None or old.index is not runtime.index:
                old.index.close()


def _index_info(path: Any) -> dict[str, Any]:
    """Return the build information of the SQLite index at ``path`` ({} when it cannot be read: the engine's load
    reports that problem itself)."""
    from index.sqlite_index import SqliteIndex

    try:
        index = SqliteIndex(path, readonly=True)
    except (DTDialogError, OSError, sqlite3.Error):
        return {}
    try:
        return index.info()
    except (DTDialogError, OSError, sqlite3.Error):
        return {}
    finally:
        index.close()
