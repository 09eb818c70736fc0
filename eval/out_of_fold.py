"""Out-of-fold scoring of the training pool: the evaluation's own state, kept out of the shipped models.

``eval.train_ranker`` fits the shipped ranker on every mechanics question and, for the figures, one model
per cross-validation fold. The fold models and which fold held out each question live in an eval-owned
file beside this package (``eval/models/<model name>-folds.joblib``, ``FoldModels``). An evaluation on that
pool scores each question with the fold model that never saw it (``OutOfFoldScorer``, given to
``dtdialog.setup.assembly.build_engine`` as its ``wrap_scorer``), so the mechanics figures are out-of-fold;
any other question is scored by the shipped model.

``python -m eval.out_of_fold --split`` moved the fold models out of the model files that once carried
them (no retraining: the estimators are the same objects, so every figure stays the same).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dtdialog.ranking.learned_scorer import MODELS_DIR, LearnedScorer, RankerModel
from parsers.errors import ModelNotAvailableError
from parsers.files import atomic_write

FOLDS_DIR = Path(__file__).resolve().parent / "models"
#: The version stamped into fold files; ``FoldModels.load`` refuses any other.
FOLDS_FORMAT = 1


def question_key(question: str) -> str:
    """Return the key a question's text is recorded under in ``FoldModels.held_out`` (whitespace-insensitive)."""
    return hashlib.sha1(" ".join(question.split()).encode("utf-8", errors="replace")).hexdigest()[:16]


def folds_path(model_path: str | Path, folds_dir: Path | None = None) -> Path:
    """Return where the fold models of the ranker model file ``model_path`` are kept.

    The shipped models' folds live in ``eval/models``; a model trained elsewhere keeps them beside it.
    """
    model_path = Path(model_path)
    if folds_dir is None:
        folds_dir = FOLDS_DIR if model_path.resolve().parent == MODELS_DIR else model_path.parent
    return folds_dir / f"{model_path.stem}-folds.joblib"


@dataclass
class FoldModels:
    """The cross-validation models of one training run: ``held_out`` maps a question key to its fold."""

    model_name: str
    feature_names: tuple[str, ...]
    fold_estimators: tuple[Any, ...] = ()
    held_out: dict[str, int] = field(default_factory=dict)

    def model_for(self, question: str, base: RankerModel) -> RankerModel:
        """Return the fold model that held ``question`` out in training, or ``base`` for any other question."""
        fold = self.held_out.get(question_key(question))
        if fold is None or not 0 <= fold < len(self.fold_estimators):
            return base
        return RankerModel(estimator=self.fold_estimators[fold], feature_names=base.feature_names,
                           manifest=base.manifest)

    def fits(self, model: RankerModel) -> bool:
        """Return True when these folds were cross-validated for ``model`` (same name and features)."""
        return self.model_name == model.manifest.get("name") and tuple(self.feature_names) == model.feature_names

    def save(self, path: str | Path) -> Path:
        """Write the folds (joblib) atomically; return the path."""
        import joblib

        data = {"format": FOLDS_FORMAT, "model_name": self.model_name, "feature_names": list(self.feature_names),
                "fold_estimators": list(self.fold_estimators), "held_out": dict(self.held_out)}
        return atomic_write(path, lambda fh: joblib.dump(data, fh, compress=3))

    @classmethod
    def load(cls, path: str | Path) -> FoldModels:
        """Return the folds at ``path``; ``ModelNotAvailableError`` when missing, unreadable or of another format."""
        import joblib

        path = Path(path)
        if not path.is_file():
            raise ModelNotAvailableError(f"no fold models at {path}; python -m eval.train_ranker writes them")
        try:
            data = joblib.load(path)
            if data.get("format") != FOLDS_FORMAT:
                raise ValueError(f"format {data.get('format')!r}, expected {FOLDS_FORMAT}")
            return cls(model_name=str(data["model_name"]), feature_names=tuple(data["feature_names"]),
                       fold_estimators=tuple(data["fold_estimators"]),
                       held_out={str(k): int(v) for k, v in data["held_out"].items()})
        except (OSError, KeyError, TypeError, ValueError, EOFError, AttributeError) as exc:
            raise ModelNotAvailableError(f"cannot read fold models {path}: {exc}") from None


def folds_for(model: RankerModel, model_path: str | Path | None) -> FoldModels | None:
    """Return the fold models cross-validated for ``model`` (loaded from ``model_path``; None: the shipped model file
    named as the model is, e.g. ``ranker-v1-hybrid`` for the engine without the tree), or None."""
    path = folds_path(model_path or MODELS_DIR / f"{model.manifest.get('name') or 'ranker-v1'}.joblib")
    if not path.is_file():
        return None
    folds = FoldModels.load(path)
    return folds if folds.fits(model) and folds.fold_estimators else None


class OutOfFoldScorer(LearnedScorer):
    """``LearnedScorer`` that scores a training question with the fold model that held it out."""

    def __init__(self, *, scorer: LearnedScorer, folds: FoldModels) -> None:
        super().__init__(model=scorer.model, extractor=scorer.extractor, config=scorer.config,
                         require_agreement=scorer.require_agreement)
        self.folds = folds

    def model_for(self, plan) -> RankerModel:
        return self.folds.model_for(plan.question, self.model)


def with_openings(folds: FoldModels, openings: Mapping[str, str]) -> FoldModels:
    """Return ``folds`` where each opening of ``openings`` (opening -> its whole question) is held out with its
    question: a customer who opens with a title alone is scored by the fold model that never saw that question, not
    by the shipped one, which trained on it."""
    held_out = dict(folds.held_out)
    for opening, question in openings.items():
        fold = folds.held_out.get(question_key(question))
        if fold is not None:
            held_out.setdefault(question_key(opening), fold)
    return FoldModels(model_name=folds.model_name, feature_names=folds.feature_names,
                      fold_estimators=folds.fold_estimators, held_out=held_out)


def out_of_fold(model_path: str | Path | None, *, openings: Mapping[str, str] | None = None):
    """Return a ``build_engine`` ``wrap_scorer``: out-of-fold scoring when the model has fold models
    (``openings``: a dialogue's first message -> its whole question, ``with_openings``)."""

    def wrap(scorer: LearnedScorer) -> LearnedScorer:
        folds = folds_for(scorer.model, model_path)
        if folds is not None and openings:
            folds = with_openings(folds, openings)
        return scorer if folds is None else OutOfFoldScorer(scorer=scorer, folds=folds)

    return wrap


def split_model_file(model_path: Path, folds_dir: Path | None = None) -> Path | None:
    """Move the fold models out of a format-1 model file that carries them; return the folds file (or None).

    The model file is rewritten with only what serving needs; the estimators are unpickled and pickled
    again unchanged, so every score stays the same.
    """
    import joblib

    data = joblib.load(model_path)
    if not data.get("fold_estimators"):
        return None
    model = RankerModel(estimator=data["estimator"], feature_names=tuple(data["feature_names"]),
                        manifest=dict(data.get("manifest") or {}))
    folds = FoldModels(model_name=str(model.manifest.get("name") or model_path.stem), feature_names=model.feature_names,
                       fold_estimators=tuple(data["fold_estimators"]),
                       held_out={str(k): int(v) for k, v in data["held_out"].items()})
    path = folds.save(folds_path(model_path, folds_dir))
    model.save(model_path)
    return path


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m eval.out_of_fold", description=__doc__.split("\n")[0])
    parser.add_argument("--split", action="store_true", help="move fold models out of the shipped model files")
    args = parser.parse_args(argv)
    if not args.split:
        parser.print_help()
        return 0
    for path in sorted(MODELS_DIR.glob("*.joblib")):
        written = split_model_file(path)
        print(f"{path.name}: " + (f"fold models moved to {written}" if written else "no fold models"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
