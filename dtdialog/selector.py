"""Answer selection for one dialogue step: plan DT-Q, query, check agreement, score (paper steps 1-5).

``AnswerSelector`` is stateless and thread-safe: every argument of ``rank`` comes from the caller
(the session, or the batch evaluation that uses it as the ``dtq`` method). Retrieval and scoring
are pluggable (``CandidateGenerator``, ``CandidateScorer``).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from dtdialog.agreement import AgreementResult, AgreementTable, AnswerAnalysis, Requirement, RhetoricalAgreement
from dtdialog.constraints import Constraint, extract_constraints
from dtdialog.engine_config import EngineConfig
from dtdialog.entities import EntityNormalizer, is_content, words_of
from dtdialog.query_builder import build_query
from dtdialog.scoring import CandidateScorer, RankedCandidate, RuleScorer
from dtdialog.subtrees import QuestionPlan, split_question
from index.base import AnswerDocument, AnswerIndex, SearchHit, SearchQuery
from parsers.base import RSTParser
from parsers.errors import InputError
from parsers.tree import DiscourseTree

__all__ = ["AgreementResult", "AnswerSelector", "CandidateGenerator", "CandidateScorer", "LexicalGenerator",
           "QuestionPlan", "RankOutcome", "RankedCandidate", "RuleScorer"]

_CACHE_SIZE = 50_000
#: A candidate's retrieval score counts the words it shares only with the previous answer (not with the
#: user's reply or the question) at this weight: the user's own words lead, the answer only lends referents.
CONTEXT_TERM_WEIGHT = 0.5
#: Answers whose entity-term sets overlap at least this much (Jaccard) are near-duplicates; the best one is kept.
DUPLICATE_JACCARD = 0.9
#: A candidate whose topical coverage of the question is below this share of the best candidate's is off topic:
#: it shares a word or two with the question (one agreeing EDU pair on "battery") but is about something else.
TOPIC_RATIO = 0.35
#: Question terms in the main clause (the nucleus chain from the DT-Q root) weigh this much more than satellite ones.
NUCLEUS_WEIGHT = 1.5
#: A multi-word entity term ("spark plug", "ignition coil") is more specific than a single word: this much weight.
PHRASE_WEIGHT = 2.0
#: When the best answer that passed agreement covers less than this share of the best retrieved answer's topic,
#: the parse probably asks for one relation too many: answers addressing at least ``RESCUE_AGREEMENT`` of the
#: required relations and on topic are admitted too (feature ``partial_agreement``), so a shifted parse never
#: leaves only off-topic answers that happened to match every relation.
RESCUE_TOPIC = 0.75
RESCUE_AGREEMENT = 0.5


class CandidateGenerator(Protocol):
    """Returns retrieval hits for one step's query."""

    def generate(self, *, plan: QuestionPlan, part_index: int, query: SearchQuery, followups: Sequence[str],
                 size: int) -> list[SearchHit]: ...


#: Keywords per index search: the SQLite index searches at most its ``MAX_KEYWORD_TOKENS`` (12) rarest tokens of a
#: query, so a longer keyword list is searched in chunks of this size and the scores summed.
KEYWORDS_PER_SEARCH = 12


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


@dataclass
class RankOutcome:
    """Everything one ranking step decided, for the session and the trace."""

    plan: QuestionPlan
    part_index: int
    query: SearchQuery
    requirements: list[str]
    candidates: list[RankedCandidate]
    rejected: list[RankedCandidate] = field(default_factory=list)
    constraints: list[Constraint] = field(default_factory=list)
    followup_tree: DiscourseTree | None = None

    def to_dict(self, *, limit: int = 10) -> dict[str, Any]:
        """Return the JSON trace of this step (top ``limit`` kept and rejected candidates)."""
        return {
            "part_index": self.part_index, "requirements": self.requirements, "query": self.query.to_dict(),
            "constraints": [c.to_dict() for c in self.constraints],
            "followup_dt": self.followup_tree.to_compact() if self.followup_tree else None,
            "candidates": [c.to_dict() for c in self.candidates[:limit]],
            "rejected": [c.to_dict() for c in self.rejected[:limit]],
        }


class AnswerSelector:
    """Plans a question and ranks stored answers for any step of its dialogue."""

    def __init__(self, *, index: AnswerIndex, parser: RSTParser, config: EngineConfig | None = None,
                 generator: CandidateGenerator | None = None, scorer: CandidateScorer | None = None,
                 normalizer: EntityNormalizer | None = None) -> None:
        self.index = index
        self.parser = parser
        self.config = config or EngineConfig()
        self.generator = generator or LexicalGenerator(index=index)
        self.scorer = scorer or RuleScorer(config=self.config)
        self.normalizer = normalizer or EntityNormalizer()
        table = AgreementTable.load(self.config.agreement_table)
        self.agreement = RhetoricalAgreement(table=table, normalizer=self.normalizer, ratio=self.config.agreement_ratio,
                                              overlap_scope=self.config.overlap_scope)
        # spaCy pipelines are not documented as thread-safe; parsing is short, so serialise it.
        self._parse_lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._analyses: OrderedDict[str, AnswerAnalysis] = OrderedDict()

    # --- planning -----------------------------------------------------------
    def parse(self, text: str) -> DiscourseTree:
        """Return the DT of ``text`` (parser calls are serialised)."""
        with self._parse_lock:
            return self.parser.parse(text)

    def plan(self, question: str) -> QuestionPlan:
        """Return DT-Q and its ordered parts. Raises ``InputError`` for empty text."""
        if not question or not question.strip():
            raise InputError("the question is empty")
        return split_question(self.parse(question), question=question)

    # --- ranking --------------------------------------------------------------
    def rank(self, *, question: str | QuestionPlan, step: int = 0, followups: Sequence[str] = (),
             exclude_ids: Sequence[str] = (), constraints: Sequence[str | Constraint] = (), size: int = 10,
             context_ids: Sequence[str] = ()) -> list[RankedCandidate]:
        """Return up to ``size`` candidates for step ``step``, best first (agreeing ones only by default).

        ``followups`` are the user's replies C_1..C_i so far (the last one drives the step),
        ``exclude_ids`` the answers not to repeat, ``constraints`` things the user cannot do/use
        (strings such as "no special tools"), ``context_ids`` the answers delivered so far in
        order (the last one gives a follow-up its referents and the continuation feature).
        """
        return self.rank_outcome(question=question, step=step, followups=followups, exclude_ids=exclude_ids,
                                 constraints=constraints, size=size, context_ids=context_ids).candidates[:size]

    def rank_outcome(self, *, question: str | QuestionPlan, step: int = 0, followups: Sequence[str] = (),
                     exclude_ids: Sequence[str] = (), constraints: Sequence[str | Constraint] = (),
                     size: int = 10, context_ids: Sequence[str] = ()) -> RankOutcome:
        """Return the full outcome of ``rank`` (query, requirements, kept and rejected candidates).

        Only the last of ``context_ids`` lends the follow-up words to the query, and a candidate's
        retrieval score counts words only that answer supplied at ``CONTEXT_TERM_WEIGHT``.
        """
        plan = question if isinstance(question, QuestionPlan) else self.plan(question)
        active = _as_constraints(constraints)
        followup_text = next((f for f in reversed(followups) if f and f.strip()), None)
        followup_tree = self.parse(followup_text) if followup_text else None
        previous = self._document(context_ids[-1]) if context_ids else None
        n_parts = len(plan.parts)
        part_index = min(max(step, 0), n_parts - 1)
        part = plan.parts[part_index]

        context_terms: set[str] = set()
        if followup_tree is not None:
            context_terms |= self.normalizer.terms_of_edus(followup_tree.edus)
        if previous is not None and followup_tree is not None:
            context_terms |= self._analysis(previous).terms
        followup_relations = [followup_tree.instance(n) for n in followup_tree.non_default_nodes()] \
            if followup_tree is not None else []
        if step >= n_parts and followup_relations:
            # plan exhausted: A_{i+1} answers "Q_last & C_i" (paper step 7) - the last part's issues are still
            # open, and the reply adds its own ("did at first but not anymore")
            part_terms = self.normalizer.terms_of_edus(part.edus)
            requirements = (self.agreement.requirements(part.relations, context_terms=context_terms)
                            + self.agreement.requirements(followup_relations, context_terms=context_terms | part_terms))
        else:
            requirements = self.agreement.requirements(part.relations, context_terms=context_terms)
        fallback_terms = self.normalizer.terms_of_edus(part.edus) | frozenset(context_terms)

        query = build_query(plan, part_index=part_index, followups=[followup_tree] if followup_tree else [],
                            exclude_ids=exclude_ids, size=self.config.candidates,
                            context_keywords=list(previous.keywords) if previous is not None else (),
                            whole_question=self.config.whole_question)
        hits = self.generator.generate(plan=plan, part_index=part_index, query=query, followups=list(followups),
                                       size=self.config.candidates)
        excluded = set(exclude_ids)
        hits = self._with_successor(hits, previous, excluded) if followup_tree is not None else hits
        question_terms = self.normalizer.terms_of_text(plan.question)
        own_terms, borrowed_terms = frozenset(), frozenset()
        if previous is not None and followup_tree is not None:
            own_terms = _singles(self.normalizer.terms_of_edus(followup_tree.edus)
                                 | self.normalizer.terms_of_edus(part.edus))
            borrowed_terms = _singles(self._analysis(previous).terms) - own_terms
        candidates: list[RankedCandidate] = []
        kept_terms: list[frozenset[str]] = []
        for hit in hits:
            doc = hit.document
            if doc.id in excluded:
                continue
            analysis = self._analysis(doc)
            # the same answer logged twice (or lightly edited) is one answer: never offer both as a choice
            if any(_jaccard(analysis.terms, seen) >= DUPLICATE_JACCARD for seen in kept_terms):
                continue
            kept_terms.append(analysis.terms)
            agreement = self.agreement.check(requirements, analysis, fallback_terms=fallback_terms)
            features = {
                "continuation": 1.0 if _continues(previous, doc) else 0.0,
                "question_match": self._question_match(question_terms, doc),
                # an A1 answered an opening question, an A2 a first follow-up: same role, better fit
                "step_match": 1.0 if doc.position == 2 * step + 1 else 0.0,
                "constraint_violations": float(sum(c.violated_by(analysis.terms, self.normalizer) for c in active)),
            }
            retrieval = float(hit.score)
            if borrowed_terms:
                share = _borrowed_share(analysis.terms, own_terms, borrowed_terms)
                features["context_share"] = share
                retrieval *= 1.0 - (1.0 - CONTEXT_TERM_WEIGHT) * share
            candidates.append(RankedCandidate(document=doc, retrieval_score=retrieval, agreement=agreement,
                                              features=features))
        if followup_tree is None:
            # the topic is the issue the user raised; a follow-up step is steered by C_i and the answer it replies
            # to instead (context terms, continuation), so it is not held to the question's wording
            topic_terms = self._topic_terms(plan.tree if n_parts == 1 else None, part.edus)
            _add_topic_features(candidates, topic_terms, {c.document.id: self._candidate_terms(c.document)
                                                          for c in candidates})
        kept = self.scorer.score(plan=plan, part_index=part_index, followups=list(followups), candidates=candidates)
        rescued = _partial_rescue(candidates, kept)
        if rescued:
            kept = self.scorer.score(plan=plan, part_index=part_index, followups=list(followups),
                                     candidates=[c for c in candidates if c.document.id not in rescued]
                                     + list(rescued.values()))
        # topical coherence whatever the scorer: an answer about another system never competes (nor is offered)
        best_topic = max((c.features.get("topic", 0.0) for c in kept), default=0.0)
        # the scorer's own first choice stays (a learned scorer may know better); only its alternatives are held to
        # the topic, so an answer about another system is never offered next to it nor delivered after a retry
        kept = kept[:1] + [c for c in kept[1:] if _on_topic(c, best_topic)]
        kept_ids = {c.document.id for c in kept}
        rejected = [c for c in candidates if c.document.id not in kept_ids]
        return RankOutcome(plan=plan, part_index=part_index, query=query,
                           requirements=[_requirement_label(r) for r in requirements], candidates=kept,
                           rejected=rejected, constraints=active, followup_tree=followup_tree)

    # --- helpers --------------------------------------------------------------
    def _topic_terms(self, tree: DiscourseTree | None, edus) -> dict[str, float]:
        """Return the step's topic terms with weights: phrases and main-clause terms count more.

        ``tree`` (the whole DT-Q, for a one-part question) marks its nucleus-chain EDUs as the main
        clause; a multi-part question's part is weighted flat, since its own nucleus is a sub-tree.
        """
        main = {e.index for e in _nucleus_edus(tree)} if tree is not None else set()
        weights: dict[str, float] = {}
        for edu in edus:
            factor = NUCLEUS_WEIGHT if edu.index in main else 1.0
            for term in self.normalizer.terms_of_edu(edu):
                weight = factor * (PHRASE_WEIGHT if " " in term else 1.0)
                weights[term] = max(weights.get(term, 0.0), weight)
        return weights

    def _candidate_terms(self, doc: AnswerDocument) -> frozenset[str]:
        """Return the terms of an answer plus its logged opening question (what the answer is about)."""
        logged = str((doc.meta or {}).get("question", ""))
        terms = self._analysis(doc).terms
        return terms | self.normalizer.terms_of_text(logged) if logged else terms

    def _with_successor(self, hits: list[SearchHit], previous: AnswerDocument | None,
                        excluded: set[str]) -> list[SearchHit]:
        """Return ``hits`` plus the answer that followed ``previous`` in its logged dialogue (score 0) if missing.

        A logged dialogue is one tested path Q, A1, C1, A2: its next answer is always worth an
        agreement check, even when the user's short reply shares no keyword with it.
        """
        if previous is None:
            return hits
        successor_id = f"{previous.dialogue_id}#{previous.position + 2}"
        if successor_id in excluded or any(h.document.id == successor_id for h in hits):
            return hits
        successor = self._document(successor_id)
        return hits + [SearchHit(document=successor, score=0.0)] if successor is not None else hits

    def _question_match(self, question_terms: frozenset[str], doc: AnswerDocument) -> float:
        """Return the share of the user's question terms found in the answer's logged opening question."""
        logged = str((doc.meta or {}).get("question", ""))
        if not logged or not question_terms:
            return 0.0
        singles = {t for t in question_terms if " " not in t}
        if not singles:
            return 0.0
        return len(singles & self.normalizer.terms_of_text(logged)) / len(singles)

    # --- the narrow interface the dialogue manager uses (it never reaches the index or normaliser) ---
    def document(self, doc_id: str) -> AnswerDocument | None:
        """Return the stored answer ``doc_id``, or None when it is no longer in the index."""
        return self.index.get(doc_id)

    def terms_of_text(self, text: str) -> frozenset[str]:
        """Return the entity terms of ``text`` in the selector's vocabulary (synonyms and stems applied)."""
        return self.normalizer.terms_of_text(text)

    def terms_of_edus(self, edus) -> frozenset[str]:
        """Return the entity terms of ``edus`` in the selector's vocabulary."""
        return self.normalizer.terms_of_edus(edus)

    def violates(self, doc: AnswerDocument, constraints: Sequence[Constraint]) -> bool:
        """Return True when the answer mentions something one of ``constraints`` rules out."""
        if not constraints:
            return False
        terms = self.normalizer.terms_of_text(doc.text)
        return any(c.violated_by(terms, self.normalizer) for c in constraints)

    def _document(self, doc_id: str) -> AnswerDocument | None:
        try:
            return self.index.get(doc_id)
        except Exception:  # noqa: BLE001 - a vanished context answer only loses the continuation hint
            return None

    def _analysis(self, doc: AnswerDocument) -> AnswerAnalysis:
        with self._cache_lock:
            cached = self._analyses.get(doc.id)
            if cached is not None:
                self._analyses.move_to_end(doc.id)
                return cached
        tree = DiscourseTree.from_dict(doc.tree) if doc.tree else self.parse(doc.text)
        analysis = self.agreement.analyze(tree)
        with self._cache_lock:
            self._analyses[doc.id] = analysis
            if len(self._analyses) > _CACHE_SIZE:
                self._analyses.popitem(last=False)
        return analysis

    def answer_edus(self, doc: AnswerDocument):
        """Return the EDUs of a stored answer (from its stored DT, else by parsing its text)."""
        tree = DiscourseTree.from_dict(doc.tree) if doc.tree else self.parse(doc.text)
        return tree.edus


def _nucleus_edus(tree: DiscourseTree) -> list:
    """Return the EDUs reached from the root through nuclei only (the question's main clause)."""
    out = []
    stack = [tree.root]
    while stack:
        node = stack.pop()
        if node.is_leaf:
            out.extend(tree.edus_of(node))
            continue
        stack.extend(node.nuclei() or node.children)
    return out


def _add_topic_features(candidates: list[RankedCandidate], weights: dict[str, float],
                        terms: dict[str, frozenset[str]]) -> None:
    """Fill ``topic`` (weighted share of the question's terms the answer covers) and ``topic_ratio`` (vs the best).

    Each question term's weight is scaled by its specificity within this step's candidate pool
    (``log(1 + n / df)``): a term every candidate has ("car", "start") cannot tell topics apart.
    """
    if not candidates or not weights:
        return
    n = len(candidates)
    df = {t: sum(t in terms[c.document.id] for c in candidates) for t in weights}
    weighted = {t: w * math.log(1.0 + n / max(df[t], 1)) for t, w in weights.items()}
    total = sum(weighted.values()) or 1.0
    for cand in candidates:
        own = terms[cand.document.id]
        cand.features["topic"] = sum(w for t, w in weighted.items() if t in own) / total
    best = max(c.features["topic"] for c in candidates)
    for cand in candidates:
        cand.features["topic_ratio"] = cand.features["topic"] / best if best > 0 else 1.0


def _partial_rescue(candidates: list[RankedCandidate], kept: list[RankedCandidate]) -> dict[str, RankedCandidate]:
    """Return on-topic candidates with partial agreement (verdict set, ``partial_agreement`` = 1) by id, or {}.

    Only when every kept candidate is far less on topic than the best retrieved one (``RESCUE_TOPIC``).
    """
    best_any = max((c.features.get("topic", 0.0) for c in candidates), default=0.0)
    best_kept = max((c.features.get("topic", 0.0) for c in kept), default=0.0)
    if best_any <= 0 or best_kept >= RESCUE_TOPIC * best_any:
        return {}
    kept_ids = {c.document.id for c in kept}
    out: dict[str, RankedCandidate] = {}
    for cand in candidates:
        agreement = cand.agreement
        if cand.document.id in kept_ids or agreement.verdict or agreement.required == 0:
            continue
        if agreement.addressed / agreement.required < RESCUE_AGREEMENT:
            continue
        if cand.features.get("topic", 0.0) < RESCUE_TOPIC * best_any:
            continue
        features = {**cand.features, "partial_agreement": 1.0}
        out[cand.document.id] = replace(cand, agreement=replace(agreement, verdict=True), features=features)
    return out


def _on_topic(cand: RankedCandidate, best_topic: float) -> bool:
    """Return False for a candidate far below the best kept one's topical coverage (the logged successor is exempt).

    The reference is the best candidate the scorer kept, so an answer dropped for a constraint does not
    make the remaining ones look off topic.
    """
    if cand.features.get("continuation", 0.0) > 0 or "topic" not in cand.features or best_topic <= 0:
        return True
    return cand.features["topic"] >= TOPIC_RATIO * best_topic


def _singles(terms: frozenset[str]) -> frozenset[str]:
    return frozenset(t for t in terms if " " not in t)


def _borrowed_share(terms: frozenset[str], own: frozenset[str], borrowed: frozenset[str]) -> float:
    """Return the share of a candidate's query-matching terms that only the previous answer supplied."""
    n_own, n_borrowed = len(terms & own), len(terms & borrowed)
    return n_borrowed / (n_own + n_borrowed) if n_own + n_borrowed else 0.0


def _jaccard(left: frozenset[str], right: frozenset[str]) -> float:
    union = len(left | right)
    return len(left & right) / union if union else 1.0


def _continues(previous: AnswerDocument | None, doc: AnswerDocument) -> bool:
    """Return True when ``doc`` is the next answer after ``previous`` in the same logged dialogue."""
    return (previous is not None and doc.dialogue_id == previous.dialogue_id
            and doc.position == previous.position + 2)


def _as_constraints(items: Sequence[str | Constraint]) -> list[Constraint]:
    out: list[Constraint] = []
    for item in items:
        if isinstance(item, Constraint):
            out.append(item)
            continue
        found = extract_constraints(str(item))
        if not found:
            words = tuple(w for w in words_of(str(item)) if is_content(w))[:4]
            found = [Constraint("cannot", str(item), words)] if words else []
        out.extend(found)
    return out


def _requirement_label(req: Requirement) -> str:
    return req.label()
