"""The engine behind the API: one parser, index, selector and dialogue manager per app, loaded on first use.

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
        self._manager: Any = None

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
        store = getattr(self._manager, "store", None)
        for obj in (store, getattr(self._runtime, "index", None)):
            try:
                if obj is not None and hasattr(obj, "close"):
                    obj.close()
            except Exception:  # closing is best effort at shutdown
                log.warning("error while closing %s", type(obj).__name__, exc_info=True)
        self._manager = None
        self._runtime = None

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

    def runtime(self) -> Any:
        """Return the engine ``Runtime`` (parser, index, selector), loading or building the index on first use."""
        if self._runtime is None:
            from dtdialog.runtime import load_runtime

            s = self.settings
            try:
                self._runtime = load_runtime(corpus=s.corpus, corpus_format=s.corpus_format, index_path=s.index_path,
                                             backend=s.backend, es_url=s.index_url, parser=self.parser(),
                                             progress=False, ranker=s.ranker)
            except DTDialogError as exc:
                # A server-side problem (bad index file, unreachable backend), not the client's input.
                log.error("cannot load the engine: %s", exc)
                raise ApiError(503, "engine_unavailable", "the answer index cannot be loaded: " + scrub_paths(str(exc))) from None
            log.info("engine loaded: %s index with %d answers", s.backend, self._runtime.index.count())
        return self._runtime

    def manager(self) -> Any:
        """Return the ``DialogueManager`` whose sessions live in the SQLite file ``settings.sessions_path``."""
        if self._manager is None:
            from dtdialog.manager import DialogueManager
            from dtdialog.session_store import SessionStore

            path = self.settings.sessions_path
            path.parent.mkdir(parents=True, exist_ok=True)
            self._manager = DialogueManager(selector=self.runtime().selector, store=SessionStore(path))
        return self._manager

    def warm_up(self) -> None:
        """Load everything and run one search, so the first customer does not wait for spaCy and caches to load."""
        self.manager()
        self.runtime().selector.rank(question="My car does not start, but the battery is new.", size=1)

    def ranks_with_vectors(self) -> bool:
        """Return True when the loaded engine ranks with the learned ranker (dense vectors beside the index)."""
        if self._runtime is None:
            return False
        from dtdialog.ranking.learned_scorer import LearnedScorer

        return isinstance(getattr(self._runtime.selector, "scorer", None), LearnedScorer)

    def refresh_selector(self) -> None:
        """Give the runtime a new selector (empty caches), after stored answers were replaced under the same ids.

        The ranking is rebuilt too: the learned ranker's dense vectors are refreshed for the changed answers.
        """
        from dtdialog.ranking.factory import build_ranking, engine_default_ranker
        from dtdialog.selector import AnswerSelector

        rt = self.runtime()
        path = getattr(rt.index, "path", None)
        generator, scorer = build_ranking(index=rt.index, index_path=path, config=rt.selector.config,
                                          ranker=self.settings.ranker or engine_default_ranker(), progress=False)
        rt.selector = AnswerSelector(index=rt.index, parser=rt.parser, config=rt.selector.config, generator=generator,
                                     scorer=scorer)
        if self._manager is not None:
            self._manager.selector = rt.selector

    def replace_runtime(self, runtime: Any) -> None:
        """Swap in a freshly built runtime (None: unload), closing the old index; sessions reopen on next use."""
        old, self._runtime = self._runtime, runtime
        store = getattr(self._manager, "store", None)
        self._manager = None
        if store is not None and hasattr(store, "close"):
            store.close()
        if old is not None and (runtime is None or old.index is not runtime.index):
            old.index.close()
