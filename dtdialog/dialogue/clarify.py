"""Clarify: which candidates are genuine alternatives, worth offering the customer as options.

Close normalised scores alone are not enough: an option must also be strong on its own, so an answer about
another system that matched one shared word is never offered next to the right one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dtdialog.setup.engine_config import EngineConfig


def competes(cand: Any, best: Any, config: EngineConfig) -> bool:
    """Return True when ``cand`` is a genuine alternative to ``best`` worth offering as a clarification option.

    Its score must be within ``clarify_margin`` of the best and at least ``clarify_ratio`` of it, and its topical
    coverage (``topic_ratio``) at least ``clarify_ratio`` too.
    """
    if best.score - cand.score > config.clarify.clarify_margin:
        return False
    if best.score > 0 and cand.score < config.clarify.clarify_ratio * best.score:
        return False
    return cand.features.get("topic_ratio", 1.0) >= config.clarify.clarify_ratio


def close_alternatives(ranked: Sequence[Any], config: EngineConfig) -> list[Any]:
    """Return the best candidate and those that compete with it (best first)."""
    if not ranked:
        return []
    return [ranked[0]] + [c for c in ranked[1:] if competes(c, ranked[0], config)]


def strong_others(ranked: Sequence[Any], passed: Sequence[str], yardstick: Sequence[str],
                  config: EngineConfig) -> list[Any]:
    """Return the candidates, not among ``passed``, that could stand beside the ``yardstick`` answers (best first).

    ``competes``' thresholds against the best yardstick answer of the same ranking: an alternative needs
    at least ``clarify_ratio`` of its score, of its topical coverage (``topic``) and of the ranking's best
    coverage (``topic_ratio``). No yardstick answer in the ranking: no alternative.
    """
    bar = [c for c in ranked if c.document.id in yardstick]
    if not bar:
        return []
    best = max(c.score for c in bar)
    topic = max(c.features.get("topic", 0.0) for c in bar)
    floor = config.clarify.clarify_ratio * best if best > 0 else best
    return [c for c in ranked if c.document.id not in passed and c.score >= floor
            and c.features.get("topic", 0.0) >= config.clarify.clarify_ratio * topic
            and c.features.get("topic_ratio", 1.0) >= config.clarify.clarify_ratio]
