"""Calibrated confidence: the probability that the answer a ranking step chose is right.

A ``Calibrator`` is a Platt-style logistic model over a few numbers of the deciding step: for the learned
ranker its top logit, the margin to the runner-up and some of the top candidate's features (how close it is to
the question in MiniLM space, and how far above the answers around it: ``dense_csls_gap``); for the rule
scorer its normalised score, the margin and the top candidate's retrieval, agreement and topic features
(``step_features``). It is fitted by ``python -m eval.calibrate`` on first and later answers of the car-repair
sets in the open-pool protocol (half of the questions have no right answer in the pool), so a low value
means "the right answer is probably not here", not only "two answers are close", at any step.

The fitted model is plain JSON (coefficients, feature means and scales, a format version and the ranker it
was fitted for) beside the ranker models: applying it is a dot product, so it costs nothing per turn.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from parsers.errors import ModelNotAvailableError
from parsers.files import atomic_write

#: The version written into calibrator files; ``Calibrator.load`` refuses any other.
CALIBRATOR_FORMAT = 1
MODELS_DIR = Path(__file__).resolve().parent.parent / "ranking" / "models"
#: The calibrator of the shipped learned ranker and of the rule scorer.
LEARNED_CALIBRATOR = MODELS_DIR / "calibrator-v1.json"
RULES_CALIBRATOR = MODELS_DIR / "calibrator-v1-rules.json"

#: The step's numbers each ranker's calibrator reads (``step_features``).
#: ``topic_ratio`` is only set on a first answer and ``continuation`` only on a later one: without them the
#: later steps' smaller margins read as doubt although they are as often right.
LEARNED_FEATURES = ("logit", "margin", "dense", "dense_gap", "bm25", "term_overlap", "agreement_score",
                    "entity_overlap", "dense_rr", "dense_z", "dense_csls", "dense_csls_gap", "topic_ratio",
                    "continuation")
RULES_FEATURES = ("score", "margin", "agreement", "topic", "topic_ratio", "question_match")
#: The learned ranker's logit margin given to a step with a single candidate (nothing competes with it); the
#: calibrator clips it to the largest margin it saw in fitting.
LONE_MARGIN = 5.0


def step_features(candidates: Sequence[Any], ranker: str) -> dict[str, float] | None:
    """Return the numbers a calibrator reads from a step's candidates (best first), or None without candidates.

    ``ranker`` is ``learned`` (scores are the model's logits, ``features["model_logit"]``) or ``rules``
    (the rule scorer's combined score).
    """
    if not candidates:
        return None
    top = candidates[0]
    if ranker == "learned":
        logit = float(top.features.get("model_logit", 0.0))
        second = float(candidates[1].features.get("model_logit", 0.0)) if len(candidates) > 1 else None
        out = {"logit": logit, "margin": min(LONE_MARGIN, logit - second) if second is not None else LONE_MARGIN}
    else:
        # the rule score's scale moves with the question (bonuses add up), so its margin is relative to it
        score = float(top.score)
        second = float(candidates[1].score) if len(candidates) > 1 else 0.0
        out = {"score": score, "margin": max(0.0, min(1.0, (score - second) / score)) if score > 0 else 0.0}
    for name in (LEARNED_FEATURES if ranker == "learned" else RULES_FEATURES):
        if name not in out:
            out[name] = float(top.features.get(name, 0.0))
    return out


@dataclass
class Calibrator:
    """A logistic model ``P(correct) = sigmoid(intercept + sum coef_i * (x_i - mean_i) / scale_i)``.

    ``ranker`` is what it was fitted for (``learned`` or ``rules``), ``model_name`` the ranker model's name
    (``ranker-v1``; empty for the rules); ``manifest`` how it was fitted (data, command, ECE).
    """

    ranker: str
    feature_names: tuple[str, ...]
    coef: tuple[float, ...]
    intercept: float
    means: tuple[float, ...]
    scales: tuple[float, ...]
    model_name: str = ""
    manifest: dict[str, Any] = field(default_factory=dict)
    #: the range of each number in the fitting data: values outside are clipped to it, so a step unlike any
    #: seen in fitting (a lone candidate in a tiny index) cannot extrapolate to a certainty
    lows: tuple[float, ...] = ()
    highs: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.feature_names)
        if not (len(self.coef) == len(self.means) == len(self.scales) == n) or n == 0:
            raise ModelNotAvailableError("calibrator: features, coefficients, means and scales differ in length")
        if (self.lows or self.highs) and not len(self.lows) == len(self.highs) == n:
            raise ModelNotAvailableError("calibrator: the feature ranges differ in length from the features")
        if self.ranker not in ("learned", "rules"):
            raise ModelNotAvailableError(f"calibrator: unknown ranker {self.ranker!r}")

    def probability(self, values: dict[str, float]) -> float:
        """Return P(correct) for the step numbers ``values`` (missing ones count as their mean)."""
        z = self.intercept
        lows = self.lows or (-math.inf,) * len(self.coef)
        highs = self.highs or (math.inf,) * len(self.coef)
        for name, c, m, s, lo, hi in zip(self.feature_names, self.coef, self.means, self.scales, lows, highs):
            x = values.get(name, m)
            if not math.isfinite(x):
                x = m
            z += c * (min(hi, max(lo, x)) - m) / (s or 1.0)
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def confidence(self, candidates: Sequence[Any]) -> float | None:
        """Return the calibrated probability that ``candidates[0]`` is right, or None without candidates.

        When ``candidates[0]`` is the team's logged reply to an opening the customer's first message repeats, the
        probability from that match (its ``logged_question`` feature, ``dtdialog.ranking.logged_questions``) counts
        when higher: the two are fitted on the same open-pool protocol, and this model never sees logged openings.
        """
        values = step_features(candidates, self.ranker)
        if values is None:
            return None
        return round(max(self.probability(values), float(candidates[0].features.get("logged_question", 0.0))), 4)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(feature_names=list(self.feature_names), coef=list(self.coef), means=list(self.means),
                    scales=list(self.scales), lows=list(self.lows), highs=list(self.highs))
        return {"format": CALIBRATOR_FORMAT, **data}

    def save(self, path: str | Path) -> Path:
        """Write the calibrator as JSON (atomically); return the path."""
        text = json.dumps(self.to_dict(), indent=2) + "\n"
        return atomic_write(path, lambda fh: fh.write(text.encode("utf-8")))

    @classmethod
    def load(cls, path: str | Path) -> Calibrator:
        """Return the calibrator at ``path``; ``ModelNotAvailableError`` when missing, unreadable or of another format."""
        path = Path(path)
        if not path.is_file():
            raise ModelNotAvailableError(f"no calibrator at {path}; python -m eval.calibrate writes it")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format") != CALIBRATOR_FORMAT:
                raise ValueError(f"format {data.get('format')!r}, expected {CALIBRATOR_FORMAT}")
            return cls(ranker=str(data["ranker"]), feature_names=tuple(data["feature_names"]),
                       coef=tuple(float(v) for v in data["coef"]), intercept=float(data["intercept"]),
                       means=tuple(float(v) for v in data["means"]), scales=tuple(float(v) for v in data["scales"]),
                       model_name=str(data.get("model_name", "")), manifest=dict(data.get("manifest") or {}),
                       lows=tuple(float(v) for v in data.get("lows", ())),
                       highs=tuple(float(v) for v in data.get("highs", ())))
        except (OSError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ModelNotAvailableError(f"cannot read calibrator {path}: {exc}") from None


def calibrator_path(ranker: str, model_path: str | Path | None = None) -> Path:
    """Return where the calibrator of ``ranker`` lives: beside a custom model file, else the shipped one."""
    if ranker == "rules":
        return RULES_CALIBRATOR
    if model_path is not None and Path(model_path).resolve().parent != MODELS_DIR:
        return Path(model_path).with_name(f"{Path(model_path).stem}-calibrator.json")
    if model_path is not None and Path(model_path).stem != "ranker-v1":
        return MODELS_DIR / f"calibrator-{Path(model_path).stem.removeprefix('ranker-')}.json"
    return LEARNED_CALIBRATOR


def load_calibrator(ranker: str, *, model_name: str = "", model_path: str | Path | None = None) -> Calibrator | None:
    """Return the calibrator for the engine's ranker, or None when there is none (or it was fitted for another
    model): the engine then reports no confidence and never abstains."""
    try:
        calibrator = Calibrator.load(calibrator_path(ranker, model_path))
    except ModelNotAvailableError:
        return None
    if calibrator.ranker != ranker or (ranker == "learned" and calibrator.model_name != model_name):
        return None
    return calibrator


def confidence_words(confidence: float | None) -> str:
    """Return how sure the bot is, in a customer's words ("I'm fairly sure (80%)")."""
    if confidence is None:
        return ""
    pct = round(100 * confidence)
    if confidence >= 0.8:
        return f"I'm fairly sure ({pct}%)"
    if confidence >= 0.5:
        return f"I think this fits ({pct}%)"
    return f"I'm not sure ({pct}%)"
