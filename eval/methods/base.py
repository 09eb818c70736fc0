"""The interface every reconstruction method implements: fit on the candidate pool, then rank per step."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence

from eval.datasets import EvalDialogue, PoolAnswer

_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Return the lower-cased word tokens of ``text`` (the keyword baselines' tokenisation)."""
    return _WORD.findall(text.lower())


def query_text(question: str, followups: Sequence[str]) -> str:
    """Return the text a context-free method searches with: the question plus every follow-up so far.

    The paper forms the query for A2 from Q1 and C1 (section 3.4, step 7), so later steps keep the question.
    """
    return "\n".join([question, *followups])


class MethodUnavailable(Exception):
    """The method cannot run here (e.g. an optional extra is missing); the message says why."""


class RankingMethod(ABC):
    """A dialogue-reconstruction method.

    ``fit`` indexes the candidate pool once; ``rank`` returns ``(answer id, score)`` pairs, best first,
    at most ``k`` of them, never one of ``exclude_ids``. ``step`` is 0 for A1, 1 for A2, 2 for A3 and
    ``followups`` holds the actual follow-ups C1..C_step seen so far.
    """

    name: str = "base"
    label: str = "base"  # how reports name the method

    @abstractmethod
    def fit(self, *, pool: Sequence[PoolAnswer]) -> None:
        """Index the candidates."""

    @abstractmethod
    def rank(self, *, question: str, followups: Sequence[str], step: int, exclude_ids: Sequence[str],
             k: int) -> list[tuple[str, float]]:
        """Return up to ``k`` (answer id, score) pairs, best first."""

    def prepare(self, *, dialogues: Sequence[EvalDialogue]) -> None:  # noqa: B027 - optional hook
        """Optionally precompute for the coming queries (batch encoding, batch parsing). Default: nothing."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (temporary indexes, models). Default: nothing."""

    def describe(self) -> str:
        """Return a one-line description for reports."""
        return self.label


def top_k(ids: Sequence[str], scores, *, exclude_ids: Sequence[str], k: int) -> list[tuple[str, float]]:
    """Return the ``k`` best (id, score) pairs of parallel ``ids`` / ``scores``, skipping ``exclude_ids``.

    Ties keep pool order (a stable sort), so results are deterministic.
    """
    import numpy as np

    scores = np.asarray(scores, dtype=float)
    order = np.argsort(-scores, kind="stable")
    excluded = set(exclude_ids)
    out: list[tuple[str, float]] = []
    for i in order:
        if ids[i] in excluded:
            continue
        out.append((ids[i], float(scores[i])))
        if len(out) == k:
            break
    return out
