"""Dense retrieval: cosine similarity of packaged MiniLM embeddings (optional ``[dense]`` extra)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eval.datasets import EvalDialogue, PoolAnswer
from eval.methods.base import MethodUnavailable, RankingMethod, query_text, top_k


class DenseMethod(RankingMethod):
    """Ranks candidates by the cosine between the query (question + follow-ups) and answer embeddings."""

    name = "dense"
    label = "Dense (MiniLM cosine)"

    def __init__(self, *, batch_size: int = 64, progress: bool = False, runtime: str | None = None) -> None:
        """``runtime``: the encoder's (``parsers.encoder.RUNTIMES``; None: ``$DTDIALOG_ENCODER_RUNTIME`` or this CPU's
        fastest)."""
        from index.dense import INSTALL_HINT, DenseEncoder, dense_available

        if not dense_available():
            raise MethodUnavailable(f"the [dense] extra is not installed ({INSTALL_HINT})")
        self.encoder = DenseEncoder(batch_size=batch_size, runtime=runtime)
        self.progress = progress
        self._ids: list[str] = []
        self._matrix: np.ndarray | None = None
        self._query_cache: dict[str, np.ndarray] = {}

    def fit(self, *, pool: Sequence[PoolAnswer]) -> None:
        from eval.methods.vector_cache import encode_cached

        self._ids = [a.id for a in pool]
        # cached by text across methods and runs: an embedding depends only on the text and the model
        self._matrix = encode_cached([a.text for a in pool], encoder=self.encoder, progress=self.progress)

    def prepare(self, *, dialogues: Sequence[EvalDialogue]) -> None:
        """Encode every query of the coming steps in one batch."""
        self.encode_queries([query_text(d.question, d.followups[:s]) for d in dialogues for s in range(d.n_answers)])

    def encode_queries(self, texts: Sequence[str]) -> None:
        """Encode many queries in one batch ahead of ``rank`` (much faster than one at a time)."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._query_cache]
        if todo:
            self._query_cache.update(zip(todo, self.encoder.encode(todo, progress=self.progress)))

    def rank(self, *, question: str, followups: Sequence[str], step: int, exclude_ids: Sequence[str],
             k: int) -> list[tuple[str, float]]:
        text = query_text(question, followups)
        self.encode_queries([text])
        return top_k(self._ids, self._matrix @ self._query_cache[text], exclude_ids=exclude_ids, k=k)
