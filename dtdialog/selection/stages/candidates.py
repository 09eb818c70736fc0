"""Stage 3: candidate answers - the generator's hits for the query, the logged successor, no repeats or duplicates.

The default generator is ``LexicalGenerator`` (``index.search`` over the keyword and ``rr_edu`` fields);
``ranking.HybridGenerator`` adds dense hits. Each kept candidate carries its search hit (score and the
index fields it matched) and the analysis of its DT, so no later stage or caller searches or parses again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from dtdialog.selection.agreement import AnswerAnalysis
from dtdialog.selection.stages.plan import StepPlan
from dtdialog.selection.stages.record import StepRecord
from dtdialog.selection.stages.tools import StageTools
from dtdialog.understanding.subtrees import QuestionPlan
from index.base import AnswerDocument, AnswerIndex, SearchHit, SearchQuery
from parsers.errors import InputError

#: Keywords per index search: the SQLite index searches at most its ``MAX_KEYWORD_TOKENS`` (12) rarest tokens of a
#: query, so a longer keyword list is searched in chunks of this size and the scores summed.
KEYWORDS_PER_SEARCH = 12
#: Answers whose entity-term sets overlap at least this much (Jaccard) are near-duplicates; the best one is kept.
DUPLICATE_JACCARD = 0.9


class CandidateGenerator(Protocol):
    """Returns retrieval hits for one step's query.

    A generator may also offer ``prepare(*, question, followups)``: the selector calls it before parsing a new
    question and before planning a step, so slow work that needs only the texts (``HybridGenerator``: the query's
    encoding) can start.
    """

    def generate(self, *, plan: QuestionPlan, part_index: int, query: SearchQuery, followups: Sequence[str],
                 size: int) -> list[SearchHit]: ...


class LexicalGenerator:
    """The default generator: ``index.search`` over the keyword and ``rr_edu`` fields.

    A query with more than ``KEYWORDS_PER_SEARCH`` keywords is run as several searches over disjoint
    keyword chunks (the RR terms go with the first) and each answer's scores are summed: the index
    matches ``kw1 OR kw2 ...`` and bm25 adds up per term, so the sum is the bm25 of the whole keyword
    list, which the index's own query pruning (rarest 12 tokens) would otherwise cut to a few rare words.
    """

    def __init__(self, *, index: AnswerIndex) -> None:
        self.index = index

    def generate(self, *, plan: QuestionPlan, part_index: int, query: SearchQuery, followups: Sequence[str],
                 size: int) -> list[SearchHit]:
        """Return up to ``size`` hits by summed score (ties by id), or [] for a query with no usable words."""
        if query.is_empty():
            return []
        keywords = list(query.keywords)
        if len(keywords) <= KEYWORDS_PER_SEARCH:
            return self.index.search(query.with_size(size))
        totals: dict[str, float] = {}
        for start in range(0, len(keywords), KEYWORDS_PER_SEARCH):
            chunk = replace(query, keywords=tuple(keywords[start:start + KEYWORDS_PER_SEARCH]),
                            rr_terms=query.rr_terms if start == 0 else (), size=size)
            try:
                found = self.index.search_scores(chunk)
            except InputError:
                continue  # a chunk of only unsearchable words: the other chunks still count
            for doc_id, score in found:
                totals[doc_id] = totals.get(doc_id, 0.0) + float(score)
        best = sorted(totals, key=lambda i: (-totals[i], i))[:size]
        # only the final best answers are loaded, with what the whole query matched in each
        return self.index.hits_for([(i, totals[i]) for i in best], query.with_size(size))


@dataclass(frozen=True)
class Candidate:
    """A retrieved answer worth checking, with its search hit and the analysis of its DT."""

    hit: SearchHit
    analysis: AnswerAnalysis

    @property
    def document(self) -> AnswerDocument:
        return self.hit.document


@dataclass
class CandidatePool:
    """The step's candidates in retrieval order, and what was dropped on the way."""

    candidates: list[Candidate]
    retrieved: int = 0
    successor: str | None = None
    duplicates: list[str] = field(default_factory=list)


def gather_candidates(step: StepPlan, query: SearchQuery, *, generator: CandidateGenerator,
                      followups: Sequence[str], exclude_ids: Sequence[str], size: int, tools: StageTools,
                      record: StepRecord) -> CandidatePool:
    """Return the candidates for ``query``: up to ``size`` hits, plus the logged successor on a follow-up step."""
    hits = generator.generate(plan=step.plan, part_index=step.part_index, query=query, followups=list(followups),
                              size=size)
    excluded = set(exclude_ids)
    successor = None
    if step.is_followup:
        successor = logged_successor(hits, step.previous, excluded, tools.document)
        hits = hits + [successor] if successor is not None else hits
    pool = drop_repeats(hits, excluded, tools.analyze)
    pool.retrieved = len(hits)
    pool.successor = successor.document.id if successor is not None else None
    record.retrieved, record.successor, record.duplicates = pool.retrieved, pool.successor, list(pool.duplicates)
    return pool


def logged_successor(hits: list[SearchHit], previous: AnswerDocument | None, excluded: set[str],
                     document: Callable[[str], AnswerDocument | None]) -> SearchHit | None:
    """Return the answer that followed ``previous`` in its logged dialogue (score 0) when ``hits`` lack it.

    A logged dialogue is one tested path Q, A1, C1, A2: its next answer is always worth an
    agreement check, even when the user's short reply shares no keyword with it.
    """
    if previous is None:
        return None
    successor_id = f"{previous.dialogue_id}#{previous.position + 2}"
    if successor_id in excluded or any(h.document.id == successor_id for h in hits):
        return None
    successor = document(successor_id)
    return SearchHit(document=successor, score=0.0) if successor is not None else None


def drop_repeats(hits: list[SearchHit], excluded: set[str],
                 analyze: Callable[[AnswerDocument], AnswerAnalysis]) -> CandidatePool:
    """Return the hits not in ``excluded`` and not near-duplicates of an earlier hit, each with its analysis."""
    pool = CandidatePool(candidates=[])
    kept_terms: list[tuple[int, frozenset[str]]] = []
    for hit in hits:
        if hit.document.id in excluded:
            continue
        analysis = analyze(hit.document)
        # the same answer logged twice (or lightly edited) is one answer: never offer both as a choice
        if _near_duplicate(analysis.terms, kept_terms):
            pool.duplicates.append(hit.document.id)
            continue
        kept_terms.append((len(analysis.terms), analysis.terms))
        pool.candidates.append(Candidate(hit=hit, analysis=analysis))
    return pool


def _near_duplicate(terms: frozenset[str], kept: list[tuple[int, frozenset[str]]]) -> bool:
    """Return True when ``terms`` has a Jaccard similarity of ``DUPLICATE_JACCARD`` or more with one of ``kept``.

    The same test as ``jaccard(terms, seen) >= DUPLICATE_JACCARD``, without the set operations where the
    sizes alone rule it out (Jaccard <= smaller size / larger size): a turn compares ~60 candidates pairwise.
    """
    n = len(terms)
    for m, seen in kept:
        small, large = (n, m) if n <= m else (m, n)
        if large and small / large < DUPLICATE_JACCARD:
            continue
        if jaccard(terms, seen) >= DUPLICATE_JACCARD:
            return True
    return False


def jaccard(left: frozenset[str], right: frozenset[str]) -> float:
    common = len(left & right)
    union = len(left) + len(right) - common  # the size of ``left | right`` without building it
    return common / union if union else 1.0
