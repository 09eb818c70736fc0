"""The engine behind the API: one ``dtdialog.assembly`` engine per app (parser, index, selector, manager), loaded on first use.

Every engine call runs on one dedicated worker thread. The parser, the index
and the session store hold SQLite connections and spaCy pipelines that are not
meant to be shared between threads, and on the 2-core machines this runs on
one engine thread is as fast as several; it also makes turns of different
sessions strictly sequential, so they cannot interleave.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from concurrent.futures import TimeoutError as FuturesTimeout
from typing import Any, TypeVar

from dtdialog.api.errors import ApiError, scrub_paths
from dtdialog.api.settings import ApiSettings
from parsers.errors import DTDialogError, StorageError

log = logging.getLogger("dtdialog.api")
T = TypeVar("T")


#: Seconds ``close`` waits for the engine call in flight before giving up on it (shutdown stays bounded).
CLOSE_TIMEOUT_S = 3.0
#: Seconds before a replaced index file that failed to load is tried again.
RELOAD_RETRY_S = 60.0


class EngineThread(Executor):
    """One daemon worker thread running the submitted calls in order; it knows how long the current one has run.

    A daemon thread, unlike ``ThreadPoolExecutor``'s workers (joined at interpreter exit): an engine call
    that never returns cannot keep the process alive after shutdown. A call whose future was cancelled
    before it started (its client gone, or shutdown) is skipped.
    """

    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = queue.SimpleQueue()
        self._started: float | None = None
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        self._queue.put((future, functools.partial(fn, *args, **kwargs)))
        return future

    def busy_seconds(self) -> float:
        """Return how long the call in progress has been running (0.0 when idle)."""
        started = self._started
        return 0.0 if started is None else time.monotonic() - started

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            future, call = item
            if not future.set_running_or_notify_cancel():
                continue
            self._started = time.monotonic()
            try:
                future.set_result(call())
            except BaseException as exc:  # handed to the caller through the future
                future.set_exception(exc)
            finally:
                self._started = None

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._queue.put(None)
        if wait:
            self._thread.join()


class EngineService:
    """Owns the engine objects of one app and the thread they run on."""

    def __init__(self, settings: ApiSettings) -> None:
        self.settings = settings
        self._executor: EngineThread | None = None
        self._executor_lock = threading.Lock()
        self._parser: Any = None
        self._runtime: Any = None
        self._retry_reload_at = 0.0

    # -- threading -------------------------------------------------------
    def _pool(self) -> EngineThread:
        with self._executor_lock:
            if self._executor is None:
                self._executor = EngineThread("dtdialog-engine")
            return self._executor

    async def call(self, fn: Callable[..., T], **kwargs: Any) -> T:
        """Return ``fn(**kwargs)`` computed on the engine thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool(), functools.partial(fn, **kwargs))

    def submit(self, fn: Callable[..., T], **kwargs: Any) -> Future[T]:
        """Queue ``fn(**kwargs)`` on the engine thread from synchronous code; return its future."""
        return self._pool().submit(fn, **kwargs)

    def close(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """Wait (at most ``timeout`` seconds) for the engine call in flight, then release the index and the session store.

        An engine call still running after that is abandoned (its thread is a daemon): shutting down
        never hangs on it, and SQLite's journal undoes any write it had not committed.
        """
        with self._executor_lock:
            executor, self._executor = self._executor, None
        if executor is None:
            return
        try:
            executor.submit(self._close_resources).result(timeout=timeout)
        except FuturesTimeout:
            log.error("an engine call was still running after %.0f s; shutting down without waiting for it", timeout)
        executor.shutdown(wait=False)

    def readiness(self, *, lock_timeout: float = 0.5) -> str | None:
        """Return None when the engine can take work, else why not (cheap: never queued behind engine calls).

        Not ready: an engine call has run for longer than ``settings.health_stall_seconds``, or the loaded
        index's or session store's lock cannot be taken within ``lock_timeout`` seconds.
        """
        executor = self._executor
        busy = executor.busy_seconds() if executor is not None else 0.0
        if busy > self.settings.health_stall_seconds:
            return f"an engine call has been running for {busy:.0f} s"
        runtime = self._runtime
        if runtime is not None:
            for name, part in (("answer index", runtime.index), ("session store", runtime.store)):
                if part is not None and not part.lock_free(lock_timeout):
                    return f"the {name} stays locked"
        return None

    def _close_resources(self) -> None:
        engine, self._runtime = self._runtime, None
        try:
            if engine is not None:
                engine.close()
        except Exception:  # closing is best effort at shutdown
            log.warning("error while closing the engine", exc_info=True)

    # -- engine objects (call these on the engine thread) ------------------
    @property
    def loaded(self) -> bool:
        """Return True once the index and selector are loaded."""
        return self._runtime is not None

    def parser(self) -> Any:
        """Return the RST parser (loads spaCy on first use)."""
        if self._parser is None:
            if self._runtime is not None:
                self._parser = self._runtime.parser
            else:
                from parsers.base import get_parser

                self._parser = get_parser(self.settings.parser)
        return self._parser

    def engine_spec(self, *, index_path=None):
        """Return the ``EngineSpec`` of the settings (``index_path``: a freshly rebuilt index file to open instead)."""
        from dtdialog.assembly import EngineSpec

        s = self.settings
        if index_path is not None:
            return EngineSpec(parser=s.parser, backend="sqlite", index_path=index_path, ranker=s.ranker,
                              sessions_path=s.sessions_path)
        return EngineSpec(parser=s.parser, backend=s.backend, index_path=s.index_path, index_url=s.index_url,
                          corpus=s.corpus, corpus_format=s.corpus_format if s.corpus is not None else "builtin",
                          ranker=s.ranker, sessions_path=s.sessions_path)

    def build_engine(self, *, index_path=None) -> Any:
        """Return a new ``Engine`` built from the settings (see ``engine_spec``), sharing the loaded parser."""
        from dtdialog.assembly import build_engine
        from dtdialog.gc_tuning import freeze_loaded

        engine = build_engine(self.engine_spec(index_path=index_path), progress=False, parser=self.parser())
        freeze_loaded()
        return engine

    def load(self) -> Any:
        """Return the ``Engine`` (parser, index, selector, manager), loading or building the index on first use.

        A problem raises its ``DTDialogError`` (``dtdialog serve --preload`` prints it as one line).
        """
        if self._runtime is None:
            self._runtime = self.build_engine()
            log.info("engine loaded: %s index with %d answers", self.settings.backend, self._runtime.index.count())
        elif self._runtime.index.replaced_on_disk() and time.monotonic() >= self._retry_reload_at:
            self._reload_replaced()
        return self._runtime

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
        self.load().selector.rank(question="My car does not start, but the battery is new.", size=1)

    def ranks_with_vectors(self) -> bool:
        """Return True when the loaded engine ranks with the learned ranker (dense vectors beside the index)."""
        return self._runtime is not None and self._runtime.ranker == "learned"

    def refresh_selector(self) -> None:
        """Give the engine a new selector (empty caches), after stored answers were replaced under the same ids.

        The ranking is rebuilt too: the learned ranker's dense vectors are refreshed for the changed answers.
        """
        self.runtime().refresh(progress=False)

    def replace_runtime(self, runtime: Any) -> None:
        """Swap in a freshly built engine (None: unload), closing the old one's index and session store."""
        old, self._runtime = self._runtime, runtime
        if old is None:
            return
        if old.store is not None:
            old.store.close()
        if runtime is None or old.index is not runtime.index:
            old.index.close()
