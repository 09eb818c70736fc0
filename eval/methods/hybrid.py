"""Hybrid retrieval + learned ranker methods: ``hybrid`` (no DT features) and ``hybrid+dt`` (all features).

Both run the engine's ``AnswerSelector`` over a temporary index of the pool (as ``dtq`` does) with
the ``HybridGenerator`` (lexical top-k + dense top-k) and ``LearnedScorer``; they differ only in
the shipped model: ``ranker-v1-hybrid.joblib`` (retrieval features) or ``ranker-v1.joblib``
(retrieval + rhetorical-agreement, rr_edu, entity, compatibility and SG features).

The shipped models are fitted on all of mechanics_qa_dev. On that pool each question is scored by
the cross-validation model that held it out (kept by the evaluation, see ``eval.out_of_fold``), so the
mechanics figures are out-of-fold, as in ``python -m eval.train_ranker``; a model without fold models
is labelled in-sample there.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eval.datasets import PoolAnswer
from eval.methods.base import MethodUnavailable
from eval.methods.dtq import DTQMethod
from eval.methods.pool_index import pool_digest, training_pool_note

__all__ = ["HybridMethod", "hybrid_dt_method", "hybrid_method", "pool_digest"]

MODEL_OF = {"hybrid": "ranker-v1-hybrid.joblib", "hybrid+dt": "ranker-v1.joblib"}


class HybridMethod(DTQMethod):
    """The engine with hybrid candidates and a learned ranker (``feature_set`` picks the shipped model)."""

    def __init__(self, *, feature_set: str = "hybrid+dt", model_path: str | Path | None = None,
                 candidates: int | None = None, progress: bool = False, parser: str | None = None) -> None:
        from index.dense import INSTALL_HINT, dense_available

        if feature_set not in MODEL_OF:
            raise MethodUnavailable(f"unknown feature set {feature_set!r}; expected one of {', '.join(MODEL_OF)}")
        if not dense_available():
            raise MethodUnavailable(f"the [dense] extra is not installed ({INSTALL_HINT})")
        super().__init__(parser=parser, use_context=True, candidates=candidates, progress=progress, ranker="learned")
        from dtdialog.ranking.learned_scorer import MODELS_DIR

        self.model_path = Path(model_path) if model_path is not None else MODELS_DIR / MODEL_OF[feature_set]
        self.feature_set = feature_set
        self.require_agreement = False  # agreement is a feature only, as in training
        self.name = feature_set
        self.label = self._label = f"Hybrid dense+lexical, learned ranker ({feature_set} features)"

    def fit(self, *, pool: Sequence[PoolAnswer]) -> None:
        from dtdialog.ranking.learned_scorer import RankerModel
        from eval.out_of_fold import folds_for

        model = RankerModel.load(self.model_path)
        self.ranker_model = str(self.model_path)
        super().fit(pool=pool)
        self.label = self._label  # DTQMethod.fit names the engine's ranker; this method is always the learned one
        self.label += training_pool_note(model, pool, folds_for(model, self.model_path))



def hybrid_method(**options) -> HybridMethod:
    """Return the ``hybrid`` ablation: learned ranker without discourse-tree features."""
    return HybridMethod(feature_set="hybrid", **options)


def hybrid_dt_method(**options) -> HybridMethod:
    """Return ``hybrid+dt``: learned ranker with every feature (the shipped ``dtq`` model)."""
    return HybridMethod(feature_set="hybrid+dt", **options)
