"""Stage 5a: the features every scorer reads - continuation, question and step match, constraints, context, topic.

The rule scorer weighs them (``scoring.RuleScorer``) and the learned scorer adds its own signals on top,
so both see the same inputs. The retrieval score is discounted here for words only the previous answer lent.
"""

from __future__ import annotations

import math

from dtdialog.selection.scoring import RankedCandidate
from dtdialog.selection.stages.agreement_stage import AgreedCandidate
from dtdialog.selection.stages.plan import StepPlan
from dtdialog.selection.stages.tools import StageTools
from index.base import AnswerDocument
from parsers.tree import DiscourseTree

#: A candidate's retrieval score counts the words it shares only with the previous answer (not with the
#: user's reply or the question) at this weight: the user's own words lead, the answer only lends referents.
CONTEXT_TERM_WEIGHT = 0.5
#: Question terms in the main clause (the nucleus chain from the DT-Q root) weigh this much more than satellite ones.
NUCLEUS_WEIGHT = 1.5
#: A multi-word entity term ("spark plug", "ignition coil") is more specific than a single word: this much weight.
PHRASE_WEIGHT = 2.0


def describe_candidates(step: StepPlan, agreed: list[AgreedCandidate], *, tools: StageTools) -> list[RankedCandidate]:
    """Return the agreed candidates as unscored ``RankedCandidate``s with their features, in the same order."""
    normalizer = tools.normalizer
    previous = step.previous
    question_terms = normalizer.terms_of_text(step.plan.question)
    own_terms, borrowed_terms = frozenset(), frozenset()
    if previous is not None and step.is_followup:
        own_terms = _singles(normalizer.terms_of_edus(step.followup_tree.edus) | normalizer.terms_of_edus(step.part.edus))
        borrowed_terms = _singles(tools.analyze(previous).terms) - own_terms
    candidates: list[RankedCandidate] = []
    for item in agreed:
        doc, analysis = item.candidate.document, item.candidate.analysis
        features = {
            "continuation": 1.0 if continues(previous, doc) else 0.0,
            "question_match": question_match(question_terms, doc, tools),
            # an A1 answered an opening question, an A2 a first follow-up: same role, better fit
            "step_match": 1.0 if doc.position == 2 * step.step + 1 else 0.0,
            "constraint_violations": float(sum(c.violated_by(analysis.terms, normalizer) for c in step.constraints)),
        }
        retrieval = float(item.candidate.hit.score)
        if borrowed_terms:
            share = borrowed_share(analysis.terms, own_terms, borrowed_terms)
            features["context_share"] = share
            retrieval *= 1.0 - (1.0 - CONTEXT_TERM_WEIGHT) * share
        candidates.append(RankedCandidate(document=doc, retrieval_score=retrieval, agreement=item.agreement,
                                          features=features, matched=dict(item.candidate.hit.matched or {}),
                                          analysis=analysis))
    if not step.is_followup:
        # the topic is the issue the user raised; a follow-up step is steered by C_i and the answer it replies
        # to instead (context terms, continuation), so it is not held to the question's wording
        weights = topic_terms(step.plan.tree if len(step.plan.parts) == 1 else None, step.part.edus, tools)
        add_topic_features(candidates, weights, {c.document.id: candidate_terms(c.document, tools) for c in candidates})
    return candidates


def topic_terms(tree: DiscourseTree | None, edus, tools: StageTools) -> dict[str, float]:
    """Return the step's topic terms with weights: phrases and main-clause terms count more.

    ``tree`` (the whole DT-Q, for a one-part question) marks its nucleus-chain EDUs as the main
    clause; a multi-part question's part is weighted flat, since its own nucleus is a sub-tree.
    """
    main = {e.index for e in tree.nucleus_chain_edus()} if tree is not None else set()
    weights: dict[str, float] = {}
    for edu in edus:
        factor = NUCLEUS_WEIGHT if edu.index in main else 1.0
        for term in tools.normalizer.terms_of_edu(edu):
            weight = factor * (PHRASE_WEIGHT if " " in term else 1.0)
            weights[term] = max(weights.get(term, 0.0), weight)
    return weights


def add_topic_features(candidates: list[RankedCandidate], weights: dict[str, float],
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


def candidate_terms(doc: AnswerDocument, tools: StageTools) -> frozenset[str]:
    """Return the terms of an answer plus its logged opening question (what the answer is about)."""
    logged = str((doc.meta or {}).get("question", ""))
    terms = tools.analyze(doc).terms
    return terms | tools.normalizer.terms_of_text(logged) if logged else terms


def question_match(question_terms: frozenset[str], doc: AnswerDocument, tools: StageTools) -> float:
    """Return the share of the user's question terms found in the answer's logged opening question."""
    logged = str((doc.meta or {}).get("question", ""))
    if not logged or not question_terms:
        return 0.0
    singles = {t for t in question_terms if " " not in t}
    if not singles:
        return 0.0
    return len(singles & tools.normalizer.terms_of_text(logged)) / len(singles)


def continues(previous: AnswerDocument | None, doc: AnswerDocument) -> bool:
    """Return True when ``doc`` is the next answer after ``previous`` in the same logged dialogue."""
    return (previous is not None and doc.dialogue_id == previous.dialogue_id
            and doc.position == previous.position + 2)


def borrowed_share(terms: frozenset[str], own: frozenset[str], borrowed: frozenset[str]) -> float:
    """Return the share of a candidate's query-matching terms that only the previous answer supplied."""
    n_own, n_borrowed = len(terms & own), len(terms & borrowed)
    return n_borrowed / (n_own + n_borrowed) if n_own + n_borrowed else 0.0


def _singles(terms: frozenset[str]) -> frozenset[str]:
    return frozenset(t for t in terms if " " not in t)
