"""Answer selection for one dialogue step: plan DT-Q, query, check agreement, score (paper steps 1-5).

``rank_outcome`` runs the stages of ``dtdialog.selection.stages`` in the paper's order: plan the step, form the
``RR [phrase]`` query, gather candidates, check agreement, score, choose. ``AnswerSelector`` is stateless
and thread-safe: every argument of ``rank`` comes from the caller (the session, or the batch evaluation
that uses it as the ``dtq`` method). Retrieval and scoring are pluggable (``CandidateGenerator``,
``CandidateScorer``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dtdialog.selection.agreement import AgreementResult, AgreementTable, AnswerAnalysis, RhetoricalAgreement
from dtdialog.selection.confidence import Calibrator
from dtdialog.selection.scoring import CandidateScorer, RankedCandidate, RuleScorer
from dtdialog.selection.stages.already_tried import demote_tried
from dtdialog.selection.stages.branch_clash import demote_branch_clashes
from dtdialog.selection.stages.candidates import (
    KEYWORDS_PER_SEARCH,
    CandidateGenerator,
    LexicalGenerator,
    gather_candidates,
)
from dtdialog.selection.stages.choose import TOPIC_RATIO, choose
from dtdialog.selection.stages.condition_clash import demote_clashes
from dtdialog.selection.stages.features_stage import (
    CONTEXT_TERM_WEIGHT,
    NUCLEUS_WEIGHT,
    PHRASE_WEIGHT,
    describe_candidates,
)
from dtdialog.selection.stages.logged_question_stage import mark_logged_opening
from dtdialog.selection.stages.plan import plan_step
from dtdialog.selection.stages.position_stage import order_by_position
from dtdialog.selection.stages.presupposition_stage import demote_presuppositions
from dtdialog.selection.stages.query import form_query
from dtdialog.selection.stages.record import StepRecord
from dtdialog.selection.stages.scoring_stage import RESCUE_AGREEMENT, RESCUE_TOPIC, score_candidates
from dtdialog.selection.stages.stage_set import TREE_STAGES, StageSet
from dtdialog.selection.stages.tools import StageTools
from dtdialog.setup.engine_config import EngineConfig
from dtdialog.understanding.constraints import Constraint, extract_constraints
from dtdialog.understanding.entities import EntityNormalizer
from dtdialog.understanding.subtrees import MAX_QUESTION_EDUS, QuestionPlan, split_question
from dtdialog.understanding.tried import TriedAction, extract_tried
from index.base import AnswerDocument, AnswerIndex, SearchQuery
from index.vocabulary import entity_words, is_entity_word
from parsers.base import RSTParser
from parsers.errors import InputError
from parsers.tree import DiscourseTree

# the stage constants and the generator stay importable from here, where callers have always found them
__all__ = ["CONTEXT_TERM_WEIGHT", "KEYWORDS_PER_SEARCH", "NUCLEUS_WEIGHT", "PHRASE_WEIGHT",
           "RESCUE_AGREEMENT", "RESCUE_TOPIC", "TOPIC_RATIO", "AgreementResult", "AnswerSelector",
           "CandidateGenerator", "CandidateScorer", "LexicalGenerator", "QuestionPlan", "RankOutcome",
           "RankedCandidate", "RuleScorer"]

_CACHE_SIZE = 50_000


@dataclass
class RankOutcome:
    """Everything one ranking step decided, for the session and the trace.

    ``record`` is the trace the stages wrote while deciding; ``to_dict`` returns it.
    """

    plan: QuestionPlan
    part_index: int
    query: SearchQuery
    requirements: list[str]
    candidates: list[RankedCandidate]
    rejected: list[RankedCandidate] = field(default_factory=list)
    constraints: list[Constraint] = field(default_factory=list)
    followup_tree: DiscourseTree | None = None
    record: StepRecord = field(default_factory=StepRecord)
    #: what the customer reported done so far (memory + DT-Q + this step's reply), for the session to keep
    tried: list[TriedAction] = field(default_factory=list)

    def to_dict(self, *, limit: int = 10) -> dict[str, Any]:
        """Return the JSON trace of this step (top ``limit`` kept and rejected candidates)."""
        return self.record.to_dict(limit=limit)


class AnswerSelector:
    """Plans a question and ranks stored answers for any step of its dialogue."""

    def __init__(self, *, index: AnswerIndex, parser: RSTParser, config: EngineConfig | None = None,
                 generator: CandidateGenerator | None = None, scorer: CandidateScorer | None = None,
                 normalizer: EntityNormalizer | None = None, calibrator: Calibrator | None = None,
                 stages: StageSet = TREE_STAGES, logged_questions: Any = None) -> None:
        self.index = index
        #: the logged openings nearest a first message (``dtdialog.ranking.logged_questions``); None: no such evidence
        self.logged_questions = logged_questions
        #: the tree-reading stages: the engine's, or the ablation's without the tree (``EngineSpec.use_tree``)
        self.stages = stages
        #: P(right) of a ranking's top answer (``dtdialog.selection.confidence``); the position stage asks whether an
        #: opening would be confident, the manager whether to abstain. None: no confidence, never abstain.
        self.calibrator = calibrator
        self.parser = parser
        self.config = config or EngineConfig()
        self.generator = generator or LexicalGenerator(index=index)
        self.scorer = scorer or RuleScorer(config=self.config)
        self.normalizer = normalizer or EntityNormalizer()
        #: called with (question, its spaCy ``AnalyzedText``, the parser's NLP backend) when the rule parser plans a
        #: question (``_parse_question``): the learned ranker's SG feature reuses the parse (``assembly``)
        self.question_analyzed: tuple = ()
        options = self.config.agreement
        self.agreement = RhetoricalAgreement(table=AgreementTable.load(options.agreement_table),
                                              normalizer=self.normalizer, ratio=options.agreement_ratio,
                                              overlap_scope=options.overlap_scope)
        # Parsing is not serialised: the API's engine threads parse side by side (a turn's short question beside
        # another client's long search). A spaCy pipeline's inference keeps its state per call (the parser's
        # transition states and activations, run without the GIL) and only reads the model's weights; the
        # tokenizer's and string store's caches are only touched with the GIL held. docs/api.md ("Sessions and
        # concurrency") lists what was checked; tests/reliability/test_engine_lanes.py compares results.
        self._cache_lock = threading.Lock()
        self._analyses: OrderedDict[str, AnswerAnalysis] = OrderedDict()

    @property
    def remembers_tried(self) -> bool:
        """Return False when the engine runs without the tree: what the customer tried is neither read nor kept."""
        return self.stages.uses_tree

    # --- planning -----------------------------------------------------------
    def parse(self, text: str) -> DiscourseTree:
        """Return the DT of ``text`` (safe to call from several threads at once)."""
        return self.parser.parse(text)

    def plan(self, question: str) -> QuestionPlan:
        """Return DT-Q and its ordered parts. Raises ``InputError`` for empty text."""
        if not question or not question.strip():
            raise InputError("the question is empty")
        self._prepare(question, ())
        tree = self._parse_question(question)
        if len(tree.edus) > MAX_QUESTION_EDUS:  # bounded work per turn: plan from the question's first EDUs
            question = tree.text[:tree.edus[MAX_QUESTION_EDUS - 1].end]
            tree = self._parse_question(question)
        return split_question(self.stages.shape(tree), question=question)

    def _parse_question(self, question: str) -> DiscourseTree:
        """Return the DT of ``question``; with ``question_analyzed`` hooks and a parser that hands out its analysis
        (``RuleParser.analyze_and_parse``), also hand them ``(question, analysis, nlp)`` (the SG feature would
        otherwise parse the same question again, on another thread). The analysis is of the cleaned text, which
        differs from ``question`` when cleaning removed markup or entities: each hook checks ``analysis.text``.
        """
        analyze_and_parse = getattr(self.parser, "analyze_and_parse", None)
        if not self.question_analyzed or analyze_and_parse is None:
            return self.parse(question)
        analyzed, tree = analyze_and_parse(question)
        for hook in self.question_analyzed:
            hook(question, analyzed, self.parser.nlp)
        return tree

    def _prepare(self, question: str, followups: Sequence[str]) -> None:
        """Let the generator start work for the step of ``question`` and ``followups`` (optional: ``prepare``)."""
        prepare = getattr(self.generator, "prepare", None)
        if prepare is not None:
            prepare(question=question, followups=followups)

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
                     size: int = 10, context_ids: Sequence[str] = (),
                     tried: Sequence[TriedAction] = (), context_reply: str | None = None) -> RankOutcome:
        """Return the full outcome of ``rank`` (query, requirements, kept and rejected candidates, trace record).

        Only the last of ``context_ids`` lends the follow-up words to the query, and a candidate's
        retrieval score counts words only that answer supplied at ``CONTEXT_TERM_WEIGHT``. ``tried`` is what the
        customer reported done in earlier replies (the session's memory); DT-Q's and this reply's reports are
        added, and answers whose main recommendation repeats one are demoted (``already_tried_penalty``).
        ``context_reply`` is the customer's reply to the last of ``context_ids`` (None: the last of ``followups``; a
        dialogue manager whose later replies of a step answer its own questions passes the step's first).
        """
        plan = question if isinstance(question, QuestionPlan) else self.plan(question)
        self._prepare(plan.question, followups)
        config = self.config
        tools, record, depth = self._tools(), StepRecord(), config.retrieval.candidates
        step_plan = plan_step(plan, step=step, followups=followups, constraints=_as_constraints(constraints),
                              context_ids=context_ids, tools=tools, record=record)
        query = form_query(step_plan, exclude_ids=exclude_ids, size=depth,
                           whole_question=config.retrieval.whole_question, record=record)
        pool = gather_candidates(step_plan, query, generator=self.generator, followups=followups,
                                 exclude_ids=exclude_ids, size=depth, tools=tools, record=record)
        agreed = self.stages.agreement(step_plan, pool, agreement=self.agreement, record=record)
        candidates = describe_candidates(step_plan, agreed, tools=tools)
        scored = score_candidates(step_plan, candidates, scorer=self.scorer, followups=followups, record=record)
        done = self.stages.tried(step_plan, tried, tools=tools, record=record)
        demotions = config.demotions
        scored = demote_tried(scored, done, penalty=demotions.already_tried_penalty, tools=tools, record=record)
        scored = demote_clashes(scored, [plan.question, *followups], penalty=demotions.condition_clash_penalty,
                                record=record)
        scored = demote_presuppositions(scored, [plan.question, *followups, *self._texts(context_ids)],
                                        penalty=demotions.presupposition_penalty, tools=tools, record=record,
                                        customer=[plan.question, *followups])
        scored = demote_branch_clashes(scored, step_plan, context_reply if context_reply is not None
                                       else next((f for f in reversed(followups) if f.strip()), ""),
                                       penalty=demotions.branch_clash_penalty, tools=tools, record=record)
        first_step = not step_plan.is_followup or not context_ids
        scored = mark_logged_opening(scored, plan.question, followups, first_step=first_step,
                                     logged=self.logged_questions, at=config.abstention.logged_opening_at,
                                     tools=tools, record=record)
        choice = choose(candidates, scored, record=record)
        # nothing delivered yet (the question alone, or a detail given after an abstention): the answer opens
        choice = order_by_position(choice, first_step=first_step,
                                   mode=config.position.step1_position,
                                   margin=config.position.opening_margin, record=record,
                                   confidence=self.calibrator.confidence if self.calibrator is not None else None,
                                   confident_at=config.abstention.abstain_below)
        return RankOutcome(plan=plan, part_index=step_plan.part_index, query=query,
                           requirements=list(record.requirements), candidates=choice.kept, rejected=choice.rejected,
                           constraints=step_plan.constraints, followup_tree=step_plan.followup_tree, record=record,
                           tried=done)

    def _texts(self, doc_ids: Sequence[str]) -> list[str]:
        """Return the texts of the answers ``doc_ids`` still in the index (what the bot already said)."""
        return [doc.text for doc in map(self._document, doc_ids) if doc is not None]

    def _tools(self) -> StageTools:
        # built per call from the current attributes, so a replaced normaliser or agreement is used at once
        return StageTools(normalizer=self.normalizer, agreement=self.agreement, parse=self._parse_reply,
                          analyze=self._analysis, document=self._document)

    def _parse_reply(self, text: str) -> DiscourseTree:
        """Return the DT of a customer's reply, shaped as the question's is (``StageSet.shape``); its analysis goes to
        the ``question_analyzed`` hooks as the question's does, so they need not parse it again."""
        return self.stages.shape(self._parse_question(text))

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

    def tried_in(self, text: str) -> list[TriedAction]:
        """Return what a customer's reply reports done or ruled out ("I replaced the plug"); none without the tree."""
        if not self.remembers_tried or not text.strip():
            return []
        return extract_tried(self._parse_reply(text), self.normalizer)

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

    def answer_tree(self, doc: AnswerDocument) -> DiscourseTree:
        """Return the DT of a stored answer: the one its analysis was made from (parsed at most once)."""
        tree = self._analysis(doc).tree
        if tree is None:  # an analysis made by a replaced agreement checker that keeps no tree
            tree = DiscourseTree.from_dict(doc.tree) if doc.tree else self.parse(doc.text)
        return tree

    def answer_terms(self, doc: AnswerDocument) -> frozenset[str]:
        """Return the entity terms of a stored answer: the ones the candidate stage compares for near-duplicates."""
        return self._analysis(doc).terms

    def answer_edus(self, doc: AnswerDocument):
        """Return the EDUs of a stored answer (from its stored DT, else by parsing its text)."""
        return self.answer_tree(doc).edus


def _as_constraints(items: Sequence[str | Constraint]) -> list[Constraint]:
    out: list[Constraint] = []
    for item in items:
        if isinstance(item, Constraint):
            out.append(item)
            continue
        found = extract_constraints(str(item))
        if not found:
            words = tuple(w for w in entity_words(str(item)) if is_entity_word(w))[:4]
            found = [Constraint("cannot", str(item), words)] if words else []
        out.extend(found)
    return out

