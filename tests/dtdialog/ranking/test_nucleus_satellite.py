"""Nucleus and satellite features: the answer against the problem itself and against the backstory, apart.

Hand-made trees and a fake encoder (cosine = shared words), so the test pins which EDUs each side holds and which
texts are encoded, independent of any RST parser or MiniLM.
"""

from __future__ import annotations

import numpy as np
import pytest
from engine_helpers import build_tree, make_doc

from dtdialog.ranking.features import DT_FEATURES, FEATURE_SETS, RELATION_GATED, SIDE_FEATURES, list_features
from dtdialog.ranking.signals import SignalExtractor
from dtdialog.selection.agreement import AgreementResult
from dtdialog.selection.scoring import RankedCandidate
from dtdialog.understanding.subtrees import part_sides, split_question
from index.dense_store import TermStats
from index.vocabulary import bm25_tokens

#: the paper's question as the rules parser builds it: the tried actions are the Concession's satellite
CONCESSION_Q = ("Joint", "NN", ["My car will not start.", ("Concession", "SN", [
    ("Joint", "NNN", ["I have checked the spark plugs,", "replaced the battery,",
                      "and replaced the coils and the solenoid,"]),
    "but it still could not start."])])
FACTUAL_Q = ("Elaboration", "NS", ["My car will not start.", "It is a 2009 Civic."])
ANSWERS = {
    "fuel#1": "Check for spark and fuel: the car will not start without them.",
    "coils#1": "Replace the coils, the solenoid and the battery, then check the spark plugs.",
    "wax#1": "Wax the paint twice a year.",
}


class WordEncoder:
    """Unit bag-of-words vectors over a fixed vocabulary; records every batch it encodes."""

    def __init__(self, vocabulary: list[str]) -> None:
        self.vocabulary = {w: i for i, w in enumerate(sorted(set(vocabulary)))}
        self.batches: list[list[str]] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.batches.append(list(texts))
        out = np.zeros((len(texts), len(self.vocabulary)), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in bm25_tokens(text):
                if token in self.vocabulary:
                    out[row, self.vocabulary[token]] = 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


class FakeStore:
    """What ``DenseSignals`` and ``SignalExtractor`` ask of a dense store: cosines, hubness and term statistics."""

    model = "all-MiniLM-L6-v2"  # the label ``DenseSignals`` checks against the query encoder's

    def __init__(self, encoder: WordEncoder) -> None:
        self.ids = list(ANSWERS)
        self.vectors = encoder.encode(list(ANSWERS.values()))
        encoder.batches.clear()
        self.terms = TermStats.of(list(ANSWERS.values()))

    def cosines(self, vector: np.ndarray, ids) -> np.ndarray:
        return np.array([float(self.vectors[self.ids.index(i)] @ vector) for i in ids])

    def hub_of(self, ids) -> np.ndarray:
        return np.zeros(len(ids))


@pytest.fixture()
def extractor():
    from dtdialog.ranking.dense_signals import DenseSignals

    words = [t for spec in (CONCESSION_Q, FACTUAL_Q) for t in bm25_tokens(build_tree(spec).text)]
    encoder = WordEncoder(words + [t for text in ANSWERS.values() for t in bm25_tokens(text)])
    dense = DenseSignals(store=FakeStore(encoder), encoder=encoder, query_threads=None)
    return SignalExtractor(dense=dense, use_sg=False), encoder


def candidates() -> list[RankedCandidate]:
    none = AgreementResult(verdict=True, score=0.5, addressed=0, required=0, overlap=["car"])
    return [RankedCandidate(document=make_doc(doc_id, text), retrieval_score=1.0, agreement=none)
            for doc_id, text in ANSWERS.items()]


def test_a_concession_splits_into_the_problem_and_the_tried_actions():
    sides = part_sides(split_question(build_tree(CONCESSION_Q)).parts[0])
    assert sides.nuclei_text == "My car will not start. but it still could not start."
    assert sides.satellites_text == ("I have checked the spark plugs, replaced the battery, "
                                     "and replaced the coils and the solenoid,")


def test_a_factual_question_is_all_nuclei():
    sides = part_sides(split_question(build_tree(FACTUAL_Q)).parts[0])
    assert [e.index for e in sides.nuclei] == [0, 1] and sides.satellites == ()


def test_the_answer_is_compared_with_each_side_in_one_extra_batch(extractor):
    scorer, encoder = extractor
    plan = split_question(build_tree(CONCESSION_Q))
    rows = list_features(scorer.signals(plan=plan, part_index=0, followups=[], candidates=candidates()))
    # the question, then its two sides in one encoder call
    assert encoder.batches[1:] == [["My car will not start. but it still could not start.",
                                    "I have checked the spark plugs, replaced the battery, and replaced the coils "
                                    "and the solenoid,"]]
    fuel, coils, wax = rows
    assert all(r["has_relation"] == 1.0 for r in rows)
    # the answer about what is left to check is closest to the problem, the one repeating the tried actions to the
    # backstory, and each side's best has gap 0
    assert fuel["nucleus_dense_gap"] == 0.0 > coils["nucleus_dense_gap"]
    assert coils["satellite_dense_gap"] == 0.0 > fuel["satellite_dense_gap"]
    assert coils["satellite_bm25"] == 1.0 > fuel["satellite_bm25"]
    assert fuel["nucleus_bm25"] == 1.0 and wax["nucleus_dense"] == 0.0 and wax["nucleus_bm25"] == 0.0
    # a gated copy carries the signal where there is a relation
    assert fuel["agreement_score_if_relation"] == fuel["agreement_score"] == 0.5


def test_without_a_relation_nothing_more_is_encoded_and_the_gated_features_are_zero(extractor):
    scorer, encoder = extractor
    plan = split_question(build_tree(FACTUAL_Q))
    rows = list_features(scorer.signals(plan=plan, part_index=0, followups=[], candidates=candidates()))
    assert len(encoder.batches) == 1  # the question only
    for row in rows:
        assert row["has_relation"] == 0.0 and all(row[name] == 0.0 for name in RELATION_GATED)
        assert row["agreement_score"] == 0.5  # the ungated signal a model fitted before the gated copies reads


def test_the_new_features_are_tree_features():
    assert set(SIDE_FEATURES) | {"has_relation"} <= set(DT_FEATURES)
    assert not set(DT_FEATURES) & set(FEATURE_SETS["hybrid"])  # the no-tree ablation never sees them


def test_a_model_without_the_side_features_encodes_nothing_more(extractor):
    from sklearn.linear_model import LogisticRegression

    from dtdialog.ranking.learned_scorer import RankerModel
    from eval.ranker_rows import RecordingScorer

    fit = LogisticRegression().fit(np.array([[0.0], [1.0]]), [0, 1])
    assert not RankerModel(estimator=fit, feature_names=("agreement_score",)).uses_sides
    assert RankerModel(estimator=fit, feature_names=("nucleus_dense_gap",)).uses_sides
    scorer, encoder = extractor
    scorer.use_sides = False  # what the factory sets for such a model
    rows = list_features(scorer.signals(plan=split_question(build_tree(CONCESSION_Q)), part_index=0, followups=[],
                                        candidates=candidates()))
    assert len(encoder.batches) == 1 and all(row[name] == 0.0 for row in rows for name in SIDE_FEATURES)
    assert rows[0]["has_relation"] == 1.0
    # training records every feature, whichever ones the shipped model reads
    assert RecordingScorer(extractor=scorer).extractor.use_sides
