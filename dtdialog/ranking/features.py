"""Named features of (query, candidate answer) pairs for the learned ranker.

Features are computed per *candidate list* (one dialogue step), because several of them are
query-normalised: a cosine of 0.55 is strong for one question and weak for another, while its gap
to the best candidate of the same list or its rank is comparable across questions.

Two feature sets (``FEATURE_SETS``):

``hybrid`` - retrieval signals only:
  * ``lexical``: the lexical index score divided by the best lexical score of the list
    (0 for a candidate only the dense retriever found);
  * ``lexical_rr``: 1 / (1 + lexical rank), 0 when not retrieved lexically;
  * ``bm25``: Okapi BM25 of the whole question (plus follow-ups) against the answer, with the
    stored answers' statistics, divided by the best of the list; ``bm25_rr``: 1 / (1 + its rank)
    (the engine's lexical query covers one DT-Q part with a keyword cap; this covers everything);
  * ``dense``: cosine of the query and answer MiniLM embeddings;
  * ``dense_gap``: ``dense`` minus the best ``dense`` of the list; ``dense_z``: z-score in the list;
  * ``dense_rr``: 1 / (1 + dense rank in the list);
  * ``dense_csls``: ``dense - 0.5 * hub`` where hub is the answer's mean cosine to its 10 nearest
    stored answers (CSLS hubness correction: generic answers stop winning every query);
  * ``dense_csls_gap``, ``dense_csls_rr``: the same normalisations of ``dense_csls``;
  * ``term_overlap``: share of the question's content terms found in the answer;
  * ``log_answer_words``: log(1 + answer words); ``length_ratio``: log answer words - log query words.

``hybrid+dt`` - plus the discourse-tree signals:
  * ``agreement_verdict`` (0/1) and ``agreement_score`` of rhetorical agreement (``dtdialog.selection.agreement``);
  * ``addressed`` and ``required``: Q relations addressed / to address; ``addressed_share``
    (1 when the part has no non-default relation);
  * ``rr_edu_matches``: query ``Relation [words]`` terms that match an answer ``rr_edu`` term
    (same relation, at least one shared word);
  * ``entity_overlap``: entity terms shared by the related EDUs of the question and the answer
    (the agreement check's overlap), capped at 5;
  * ``compat_any`` / ``compat_all``: whether some / every question relation has a compatible
    answer relation in the agreement table, regardless of entities (relation-compatibility flags);
  * ``sg``: the syntactic-generalization score of the paper's Baseline 2 (``dtdialog.selection.syntactic_generalization``);
  * ``has_relation``: 1 when the step's DT-Q part has a non-default relation, else 0;
  * ``nucleus_dense``, ``nucleus_dense_gap``, ``nucleus_bm25`` and the same three ``satellite_*``: the answer
    against the part's nuclei text and against its satellites text apart (``subtrees.part_sides``): cosine, its
    gap to the best of the list, and BM25 as a share of the best, so a long backstory does not swamp the problem;
  * ``agreement_verdict_if_relation``, ``agreement_score_if_relation``, ``entity_overlap_if_relation``: the
    same three signals times ``has_relation``.

Relation gating: every feature of ``RELATION_GATED`` is 0 when ``has_relation`` is 0, so a linear model learns its
weight only from questions where there is a relation to agree with. On a factual question the agreement verdict,
score and entity overlap are a plain term overlap with the question (``RhetoricalAgreement.check``); their gated
copies are the tree's signal alone. The ungated ones stay as they were, so a model fitted before the gated
features existed is fed what it was fitted on; the other DT features are already 0 (or constant) without a relation.

Missing signals are 0 (e.g. no dense extra: the dense features are all 0 and a model trained
with them must not be used; ``LearnedScorer`` checks that).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

HYBRID_FEATURES: tuple[str, ...] = (
    "lexical", "lexical_rr", "bm25", "bm25_rr", "dense", "dense_gap", "dense_z", "dense_rr", "dense_csls", "dense_csls_gap",
    "dense_csls_rr", "term_overlap", "log_answer_words", "length_ratio",
)
SIDE_FEATURES: tuple[str, ...] = (
    "nucleus_dense", "nucleus_dense_gap", "nucleus_bm25", "satellite_dense", "satellite_dense_gap", "satellite_bm25",
)
#: Signals that are a plain term overlap on a factual question, and their copies gated by ``has_relation``.
GATED_COPIES: dict[str, str] = {name: f"{name}_if_relation"
                                for name in ("agreement_verdict", "agreement_score", "entity_overlap")}
#: The features that are 0 when the question has no non-default relation.
RELATION_GATED: tuple[str, ...] = (*GATED_COPIES.values(), *SIDE_FEATURES)
DT_FEATURES: tuple[str, ...] = (
    "agreement_verdict", "agreement_score", "addressed", "required", "addressed_share", "rr_edu_matches",
    "entity_overlap", "compat_any", "compat_all", "sg", "has_relation", *RELATION_GATED,
)
FEATURE_SETS: dict[str, tuple[str, ...]] = {
    "hybrid": HYBRID_FEATURES,
    "hybrid+dt": HYBRID_FEATURES + DT_FEATURES,
}
#: What each feature means to a support agent reading ``chat --explain=details`` or the page's details view.
FEATURE_LABELS: dict[str, str] = {
    "lexical": "keyword search score (share of the best)",
    "lexical_rr": "rank in the keyword search",
    "bm25": "shared wording with the whole question (share of the best)",
    "bm25_rr": "rank by shared wording",
    "dense": "similar meaning to the question",
    "dense_gap": "how close in meaning, next to the best match",
    "dense_z": "how much closer in meaning than the other answers",
    "dense_rr": "rank by meaning",
    "dense_csls": "similar meaning, generic answers discounted",
    "dense_csls_gap": "how close in meaning, next to the best match (generic answers discounted)",
    "dense_csls_rr": "rank by meaning (generic answers discounted)",
    "term_overlap": "share of the question's terms in the answer",
    "log_answer_words": "answer length",
    "length_ratio": "answer length against question length",
    "agreement_verdict": "answers every relation of the question",
    "agreement_score": "rhetorical agreement score",
    "addressed": "question relations answered",
    "required": "question relations to answer",
    "addressed_share": "share of the question relations answered",
    "rr_edu_matches": "relation phrases matched",
    "entity_overlap": "shared things (parts, symptoms) in related phrases",
    "compat_any": "some question relation has a matching answer relation",
    "compat_all": "every question relation has a matching answer relation",
    "sg": "shared phrase structure",
    "has_relation": "the question has a relation to answer",
    "agreement_verdict_if_relation": "answers every relation of the question (questions with one)",
    "agreement_score_if_relation": "rhetorical agreement score (questions with a relation)",
    "entity_overlap_if_relation": "shared things in related phrases (questions with a relation)",
    "nucleus_dense": "similar meaning to the problem itself",
    "nucleus_dense_gap": "how close in meaning to the problem itself, next to the best match",
    "nucleus_bm25": "shared wording with the problem itself (share of the best)",
    "satellite_dense": "similar meaning to the story around the problem",
    "satellite_dense_gap": "how close in meaning to the story around the problem, next to the best match",
    "satellite_bm25": "shared wording with the story around the problem (share of the best)",
    # the rule scorer's terms and the engine's bonuses
    "retrieval": "keyword search score (share of the best)",
    "agreement": "rhetorical agreement score",
    "continuation": "continues the logged dialogue",
    "question_match": "shared wording with the question",
    "step_match": "fits this step of the conversation",
    "topic": "covers the question's topic",
    "topic_ratio": "covers the topic, compared with the best answer",
}


#: The plain summary speaks of what a feature is about, not of each feature: (prefix or name, what it measures).
FEATURE_GROUPS: tuple[tuple[str, str], ...] = (
    ("dense", "its closeness in meaning to the question"),
    ("lexical", "the words it shares with the question"), ("bm25", "the words it shares with the question"),
    ("term_overlap", "the words it shares with the question"),
    ("agreement", "how its discourse answers the question's"), ("addressed", "how its discourse answers the question's"),
    ("required", "how its discourse answers the question's"), ("compat", "how its discourse answers the question's"),
    ("rr_edu", "how its discourse answers the question's"), ("entity_overlap", "how its discourse answers the question's"),
    ("sg", "its phrases built like the question's"),
    ("nucleus", "its closeness to the problem itself"), ("satellite", "its closeness to the story around the problem"),
    ("has_relation", "how its discourse answers the question's"),
    ("log_answer_words", "its length"), ("length_ratio", "its length"),
)


def feature_group(name: str) -> str:
    """Return what a feature is about, in a support agent's words (``FEATURE_GROUPS``; its label when none)."""
    return next((group for prefix, group in FEATURE_GROUPS if name.startswith(prefix)), feature_label(name))


def feature_label(name: str) -> str:
    """Return the agent-readable label of a feature (its name when it has none)."""
    return FEATURE_LABELS.get(name, name.replace("_", " "))


CSLS_WEIGHT = 0.5
MAX_ENTITY_OVERLAP = 5


@dataclass
class CandidateSignals:
    """The raw signals of one candidate, before list normalisation.

    ``lexical`` is None when the lexical retriever did not return the candidate; ``dense`` is None
    without dense vectors. Counts are plain numbers; ``sg`` is None when not computed.
    """

    doc_id: str
    lexical: float | None = None
    bm25: float | None = None
    dense: float | None = None
    hub: float = 0.0
    query_terms: int = 0
    shared_terms: int = 0
    answer_words: int = 0
    query_words: int = 0
    agreement_verdict: bool = False
    agreement_score: float = 0.0
    addressed: int = 0
    required: int = 0
    rr_edu_matches: int = 0
    entity_overlap: int = 0
    compat_any: bool = False
    compat_all: bool = False
    sg: float | None = None
    has_relation: bool = False
    nucleus_dense: float | None = None
    nucleus_bm25: float | None = None
    satellite_dense: float | None = None
    satellite_bm25: float | None = None
    extra: dict[str, float] = field(default_factory=dict)


def _reciprocal_ranks(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Return 1/(1+rank) by descending value among ``present`` entries, 0 elsewhere (ties: list order)."""
    out = np.zeros(len(values))
    idx = np.flatnonzero(present)
    if idx.size:
        order = idx[np.argsort(-values[idx], kind="stable")]
        out[order] = 1.0 / (1.0 + np.arange(order.size))
    return out


def list_features(signals: Sequence[CandidateSignals]) -> list[dict[str, float]]:
    """Return one ``{feature name: value}`` dict per candidate, with every name of ``hybrid+dt``."""
    n = len(signals)
    if n == 0:
        return []
    lex_present = np.array([s.lexical is not None for s in signals])
    lex = np.array([s.lexical if s.lexical is not None else 0.0 for s in signals], dtype=float)
    lex_best = lex[lex_present].max() if lex_present.any() else 0.0
    dense_present = np.array([s.dense is not None and not math.isnan(s.dense) for s in signals])
    dense = np.array([s.dense if p else 0.0 for s, p in zip(signals, dense_present)], dtype=float)
    hub = np.array([s.hub for s in signals], dtype=float)
    csls = np.where(dense_present, dense - CSLS_WEIGHT * hub, 0.0)

    def gap(values: np.ndarray) -> np.ndarray:
        return np.where(dense_present, values - values[dense_present].max(), 0.0) if dense_present.any() \
            else np.zeros(n)

    if dense_present.sum() > 1:
        sd = dense[dense_present].std()
        dense_z = np.where(dense_present, (dense - dense[dense_present].mean()) / (sd + 1e-6), 0.0)
    else:
        dense_z = np.zeros(n)
    lexical_rr = _reciprocal_ranks(lex, lex_present)
    bm25_present = np.array([s.bm25 is not None for s in signals])
    bm25 = np.array([s.bm25 if s.bm25 is not None else 0.0 for s in signals], dtype=float)
    bm25_best = bm25.max() if bm25_present.any() else 0.0
    bm25_rr = _reciprocal_ranks(bm25, bm25_present & (bm25 > 0))
    dense_rr = _reciprocal_ranks(dense, dense_present)
    csls_rr = _reciprocal_ranks(csls, dense_present)
    dense_gap, csls_gap = gap(dense), gap(csls)
    sides = {side: _side_features(signals, side) for side in ("nucleus", "satellite")}
    out = []
    for i, s in enumerate(signals):
        answer_words = max(s.answer_words, 0)
        row = {
            "lexical": lex[i] / lex_best if lex_present[i] and lex_best > 0 else 0.0,
            "lexical_rr": lexical_rr[i],
            "bm25": bm25[i] / bm25_best if bm25_best > 0 else 0.0, "bm25_rr": bm25_rr[i],
            "dense": dense[i], "dense_gap": dense_gap[i], "dense_z": dense_z[i], "dense_rr": dense_rr[i],
            "dense_csls": csls[i], "dense_csls_gap": csls_gap[i], "dense_csls_rr": csls_rr[i],
            "term_overlap": s.shared_terms / s.query_terms if s.query_terms else 0.0,
            "log_answer_words": math.log1p(answer_words),
            "length_ratio": math.log1p(answer_words) - math.log1p(max(s.query_words, 0)),
            **_tree_signals(s),
        }
        for side in sides.values():
            row.update({name: values[i] for name, values in side.items()})
        row.update({gated: row[name] for name, gated in GATED_COPIES.items()})
        if not s.has_relation:
            row.update(dict.fromkeys(RELATION_GATED, 0.0))
        row.update(s.extra)
        out.append({k: float(v) for k, v in row.items()})
    return out


def _tree_signals(s: CandidateSignals) -> dict[str, float]:
    """Return one candidate's discourse-tree signals, which need no list normalisation."""
    return {
        "agreement_verdict": 1.0 if s.agreement_verdict else 0.0,
        "agreement_score": float(s.agreement_score),
        "addressed": float(s.addressed), "required": float(s.required),
        "addressed_share": s.addressed / s.required if s.required else 1.0,
        "rr_edu_matches": float(s.rr_edu_matches),
        "entity_overlap": float(min(s.entity_overlap, MAX_ENTITY_OVERLAP)),
        "compat_any": 1.0 if s.compat_any else 0.0, "compat_all": 1.0 if s.compat_all else 0.0,
        "sg": float(s.sg) if s.sg is not None else 0.0,
        "has_relation": 1.0 if s.has_relation else 0.0,
    }


def _side_features(signals: Sequence[CandidateSignals], side: str) -> dict[str, np.ndarray]:
    """Return ``<side>_dense``, ``<side>_dense_gap`` and ``<side>_bm25`` (share of the best) of every candidate."""
    raw = [getattr(s, f"{side}_dense") for s in signals]
    present = np.array([v is not None and not math.isnan(v) for v in raw])
    dense = np.array([v if p else 0.0 for v, p in zip(raw, present)], dtype=float)
    gap = np.where(present, dense - dense[present].max(), 0.0) if present.any() else np.zeros(len(raw))
    bm25 = np.array([getattr(s, f"{side}_bm25") or 0.0 for s in signals], dtype=float)
    best = bm25.max()
    return {f"{side}_dense": dense, f"{side}_dense_gap": gap,
            f"{side}_bm25": bm25 / best if best > 0 else np.zeros(len(raw))}


def feature_matrix(rows: Sequence[dict[str, float]], names: Sequence[str]) -> np.ndarray:
    """Return the ``(len(rows), len(names))`` float matrix of ``rows`` in the order of ``names``."""
    return np.array([[row.get(name, 0.0) for name in names] for row in rows], dtype=float).reshape(len(rows),
                                                                                                  len(names))
