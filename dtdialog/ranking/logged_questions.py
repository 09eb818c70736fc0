"""Logged openings: the evidence that the support team has answered this very question before.

An index built from a team's logs keeps each answer's logged opening question (``meta["question"]``). When a
customer's first message says what one logged opening said, in other words, that dialogue's first answer is what
the team replied to it: evidence the ranker's calibrator never sees, because its fitting pools keep no questions
(``eval.methods.pool_index``). The paper's question is the case in point: its intended answer shares few words with
it (it says what is left to check, not what was done), so the calibrated confidence is low although the logs hold
that question almost word for word.

``LoggedQuestions`` encodes the logged openings once (with the dense query encoder, in ``warm_up``) and finds the
nearest one to a message: its cosine, and the ``gap`` to the nearest opening of any other dialogue (two logged
openings equally near say which topic, not which dialogue). ``LoggedQuestionModel`` turns those two and the share of
the message's terms the opening uses (``term_coverage``) into the probability that the dialogue's first answer is
right: a logistic model fitted by ``python -m eval.logged_question`` on the car-repair Q/A set, a question's title
against the bodies (a short message against longer logged openings), half of the own bodies removed, as in the
calibrator's open pool. On real forum posts matched against the built-in corpus, read by hand, the nearest opening's
answer is mostly on the topic but for another situation; the model's probabilities there stay below one half, so
the evidence counts only from ``AbstentionConfig.logged_opening_at`` (0.5). The selection stage
``stages.logged_question_stage`` writes the probability onto the matched answer, and the calibrated confidence takes
the higher of the two (``Calibrator.confidence``).
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dtdialog.ranking.dense_signals import dense_query_text
from parsers.errors import ModelNotAvailableError
from parsers.files import atomic_write

log = logging.getLogger(__name__)

MODEL_FORMAT = 1
MODEL_PATH = Path(__file__).resolve().parent / "models" / "logged-question-v1.json"
#: Indexes with more logged dialogues than this get no logged-question evidence: their openings are encoded in the
#: process (``warm_up``), about 4 ms each, and a larger log would need them stored beside the index instead.
MAX_DIALOGUES = 5000


def encoder_family(encoder_id: str) -> str:
    """Return the model an encoder id names, without its runtime and precision (the cosines barely differ)."""
    return encoder_id.split("/")[0].split("-onnx")[0]


#: What the model reads of a match, in this order.
FEATURES = ("cosine", "gap", "coverage")


@dataclass(frozen=True)
class QuestionMatch:
    """The logged opening nearest a message: its dialogue, that dialogue's first stored answer, the opening's text,
    how near it is, and by how much nearer than any other dialogue's opening."""

    dialogue_id: str
    answer_id: str
    opening: str
    cosine: float
    gap: float


def term_coverage(message_terms: frozenset[str], opening_terms: frozenset[str]) -> float:
    """Return the share of the message's single-word terms that the logged opening uses too: a message that says
    what the opening said ("battery, coils, plugs, solenoid, won't start") covers it, one on the same topic in
    another situation does not."""
    singles = {t for t in message_terms if " " not in t}
    return len(singles & opening_terms) / len(singles) if singles else 0.0


@dataclass(frozen=True)
class LoggedQuestionModel:
    """``P(first answer right) = sigmoid(intercept + sum coef_i * x_i)`` over ``FEATURES``, each clipped to the range
    seen in fitting; ``encoder`` is the family of the encoder whose cosines it was fitted on."""

    coef: tuple[float, float, float]
    intercept: float
    encoder: str
    lows: tuple[float, float, float] = (-1.0, 0.0, 0.0)
    highs: tuple[float, float, float] = (1.0, 2.0, 1.0)
    manifest: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not len(self.coef) == len(self.lows) == len(self.highs) == len(FEATURES):
            raise ModelNotAvailableError(f"logged-question model: needs {len(FEATURES)} coefficients and ranges")

    def probability(self, cosine: float, gap: float, coverage: float) -> float:
        """Return the probability that the matched opening's first answer is right for the message."""
        z = self.intercept
        for c, x, lo, hi in zip(self.coef, (cosine, gap, coverage), self.lows, self.highs):
            z += c * min(hi, max(lo, x))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def to_dict(self) -> dict[str, Any]:
        return {"format": MODEL_FORMAT, "features": list(FEATURES), "coef": list(self.coef),
                "intercept": self.intercept, "encoder": self.encoder, "lows": list(self.lows),
                "highs": list(self.highs), "manifest": self.manifest}

    def save(self, path: str | Path) -> Path:
        """Write the model as JSON (atomically); return the path."""
        text = json.dumps(self.to_dict(), indent=2) + "\n"
        return atomic_write(path, lambda fh: fh.write(text.encode("utf-8")))

    @classmethod
    def load(cls, path: str | Path = MODEL_PATH) -> LoggedQuestionModel:
        """Return the model at ``path``; ``ModelNotAvailableError`` when missing, unreadable or of another format."""
        path = Path(path)
        if not path.is_file():
            raise ModelNotAvailableError(f"no logged-question model at {path}; python -m eval.logged_question writes it")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format") != MODEL_FORMAT or tuple(data.get("features", ())) != FEATURES:
                raise ValueError(f"format {data.get('format')!r} features {data.get('features')!r}, expected "
                                 f"{MODEL_FORMAT} {list(FEATURES)}")
            return cls(coef=tuple(float(v) for v in data["coef"]), intercept=float(data["intercept"]),
                       encoder=str(data["encoder"]), lows=tuple(float(v) for v in data["lows"]),
                       highs=tuple(float(v) for v in data["highs"]), manifest=dict(data.get("manifest") or {}))
        except (OSError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ModelNotAvailableError(f"cannot read logged-question model {path}: {exc}") from None


def nearest(query: np.ndarray, vectors: np.ndarray) -> tuple[int, float, float]:
    """Return ``(row, cosine, gap)``: the row of ``vectors`` nearest ``query`` and its lead over the second nearest
    (the whole cosine when there is one row). Rows and query are unit vectors."""
    return nearest_of(vectors @ query)


def nearest_of(cosines: np.ndarray) -> tuple[int, float, float]:
    """Return ``(row, cosine, gap)`` of the largest of ``cosines`` and its lead over the second largest."""
    top = int(np.argmax(cosines))
    second = float(np.partition(cosines, -2)[-2]) if len(cosines) > 1 else 0.0
    return top, float(cosines[top]), float(cosines[top]) - second


class LoggedQuestions:
    """The logged openings of an index and the nearest one to a message (``match``).

    ``dense`` is the ranker's ``DenseSignals`` (its encoder encodes the openings; its cached query vector is reused).
    Dialogues whose first stored answer is missing, or with no logged question, are left out.
    """

    def __init__(self, *, index: Any, dense: Any, model: LoggedQuestionModel, limit: int = MAX_DIALOGUES) -> None:
        self.index = index
        self.dense = dense
        self.model = model
        self.limit = limit
        self._lock = threading.Lock()
        self._loaded: tuple[list[tuple[str, str, str]], np.ndarray] | None = None

    def warm_up(self) -> None:
        """Encode the logged openings now (about 0.8 s for the built-in corpus), not in the first turn."""
        self._openings()

    @property
    def ready(self) -> bool:
        """True once the logged openings are encoded (``warm_up`` or the first ``match``)."""
        return self._loaded is not None

    def _openings(self) -> tuple[list[tuple[str, str, str]], np.ndarray]:
        with self._lock:
            if self._loaded is None:
                self._loaded = self._encode()
            return self._loaded

    def _encode(self) -> tuple[list[tuple[str, str, str]], np.ndarray]:
        first: dict[str, tuple[int, str, str]] = {}
        for doc in self.index.documents():
            question = str((doc.meta or {}).get("question", "")).strip()
            if question and (doc.dialogue_id not in first or doc.position < first[doc.dialogue_id][0]):
                first[doc.dialogue_id] = (doc.position, doc.id, question)
                if len(first) > self.limit:
                    log.info("logged-question evidence off: more than %d logged dialogues", self.limit)
                    return [], np.zeros((0, 0), dtype=np.float32)
        if len(first) < 2:
            return [], np.zeros((0, 0), dtype=np.float32)
        keys = [(dialogue, answer, question) for dialogue, (_, answer, question) in first.items()]
        vectors = np.asarray(self.dense.encoder.encode([q for _, _, q in first.values()]), dtype=np.float32)
        return keys, vectors

    def match(self, question: str, followups: Sequence[str] = ()) -> QuestionMatch | None:
        """Return the logged opening nearest the customer's messages (the vector the dense retrieval made of them),
        or None when the index logs fewer than two openings."""
        keys, vectors = self._openings()
        if not keys or not question.strip():
            return None
        row, cosine, gap = nearest(self.dense.query_vector(dense_query_text(question, followups)), vectors)
        dialogue, answer, opening = keys[row]
        return QuestionMatch(dialogue_id=dialogue, answer_id=answer, opening=opening, cosine=round(cosine, 4),
                             gap=round(gap, 4))


def logged_questions_for(index: Any, scorer: Any, path: str | Path = MODEL_PATH) -> LoggedQuestions | None:
    """Return the logged-question evidence for an engine whose learned ranker reads dense vectors, or None (the rule
    scorer, no shipped model, or a model fitted on another encoder's cosines)."""
    from index.dense_store import encoder_id

    dense = getattr(getattr(scorer, "extractor", None), "dense", None)
    if dense is None:
        return None
    try:
        model = LoggedQuestionModel.load(path)
    except ModelNotAvailableError as exc:
        log.info("%s", exc)
        return None
    if encoder_family(encoder_id(dense.encoder)) != model.encoder:
        log.info("logged-question evidence off: fitted on %s cosines, the encoder is %s", model.encoder,
                 encoder_id(dense.encoder))
        return None
    return LoggedQuestions(index=index, dense=dense, model=model)
