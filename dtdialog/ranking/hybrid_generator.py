"""Hybrid candidate generation: the union of the lexical top-k and the dense top-k (a ``CandidateGenerator``).

Lexical hits keep their index score (keywords + ``rr_edu``); answers only the dense retriever
found are appended with score 0 (the learned scorer reads "score 0" as "not retrieved
lexically") in cosine order. The dense query is the question plus the follow-ups so far, encoded
once per turn (``DenseSignals`` caches it for the scorer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dtdialog.ranking.dense_signals import DenseSignals, dense_query_text, query_messages
from dtdialog.understanding.subtrees import QuestionPlan
from index.base import AnswerIndex, SearchHit, SearchQuery
from parsers.errors import ConfigError


class HybridGenerator:
    """Union of the lexical top ``lexical_k`` and the dense top ``dense_k`` (each defaults to the step's ``size``).

    A learned ranker is trained on candidate lists of one depth; passing that depth here keeps the
    lists it sees at run time alike. ``prefetch``: callables given the step's messages (``query_messages``) once
    the hits are found, to start work the scorer will need (``SignalExtractor.prefetch``: the SG parse).
    """

    def __init__(self, *, index: AnswerIndex, dense: DenseSignals, dense_k: int | None = None,
                 lexical_k: int | None = None, prefetch: Sequence[Callable[[tuple[str, ...]], None]] = ()) -> None:
        for name, value in (("dense_k", dense_k), ("lexical_k", lexical_k)):
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be at least 1, got {value}")
        self.index = index
        self.dense = dense
        self.dense_k = dense_k
        self.lexical_k = lexical_k
        self.prefetch = tuple(prefetch)

    def prepare(self, *, question: str, followups: Sequence[str]) -> None:
        """Start encoding a step's dense query now (``AnswerSelector``: before a new question's parse, and before a
        step is planned), so the parse and the planning run beside the encoding instead of before it."""
        self.dense.prefetch(dense_query_text(question, followups))

    def generate(self, *, plan: QuestionPlan, part_index: int, query: SearchQuery, followups: Sequence[str],
                 size: int) -> list[SearchHit]:
        """Return lexical hits then dense-only hits; no answer twice, none of ``query.exclude_ids``."""
        text = dense_query_text(plan.question, followups)
        self.dense.prefetch(text)  # the query's encoding runs in a worker thread during the lexical search
        hits = [] if query.is_empty() else self.index.search(query.with_size(self.lexical_k or size))
        seen = {h.document.id for h in hits}
        dense_hits = self.dense.search(text, k=self.dense_k or size, exclude_ids=query.exclude_ids)
        # the dense-only answers in one read (a turn has ~30 of them), not a query each
        docs = self.index.get_many([doc_id for doc_id, _ in dense_hits if doc_id not in seen])
        for doc_id, cosine in dense_hits:
            if doc_id in seen:
                continue
            doc = docs.get(doc_id)
            if doc is None:  # the store is older than the index: skip what the index no longer holds
                continue
            seen.add(doc_id)
            hits.append(SearchHit(document=doc, score=0.0, matched={"dense": [f"{cosine:.3f}"]}))
        for start in self.prefetch:  # e.g. the scorer's SG parse of the query, during the agreement checks
            start(query_messages(plan.question, followups))
        return hits

    def to_dict(self) -> dict:
        return {"kind": "hybrid", "dense_k": self.dense_k, "lexical_k": self.lexical_k, "answers": len(self.dense.store)}
