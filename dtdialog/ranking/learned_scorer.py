"""The learned ranker: a scikit-learn model over named features, as the engine's ``CandidateScorer``.

``RankerModel`` is the fitted model plus the feature names it was trained on and a manifest
(feature set, training data, CV figures). It is saved with joblib next to a JSON manifest;
``RankerModel.load()`` without a path loads the shipped ``models/ranker-v1.joblib``.

``LearnedScorer.score`` computes the signals of the step's candidates (``SignalExtractor``),
turns them into features (``features.list_features``), scores them with the model and keeps every
candidate (the agreement verdict is a feature; it filters only with ``require_agreement``), best first. The score is the model
probability plus the engine's continuation / question-match / step-match bonuses (same weights as
``RuleScorer``; a single-step training set cannot learn those). Constraint violations still
multiply the score by ``1 - constraint_penalty`` per violation (dropped when the penalty is 1).

The chosen (top) candidate's ``features`` hold every feature value and, under
``contribution.<name>``, its contribution to the model's logit: for a linear model
``coef * standardised value`` (exact: the contributions plus ``contribution.intercept`` sum to
the logit); for any other model the drop in logit when the feature is set to its training mean
(an occlusion approximation, documented as such in the trace key ``contribution.method``).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from dtdialog.ranking.features import FEATURE_SETS, SIDE_FEATURES, feature_matrix, list_features
from dtdialog.ranking.signals import SignalExtractor
from dtdialog.selection.scoring import RankedCandidate
from dtdialog.setup.engine_config import EngineConfig
from dtdialog.understanding.subtrees import QuestionPlan
from parsers.errors import ConfigError, ModelNotAvailableError

MODELS_DIR = Path(__file__).resolve().parent / "models"
DEFAULT_MODEL = MODELS_DIR / "ranker-v1.joblib"
#: The shipped model without discourse-tree features (``hybrid``): the engine's ranker when it runs without the tree.
TREELESS_MODEL = MODELS_DIR / "ranker-v1-hybrid.joblib"
#: The version stamped into saved model files; ``RankerModel.load`` refuses a newer one.
MODEL_FORMAT = 2


@dataclass
class RankerModel:
    """A fitted scikit-learn classifier (``decision_function`` or ``predict_proba``) over ``feature_names``.

    It holds only what serving needs; the cross-validation models of a training run are the evaluation's
    (``eval.out_of_fold``).
    """

    estimator: Any
    feature_names: tuple[str, ...]
    manifest: dict[str, Any] = field(default_factory=dict)
    #: ``(estimator, its checked linear parts or None)``, made by ``_linear`` on first use
    _linear_cache: tuple[Any, Any] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        known = set(FEATURE_SETS["hybrid+dt"])
        unknown = [n for n in self.feature_names if n not in known]
        if unknown:
            raise ConfigError(f"ranker model uses unknown feature(s): {', '.join(unknown)}")

    @property
    def uses_dense(self) -> bool:
        return any("dense" in n for n in self.feature_names)  # nucleus_dense and satellite_dense too

    @property
    def uses_sides(self) -> bool:
        """Whether the model reads the nucleus / satellite features (each turn with a relation encodes two more texts)."""
        return any(n in SIDE_FEATURES for n in self.feature_names)

    @property
    def uses_sg(self) -> bool:
        return "sg" in self.feature_names

    def logits(self, X: np.ndarray) -> np.ndarray:
        """Return one real score per row (higher = better answer)."""
        if X.shape[0] == 0:
            return np.zeros(0)
        linear = self._linear()
        if linear is not None:
            return _linear_logits(linear, X)
        if hasattr(self.estimator, "decision_function"):
            return np.asarray(self.estimator.decision_function(X), dtype=float).reshape(-1)
        p = np.clip(self.estimator.predict_proba(X)[:, 1], 1e-9, 1 - 1e-9)
        return np.log(p / (1 - p))

    def _linear(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
        """Return the estimator's linear parts (``_linear_parts``) when they give its ``decision_function``, checked
        once per estimator on probe rows; else None.

        Why not ``decision_function``: a scikit-learn ``Pipeline`` builds a new class on every call (its metadata
        routing), cyclic garbage that a turn would leave for the collector, and a freeze of the heap while a turn
        runs (``dtdialog.runtime.gc_tuning``) could keep for good.
        """
        estimator, cached = self.estimator, self._linear_cache
        if cached is None or cached[0] is not estimator:
            cached = self._linear_cache = (estimator, _checked_linear_parts(estimator, len(self.feature_names)))
            # a race only computes the same parts twice
        return cached[1]

    def contributions(self, x: np.ndarray, *, means: np.ndarray | None = None) -> tuple[dict[str, float], str]:
        """Return ({feature: contribution to the logit}, method) for one feature row ``x``."""
        linear = self._linear()  # parts checked against the model: a scaler that does not centre gets occlusion
        if linear is not None:
            coef, center, scale, intercept = linear
            values = coef * (x - center) / scale
            out = {name: float(v) for name, v in zip(self.feature_names, values)}
            out["intercept"] = intercept
            return out, "linear"
        base = self.logits(x[None, :])[0]
        means = means if means is not None else np.zeros_like(x)
        out = {}
        for j, name in enumerate(self.feature_names):
            probe = x.copy()
            probe[j] = means[j]
            out[name] = float(base - self.logits(probe[None, :])[0])
        return out, "occlusion"

    # --- persistence --------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the model (joblib) and ``<path stem>.json`` manifest atomically; return the model path."""
        import joblib

        from parsers.files import atomic_write, atomic_write_text

        path = Path(path)
        model = {"format": MODEL_FORMAT, "estimator": self.estimator, "feature_names": list(self.feature_names),
                 "manifest": self.manifest}
        atomic_write(path, lambda fh: joblib.dump(model, fh, compress=3))
        atomic_write_text(path.with_suffix(".json"), json.dumps({**self.manifest, "feature_names":
                                                                 list(self.feature_names), "format": MODEL_FORMAT},
                                                                indent=2) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path | None = None) -> RankerModel:
        """Return the model at ``path`` (default: the shipped one); ``ModelNotAvailableError`` when missing or unreadable."""
        import joblib

        path = Path(path) if path is not None else DEFAULT_MODEL
        if not path.is_file():
            raise ModelNotAvailableError(f"no ranker model at {path}; train one with python -m eval.train_ranker")
        try:
            data = joblib.load(path)
            version = data.get("format", 1)  # format 1 also carried the evaluation's fold models: not read
            if not isinstance(version, int) or version > MODEL_FORMAT:
                raise ValueError(f"format {version!r} is newer than this dtdialog reads ({MODEL_FORMAT})")
            return cls(estimator=data["estimator"], feature_names=tuple(data["feature_names"]),
                       manifest=dict(data.get("manifest") or {}))
        except (OSError, KeyError, TypeError, ValueError, EOFError) as exc:
            raise ModelNotAvailableError(f"cannot read ranker model {path}: {exc}") from None

    @classmethod
    def load_deferred(cls, path: str | Path | None = None) -> RankerModel:
        """Return the model at ``path`` from its JSON manifest, its estimator unpickled on first use.

        Unpickling imports scikit-learn (1-3 s); a chat defers that past its first prompt
        (``build_engine(warm=False)``). Without a readable manifest beside the file this is ``load``.
        """
        path = Path(path) if path is not None else DEFAULT_MODEL
        try:
            data = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
            names, version = data.pop("feature_names"), data.pop("format")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return cls.load(path)
        if not path.is_file() or not isinstance(version, int) or version > MODEL_FORMAT or not isinstance(names, list):
            return cls.load(path)
        return cls(estimator=DeferredEstimator(path, tuple(names)), feature_names=tuple(names), manifest=data)


class DeferredEstimator:
    """Stands for the estimator of a model file until it is first used, then forwards to it (thread-safe).

    Loading checks the file's feature names against the manifest's: a mismatch (one file replaced without
    the other) is ``ModelNotAvailableError``, never a model scoring the wrong columns.
    """

    def __init__(self, path: Path, feature_names: tuple[str, ...]) -> None:
        self._path, self._names = path, feature_names
        self._estimator: Any = None
        self._lock = threading.Lock()

    def load(self) -> Any:
        """Return the estimator, unpickling it the first time."""
        with self._lock:
            if self._estimator is None:
                model = RankerModel.load(self._path)
                if model.feature_names != self._names:
                    raise ModelNotAvailableError(f"ranker model {self._path} does not match its manifest "
                                                 f"{self._path.with_suffix('.json')} (feature names differ)")
                self._estimator = model.estimator
            return self._estimator

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.load(), name)


def _linear_parts(estimator) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    """Return (coef, center, scale, intercept) of ``[StandardScaler] -> linear model``, else None."""
    steps = list(getattr(estimator, "named_steps", {}).values()) or [estimator]
    final = steps[-1]
    coef = getattr(final, "coef_", None)
    if coef is None:
        return None
    coef = np.asarray(coef, dtype=float).reshape(-1)
    center = np.zeros_like(coef)
    scale = np.ones_like(coef)
    for step in steps[:-1]:
        if hasattr(step, "scale_") or hasattr(step, "mean_"):
            if getattr(step, "mean_", None) is not None:
                center = center + np.asarray(step.mean_, dtype=float)
            if getattr(step, "scale_", None) is not None:
                scale = scale * np.asarray(step.scale_, dtype=float)
        else:
            return None
    intercept = float(np.ravel(getattr(final, "intercept_", 0.0))[0])
    return coef, center, scale, intercept


def _checked_linear_parts(estimator, features: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    """Return ``_linear_parts(estimator)`` if they reproduce its ``decision_function`` on probe rows, else None."""
    parts = _linear_parts(estimator) if hasattr(estimator, "decision_function") else None
    if parts is None:
        return None
    _, center, scale, _ = parts
    probe = np.random.default_rng(0).normal(size=(16, features)) * 3.0 * scale + center
    try:
        expected = np.asarray(estimator.decision_function(probe), dtype=float).reshape(-1)
        got = _linear_logits(parts, probe)
    except (ValueError, TypeError):  # another shape of model (several classes, other inputs)
        return None
    return parts if got.shape == expected.shape and np.allclose(got, expected, rtol=1e-12, atol=1e-12) else None


def _linear_logits(parts: tuple[np.ndarray, np.ndarray, np.ndarray, float], X: np.ndarray) -> np.ndarray:
    """Return the logits of ``X`` under linear parts: standardise as the scaler does, then the model's dot product."""
    coef, center, scale, intercept = parts
    return ((X - center) / scale) @ coef + intercept


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, x))))


class LearnedScorer:
    """``CandidateScorer`` that ranks with a ``RankerModel`` (see the module docstring)."""

    def __init__(self, *, model: RankerModel, extractor: SignalExtractor, config: EngineConfig | None = None,
                 require_agreement: bool = False) -> None:
        if model.uses_dense and extractor.dense is None:
            raise ConfigError("this ranker model needs dense vectors; use the 'hybrid' lexical model or "
                              "build the index with --dense")
        self.model = model
        self.extractor = extractor
        self.config = config or EngineConfig()
        # the paper's hard rule (an answer must agree) on top of the model, as the engine's config asks
        self.require_agreement = require_agreement

    def model_for(self, plan: QuestionPlan) -> RankerModel:
        """Return the model that scores ``plan``'s candidates: ``self.model`` (an evaluation may choose per question)."""
        return self.model

    def features(self, *, plan: QuestionPlan, part_index: int, followups: Sequence[str],
                 candidates: Sequence[RankedCandidate]) -> list[dict[str, float]]:
        """Return the feature dict of every candidate (all ``hybrid+dt`` names), in order."""
        return list_features(self.extractor.signals(plan=plan, part_index=part_index, followups=followups,
                                                    candidates=candidates))

    def score(self, *, plan: QuestionPlan, part_index: int, followups: Sequence[str],
              candidates: list[RankedCandidate]) -> list[RankedCandidate]:
        """Return the candidates scored by the model (plus engine bonuses), best first (ties by id)."""
        if not candidates:
            return []
        cfg = self.config
        rows = self.features(plan=plan, part_index=part_index, followups=followups, candidates=candidates)
        model = self.model_for(plan)
        X = feature_matrix(rows, model.feature_names)
        logits = model.logits(X)
        kept: list[RankedCandidate] = []
        for cand, row, logit in zip(candidates, rows, logits):
            features = dict(cand.features)
            value = _sigmoid(float(logit))
            value += cfg.scoring.continuation_weight * features.get("continuation", 0.0)
            value += cfg.scoring.question_weight * features.get("question_match", 0.0)
            value += cfg.scoring.step_weight * features.get("step_match", 0.0)
            if self.require_agreement and not cand.agreement.verdict:
                continue
            violations = features.get("constraint_violations", 0.0)
            if violations:
                if cfg.scoring.constraint_penalty >= 1.0:
                    continue
                value *= (1 - cfg.scoring.constraint_penalty) ** violations
            features.update({name: row[name] for name in self.model.feature_names})
            features.update(model_logit=float(logit), agreement=cand.agreement.score,
                            verdict=1.0 if cand.agreement.verdict else 0.0)
            kept.append(replace(cand, score=value, features=features))
        kept.sort(key=lambda c: (-c.score, c.document.id))
        if kept:
            top = kept[0]
            x = feature_matrix([top.features], model.feature_names)[0]
            means = np.asarray(model.manifest.get("feature_means") or np.zeros(len(x)), dtype=float)
            contributions, method = model.contributions(x, means=means)
            top.features.update({f"contribution.{k}": v for k, v in contributions.items()})
            top.features["contribution.linear"] = 1.0 if method == "linear" else 0.0
        return kept
