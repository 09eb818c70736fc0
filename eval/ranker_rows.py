"""Ranker training rows from multi-step dialogues: every step's candidates, as the engine generates them.

``eval.train_ranker`` records single-step mechanics questions; a support dialogue adds steps whose
query is the question plus the follow-ups so far (Q, A1, C1 -> A2). Each step is ranked by the
engine's ``AnswerSelector`` with the ``HybridGenerator`` and a recording scorer, with the actual
earlier answers excluded and given as context (teacher forcing), and the actual answer as gold.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from dtdialog.ranking.features import list_features
from dtdialog.setup.assembly import engine_parser_name
from parsers.errors import InputError
from parsers.files import atomic_write_text

#: The packages whose code decides the recorded features (parsing, indexing, candidates, signals).
FEATURE_CODE = ("parsers", "index", "dtdialog")


def feature_code_digest(root: Path | None = None) -> str:
    """Return a short digest of the source that computes ranker features.

    Recorded rows are cached under it: rows recorded by older engine code are never reused to train
    a model that the current engine will serve (that skew happened once: see docs/ranking.md).
    """
    root = root or Path(__file__).resolve().parents[1]
    digest = hashlib.sha1()
    for package in FEATURE_CODE:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:10]


@dataclass
class QueryRows:
    """The candidates of one question: feature dicts, which one is the gold answer, and ids."""

    question_id: str
    ids: list[str]
    rows: list[dict[str, float]]
    gold: list[bool]


class RecordingScorer:
    """A ``CandidateScorer`` that records ``LearnedScorer`` features and keeps the lexical order."""

    def __init__(self, *, extractor) -> None:
        self.extractor = extractor
        extractor.use_sides = True  # every feature is recorded, whichever ones the shipped model reads
        self.last: list[dict[str, float]] = []
        self.last_ids: list[str] = []

    def score(self, *, plan, part_index, followups, candidates):
        self.last = list_features(self.extractor.signals(plan=plan, part_index=part_index, followups=followups,
                                                         candidates=candidates))
        self.last_ids = [c.document.id for c in candidates]
        return list(candidates)


def build_pool_index(eval_set, *, cache: Path, progress: bool) -> Path:
    """Return the SQLite index (with dense vectors beside it) of the pool, building it once per pool."""
    from eval.methods.pool_index import pool_dialogues, pool_digest
    from index.builder import build_index
    from index.dense_store import DenseStore
    from parsers.base import get_parser

    parser = engine_parser_name()
    # the parser is in the name: a pool parsed by another parser has other trees and RR terms
    path = cache / f"{eval_set.name}-{pool_digest(eval_set.pool)}{'' if parser == 'rules' else '-' + parser}.sqlite"
    if not path.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        build_index(dialogues=pool_dialogues(eval_set.pool), parser=get_parser(parser), backend="sqlite", out=path,
                    progress=progress)
    if not DenseStore.exists(path):
        from eval.methods.pool_index import seed_dense_store
        from index.registry import open_index

        with open_index(backend="sqlite", path=path) as index:  # vectors from the cross-run cache when known
            seed_dense_store(index, path, progress=progress)
    return path


def collect_dialogue_rows(eval_set, *, cache: Path, k: int, progress: bool = True, max_steps: int = 3,
                          limit: int | None = None) -> list:
    """Return one ``QueryRows`` per dialogue step of ``eval_set``, in dialogue and step order (cached as JSON in ``cache``).

    A question the engine cannot plan (empty, unparseable) gets empty lists, so the rows stay aligned
    with the dialogues; ``question_id`` is ``"{dialogue id}/{step}"``.
    """
    from tqdm import tqdm

    from dtdialog.ranking.dense_signals import dense_query_text
    from dtdialog.setup.assembly import EngineSpec, build_engine
    from dtdialog.setup.engine_config import EngineConfig, RetrievalConfig
    from index.registry import open_index

    dialogues = list(eval_set.dialogues[:limit] if limit else eval_set.dialogues)
    index_path = build_pool_index(eval_set, cache=cache, progress=progress)
    rows_path = cache / f"{index_path.stem}-k{k}-d{len(dialogues)}-s{max_steps}-{feature_code_digest()}.rows.json"
    if rows_path.is_file():
        return [QueryRows(**r) for r in json.loads(rows_path.read_text(encoding="utf-8"))]
    out: list = []
    # the serving engine's candidates (hybrid, k deep) and signals, recorded instead of scored
    spec = EngineSpec(ranker="learned", candidate_depth=k, config=EngineConfig(retrieval=RetrievalConfig(candidates=k)))
    engine = build_engine(spec, progress=progress, index=open_index(backend="sqlite", path=index_path),
                          index_path=index_path, wrap_scorer=lambda scorer: RecordingScorer(extractor=scorer.extractor))
    with engine.index:
        selector, recorder = engine.selector, engine.scorer
        recorder.extractor.dense.prime([dense_query_text(d.question, d.followups[:s]) for d in dialogues
                                        for s in range(min(d.n_answers, max_steps))])
        for d in tqdm(dialogues, desc=f"{eval_set.name}: ranking dialogue steps", unit="dialogue", file=sys.stderr,
                      disable=not progress, dynamic_ncols=True):
            try:
                plan = selector.plan(d.question)
            except InputError:  # nothing to rank: empty lists keep the rows aligned with the dialogues' steps
                out.extend(QueryRows(question_id=f"{d.id}/{step + 1}", ids=[], rows=[], gold=[])
                           for step in range(min(d.n_answers, max_steps)))
                continue
            for step, gold in enumerate(d.answer_ids[:max_steps]):
                earlier = list(d.answer_ids[:step])
                try:
                    selector.rank_outcome(question=plan, step=step, followups=list(d.followups[:step]),
                                          exclude_ids=earlier, context_ids=earlier, size=k)
                    rows, ids = recorder.last, recorder.last_ids
                except InputError:
                    rows, ids = [], []
                out.append(QueryRows(question_id=f"{d.id}/{step + 1}", ids=ids, rows=rows,
                                     gold=[i == gold for i in ids]))
    atomic_write_text(rows_path, json.dumps([r.__dict__ for r in out]))
    return out
