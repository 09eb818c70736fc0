"""A bound on how fast the server's log can grow: the same message passes a few times per interval, the rest
are counted and reported in one line.

One error a client can cause, repeated at its rate ("Too many open files" from accept, refused or timed-out
connections, bad requests), would otherwise fill the disk; with this bound a flood is a few lines a minute.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

#: Records of one kind (same logger, level and first line of the template) passed per interval.
BURST = 10
INTERVAL_S = 60.0
#: Kinds tracked at once; past this, new kinds share one budget (a flood of ever-new messages is bounded too).
MAX_KINDS = 200
#: The loggers whose handlers get the filter: the root (dtdialog, asyncio) and uvicorn's own.
SERVER_LOGGERS = ("", "uvicorn", "uvicorn.error", "uvicorn.access")
_OVERFLOW = ("*", 0, "messages of other kinds")
_SUMMARY = "_dtdialog_flood_summary"


@dataclass
class _Window:
    start: float
    passed: int = 0
    suppressed: int = 0


class RepeatLimitFilter(logging.Filter):
    """A handler filter that passes at most ``burst`` records of a kind per ``interval`` seconds, then one line
    saying how many it dropped (written when the kind's interval is over, on the next record of any kind)."""

    def __init__(self, handler: logging.Handler, *, burst: int = BURST, interval: float = INTERVAL_S,
                 max_kinds: int = MAX_KINDS, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.handler, self.burst, self.interval, self.max_kinds, self.clock = handler, burst, interval, max_kinds, clock
        self._windows: dict[tuple[str, int, str], _Window] = {}
        self._next_scan = 0.0
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, _SUMMARY, False):
            return True
        now = self.clock()
        with self._lock:
            summaries = self._close_windows(now) if now >= self._next_scan else []
            kind = (record.name, record.levelno, str(record.msg).split("\n", 1)[0][:200])
            if kind not in self._windows and len(self._windows) >= self.max_kinds:
                kind = _OVERFLOW
            window = self._windows.get(kind)
            if window is None or now - window.start >= self.interval:
                if window is not None and window.suppressed:
                    summaries.append(self._summary(kind, window))
                window = self._windows[kind] = _Window(now)
            allowed = window.passed < self.burst
            if allowed:
                window.passed += 1
            else:
                window.suppressed += 1
        for summary in summaries:
            self.handler.handle(summary)
        return allowed

    def _close_windows(self, now: float) -> list[logging.LogRecord]:
        # a scan a second at most: a flood of one kind does not pay for walking every kind on each record
        self._next_scan = now + 1.0
        ended = [kind for kind, window in self._windows.items() if now - window.start >= self.interval]
        windows = [(kind, self._windows.pop(kind)) for kind in ended]
        return [self._summary(kind, window) for kind, window in windows if window.suppressed]

    def _summary(self, kind: tuple[str, int, str], window: _Window) -> logging.LogRecord:
        name, level, first_line = kind
        record = logging.LogRecord(name if name != "*" else "dtdialog.api", level or logging.WARNING, __file__,
                                   0, "%d similar messages suppressed in %.0f s: %s", (window.suppressed,
                                   self.interval, first_line), None)
        setattr(record, _SUMMARY, True)
        return record


def install(logger_names: Iterable[str] = SERVER_LOGGERS, **options: float) -> None:
    """Give every handler of ``logger_names`` a ``RepeatLimitFilter`` (once; call it after uvicorn has set up its
    logging, which replaces its handlers)."""
    for name in logger_names:
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(f, RepeatLimitFilter) for f in handler.filters):
                handler.addFilter(RepeatLimitFilter(handler, **options))
