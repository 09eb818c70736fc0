"""The open-pool protocol: a seeded coin removes the gold answer of about half of the questions, and each system
answers with its top candidate and a confidence (``OpenPoolRow``); ``eval.selective`` and ``eval.operating_point``
measure the rows.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from eval.calibrator import cross_fit, fold_of
from eval.datasets import EvalSet
from parsers.errors import InputError
from parsers.files import atomic_write_text


def open_pool_coin(dialogue_ids: Sequence[str], *, seed: int) -> frozenset[str]:
    """Return the dialogues whose gold answer the seeded coin removes from the pool (about half).

    The coin of a dialogue depends only on the seed and the dialogue's id, so every system of a run, and
    every run with the same seed, faces the same questions without their answer.
    """
    removed = set()
    for did in dialogue_ids:
        if random.Random(f"{seed}:{did}").random() < 0.5:
            removed.add(did)
    return frozenset(removed)


@dataclass
class OpenPoolRow:
    """One question under the protocol: whether its answer was in the pool, what the system put on top."""

    dialogue_id: str
    question: str
    answerable: bool
    correct: bool
    top_id: str | None
    score: float
    values: dict[str, float] = field(default_factory=dict)
    confidence: float = 0.0
    #: 0 for the first answer (the question alone); i for the answer after the customer's i-th follow-up
    step: int = 0


def open_pool_rows(system, eval_set: EvalSet, *, removed: frozenset[str], progress: bool) -> list[OpenPoolRow]:
    """Return one row per dialogue: ``system.top(question, exclude_ids)`` -> ``(top id, score, values)``."""
    from tqdm import tqdm

    rows = []
    for d in tqdm(eval_set.dialogues, desc=f"{eval_set.name}/{system.name}", unit="question", file=sys.stderr,
                  disable=not progress, dynamic_ncols=True):
        gold = d.answer_ids[0]
        answerable = d.id not in removed
        top_id, score, values = system.top(d.question, () if answerable else (gold,))
        rows.append(OpenPoolRow(dialogue_id=d.id, question=d.question, answerable=answerable, correct=answerable and top_id == gold,
                                top_id=top_id, score=score, values=values, confidence=score))
    return rows


#: the systems that are the engine: with the discourse tree, and without it (``EngineSpec.use_tree``)
ENGINE_SYSTEMS = ("dtq", "dtq-no-dt")


class EngineSystem:
    """``dtq`` (``dtq-no-dt`` without the tree): the engine's top answer and the step numbers its calibrator reads
    (``step_features``)."""

    def __init__(self, *, ranker: str | None = None, progress: bool = False, use_tree: bool = True,
                 parser: str | None = None) -> None:
        from eval.methods.dtq import DTQMethod

        self.method = DTQMethod(ranker=ranker, progress=progress, use_tree=use_tree, parser=parser)
        self.name = self.method.name
        self.ranker = "rules"
        self.folds = None

    def fit(self, eval_set: EvalSet) -> None:
        from eval.out_of_fold import folds_for

        self.method.fit(pool=eval_set.pool)
        self.ranker = self.method.resolved_ranker
        scorer = self.method._selector.scorer
        if self.ranker == "learned":
            self.folds = folds_for(scorer.model, self.method.ranker_model)
        self.model_name = scorer.model.manifest.get("name", "") if self.ranker == "learned" else ""

    def candidates(self, question: str, exclude: Sequence[str]):
        try:
            plan = self.method._plan(question)
        except InputError:
            return []
        return self.method._selector.rank(question=plan, step=0, followups=[], exclude_ids=list(exclude), size=100)

    def top(self, question: str, exclude: Sequence[str]) -> tuple[str | None, float, dict[str, float]]:
        from dtdialog.selection.confidence import step_features

        ranked = self.candidates(question, exclude)
        values = step_features(ranked, self.ranker)
        if values is None:
            return None, float("-inf"), {}
        # keep every number of the top candidate too, so a calibrator over other features can be refitted
        values = {**{k: float(v) for k, v in ranked[0].features.items() if isinstance(v, (int, float))}, **values}
        return ranked[0].document.id, float(values["logit" if self.ranker == "learned" else "score"]), values

    def close(self) -> None:
        self.method.close()


class RankerSystem:
    """An anchor: a reconstruction method's top answer, its score as the confidence."""

    def __init__(self, name: str, *, progress: bool = False) -> None:
        from eval.methods import get_method

        self.name = name
        self.method = get_method("dense" if name == "dense" else "keyword")
        if hasattr(self.method, "progress"):
            self.method.progress = progress

    def fit(self, eval_set: EvalSet) -> None:
        self.method.fit(pool=eval_set.pool)
        self.method.prepare(dialogues=eval_set.dialogues)

    def top(self, question: str, exclude: Sequence[str]) -> tuple[str | None, float, dict[str, float]]:
        ranked = self.method.rank(question=question, followups=(), step=0, exclude_ids=tuple(exclude), k=5)
        if not ranked:
            return None, float("-inf"), {}
        return ranked[0][0], float(ranked[0][1]), {}

    def close(self) -> None:
        self.method.close()


def calibrate_rows(system: EngineInfo, rows: list[OpenPoolRow], *, dataset: str) -> str:
    """Fill ``confidence`` of the engine's rows; return how (cross-fitted, or the shipped calibrator).

    On the ranker's training pool the calibrator was fitted on these very questions, so each fold's
    confidence comes from a calibrator fitted on the other folds (``eval.calibrator.cross_fit``).
    """
    from dtdialog.selection.confidence import load_calibrator

    if dataset == "mechanics":  # the ranker's training pool: its calibrator saw these questions
        probs = cross_fit(rows, system.folds, ranker=system.ranker)
        for r, p in zip(rows, probs):
            r.confidence = float(p)
        return "cross-fitted calibrator (5 folds, the ranker's folds)"
    calibrator = load_calibrator(system.ranker, model_name=system.model_name)
    if calibrator is None:
        return "no calibrator: raw top score"
    for r in rows:
        r.confidence = calibrator.probability(r.values) if r.values else 0.0
    return f"shipped calibrator ({system.ranker})"


def system_rows(name: str, eval_set: EvalSet, *, removed: frozenset[str], progress: bool, ranker: str | None,
                cache: Path | None, reuse: bool, parser: str | None = None) -> tuple[list[OpenPoolRow], str]:
    """Return one system's rows (ranked now, or read from ``cache`` with ``reuse``) and how its confidence was set."""
    if reuse and cache is not None and cache.is_file():
        data = json.loads(cache.read_text(encoding="utf-8"))
        rows = [OpenPoolRow(**r) for r in data["rows"]]
        if name not in ENGINE_SYSTEMS:
            return rows, "top score"
        info = data["engine"]
        return rows, calibrate_rows(EngineInfo(**info), rows, dataset=eval_set.name)
    system = (EngineSystem(ranker=ranker, progress=progress, use_tree=name == "dtq", parser=parser)
              if name in ENGINE_SYSTEMS
              else RankerSystem(name, progress=progress))
    try:
        system.fit(eval_set)
        rows = open_pool_rows(system, eval_set, removed=removed, progress=progress)
    finally:
        system.close()
    info = {}
    if name in ENGINE_SYSTEMS:
        info = {"ranker": system.ranker, "model_name": system.model_name,
                "has_folds": system.folds is not None, "folds": [fold_of_row(r, system.folds) for r in rows]}
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(cache, json.dumps({"engine": info, "rows": [asdict(r) for r in rows]}) + "\n")
    if name not in ENGINE_SYSTEMS:
        return rows, "top score"
    return rows, calibrate_rows(EngineInfo(**info), rows, dataset=eval_set.name)


@dataclass
class EngineInfo:
    """What calibrating the engine's rows needs to know about the engine that scored them."""

    ranker: str
    model_name: str
    has_folds: bool
    folds: list[int]


def fold_of_row(row: OpenPoolRow, folds) -> int:
    return fold_of(row.question, folds)
