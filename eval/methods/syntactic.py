"""Baseline 2 of the paper: keywords plus linguistic relevance by syntactic generalization.

BM25 retrieves the ``depth`` best candidates; each is re-scored by
``bm25 / best bm25 + sg_weight * sg_score(query, answer)``, where ``sg_score`` is the normalised
weight of the maximal common sub-phrases of the two parses (``dtdialog.selection.syntactic_generalization``).
Re-ranking a retrieved list is how the SG relevance was used on search results (Galitsky 2013);
it also bounds the parsing cost. Every text is parsed once per run (cache).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

from eval.datasets import EvalDialogue, PoolAnswer
from eval.methods.base import RankingMethod, query_text, top_k
from eval.methods.keyword import KeywordMethod
from parsers.errors import ConfigError


class SyntacticMethod(RankingMethod):
    """BM25 top-``depth`` re-ranked with syntactic generalization (``sg_weight`` scales the SG part)."""

    name = "syntactic"
    label = "Baseline 2 (BM25 + syntactic generalization)"

    def __init__(self, *, depth: int = 30, sg_weight: float = 1.0, variant: str = "plus", progress: bool = False,
                 max_chars: int = 3000) -> None:
        if depth < 1:
            raise ConfigError(f"depth must be at least 1, got {depth}")
        if sg_weight < 0:
            raise ConfigError(f"sg_weight must be non-negative, got {sg_weight}")
        from dtdialog.selection.syntactic_generalization import SyntacticGeneralizer

        self.depth = depth
        self.sg_weight = sg_weight
        self.progress = progress
        self.max_chars = max_chars
        self.keyword = KeywordMethod(variant=variant)
        self.sg = SyntacticGeneralizer()
        self._ids: list[str] = []
        self._texts: list[str] = []

    def _clip(self, text: str) -> str:
        # Parse cost grows with length; the first max_chars characters carry the phrases that matter.
        return text[: self.max_chars]

    def fit(self, *, pool: Sequence[PoolAnswer]) -> None:
        self.keyword.fit(pool=pool)
        self._ids = [a.id for a in pool]
        self._texts = [self._clip(a.text) for a in pool]

    def prepare(self, *, dialogues: Sequence[EvalDialogue]) -> None:
        """Parse, in batches, every query and every candidate some step will re-rank."""
        needed: dict[str, None] = {}
        for d in dialogues:
            for step in range(d.n_answers):
                q = query_text(d.question, d.followups[:step])
                needed[self._clip(q)] = None
                scores = self.keyword.scores(d.question, d.followups[:step])
                for i in np.argsort(-scores, kind="stable")[: self.depth + step]:
                    needed[self._texts[i]] = None
        if self.progress:
            print(f"syntactic: parsing {len(needed)} texts", file=sys.stderr)
        self.sg.warm(needed, progress=self.progress)

    def rank(self, *, question: str, followups: Sequence[str], step: int, exclude_ids: Sequence[str],
             k: int) -> list[tuple[str, float]]:
        bm25 = self.keyword.scores(question, followups)
        excluded = set(exclude_ids)
        order = [i for i in np.argsort(-bm25, kind="stable") if self._ids[i] not in excluded]
        head, tail = order[: self.depth], order[self.depth:]
        best = float(bm25[head[0]]) if head and bm25[head[0]] > 0 else 1.0
        q = self._clip(query_text(question, followups))
        rescored = [bm25[i] / best + self.sg_weight * self.sg.score(q, self._texts[i]) for i in head]
        ranked = top_k([self._ids[i] for i in head], rescored, exclude_ids=(), k=k)
        # Below the re-ranked head the BM25 order stands, scored under the head's lowest score.
        floor = min((s for _, s in ranked), default=0.0)
        ranked += [(self._ids[i], floor - 1.0 + float(bm25[i]) / best / 2) for i in tail[: max(0, k - len(ranked))]]
        return ranked
