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
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from dtdialog.api.errors import ApiError, scrub_paths
from dtdialog.api.settings import ApiSettings
from parsers.errors import DTDialogError

log = logging.getLogger("dtdialog.api")
T = TypeVar("T")


class EngineService:
    """Owns the engine objects of one app and the thread they run on."""

    def __init__(self, settings: ApiSettings) -> None:
        self.settings = settings
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        self._parser: Any = None
        self._runtime: Any = None

    # -- threading -------------------------------------------------------
    def _pool(self) -> ThreadPoolExecutor:
        with self._executor_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dtdialog-engine")
            return self._executor

    async def call(self, fn: Callable[..., T], **kwargs: Any) -> T:
        """Return ``fn(**kwargs)`` computed on the engine thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool(), functools.partial(fn, **kwargs))

    def close(self) -> None:
        """Wait for running engine calls, then release the index and the session store."""
        with self._executor_lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.submit(self._close_resources).result()
            executor.shutdown(wait=True)

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

    def runtime(self) -> Any:
        """Return the ``Engine`` (parser, index, selector, manager), loading or building the index on first use."""
        if self._runtime is None:
            try:
                self._runtime = self.build_engine()
            except DTDialogError as exc:
                # A server-side problem (bad index file, unreachable backend), not the client's input.
                log.error("cannot load the engine: %s", exc)
                raise ApiError(503, "engine_unavailable", "the answer index cannot be loaded: " + scrub_paths(str(exc))) from None
            log.info("engine loaded: %s index with %d answers", self.settings.backend, self._runtime.index.count())
        return self._runtime

    def manager(self) -> Any:
        """Return the ``DialogueManager`` whose sessions live in the SQLite file ``settings.sessions_path``."""
        return self.runtime().manager

    def warm_up(self) -> None:
        """Load everything and run one search, so the first customer does not wait for spaCy and caches to load."""
        self.runtime().selector.rank(question="My car does not start, but the battery is new.", size=1)

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
