"""Durations written the way operators type them: ``90s``, ``30m``, ``12h``, ``7d`` (or plain seconds)."""

from __future__ import annotations

import math
import re

from parsers.errors import ConfigError

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", re.IGNORECASE)


def parse_duration(text: str | float | int, *, what: str = "duration") -> float:
    """Return ``text`` in seconds; ``ConfigError`` naming ``what`` for anything else than a non-negative duration."""
    if isinstance(text, bool):
        raise ConfigError(f"{what} must be a duration such as 90s, 30m, 12h or 7d, got {text!r}")
    if isinstance(text, (int, float)):
        seconds = float(text)
    else:
        match = _DURATION.fullmatch(str(text))
        if match is None:
            raise ConfigError(f"{what} must be a duration such as 90s, 30m, 12h or 7d, got {text!r}")
        seconds = float(match.group(1)) * _UNITS[(match.group(2) or "s").lower()]
    if not math.isfinite(seconds) or seconds < 0:
        raise ConfigError(f"{what} must be a finite duration of at least 0, got {text!r}")
    return seconds

