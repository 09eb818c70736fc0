"""One temporary answer index per candidate pool and parser, shared by every engine-based method of a run.

Parsing the pool is the slow part of fitting ``dtq``, ``dtq-rules``, ``hybrid`` and ``hybrid+dt``
(7,620 IRC answers take minutes); they all index the same pool with the same parser, so the index
(and the dense vectors and SG phrases the learned ranker keeps beside it) is built once per
process and removed when the process exits. Methods open it read-only and never write to it,
except for the derived stores beside it, which are written atomically.
"""

from __future__ import annotations

import atexit
import hashlib
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from data.model import ANSWER, QUESTION, Dialogue, Turn
from eval.datasets import PoolAnswer

_LOCK = threading.Lock()
_BUILT: dict[tuple[str, str], tuple[Path, object]] = {}
_ROOT: Path | None = None


def pool_dialogues(pool: Sequence[PoolAnswer]) -> list[Dialogue]:
    """Return dialogues that hold exactly the pool answers at their original positions.

    ``index.builder`` names documents ``"{dialogue id}#{position}"``, so keeping positions keeps the
    pool ids; the other turns are empty placeholders that the builder never reads.
    """
    by_dialogue: dict[str, dict[int, str]] = {}
    for a in pool:
        by_dialogue.setdefault(a.dialogue_id, {})[a.position] = a.text
    out = []
    for dialogue_id, answers in by_dialogue.items():
        turns = [Turn(role=ANSWER, text=answers[p]) if p in answers else Turn(role=QUESTION, text="")
                 for p in range(max(answers) + 1)]
        out.append(Dialogue(id=dialogue_id, turns=tuple(turns)))
    return out


def pool_digest(pool: Sequence[PoolAnswer]) -> str:
    """Return the short hash ``eval.train_ranker`` records for the pool it trained on."""
    return hashlib.sha1("\n".join(f"{a.id}\t{a.text}" for a in pool).encode()).hexdigest()[:12]


def training_pool_note(model, pool: Sequence[PoolAnswer], folds=None) -> str:
    """Return what a label must add when ``model`` was trained on ``pool`` ("" otherwise).

    ``folds``: the model's ``eval.out_of_fold.FoldModels`` (None when it has none).
    """
    if model.manifest.get("pool_digest") != pool_digest(pool):
        return ""
    if folds is not None and folds.fold_estimators and folds.held_out:
        return f" [out-of-fold: {len(folds.fold_estimators)}-fold CV models]"
    return " [in-sample: trained on this pool, see eval.train_ranker CV]"


def _root() -> Path:
    global _ROOT
    if _ROOT is None:
        _ROOT = Path(tempfile.mkdtemp(prefix="dtdialog-eval-pools-"))
        atexit.register(clear)
    return _ROOT


def pool_index(pool: Sequence[PoolAnswer], *, parser, progress: bool = False) -> tuple[Path, object]:
    """Return ``(index path, build report)`` of ``pool`` indexed with ``parser``, building it on first request."""
    from index.builder import build_index

    key = (pool_digest(pool), str(getattr(parser, "name", type(parser).__name__)))
    with _LOCK:
        if key in _BUILT and _BUILT[key][0].is_file():
            return _BUILT[key]
        path = _root() / f"pool-{key[0]}-{key[1]}.sqlite"
        report = build_index(dialogues=pool_dialogues(pool), parser=parser, backend="sqlite", out=path,
                             progress=progress)
        _BUILT[key] = (path, report)
        return path, report


def clear() -> None:
    """Remove every pool index built by this process."""
    global _ROOT
    with _LOCK:
        _BUILT.clear()
        if _ROOT is not None:
            shutil.rmtree(_ROOT, ignore_errors=True)
            _ROOT = None


def seed_dense_store(index, path: Path, *, progress: bool = False) -> None:
    """Write the dense store beside the pool index at ``path`` from the cross-run vector cache, if it is missing.

    Called before ``dtdialog.setup.assembly.build_engine``, whose learned ranker would otherwise encode the whole pool
    again for each index; with the store in step with the index (same generation) it just loads it.
    """
    from eval.methods.vector_cache import encode_cached
    from index.dense import DenseEncoder, dense_available
    from index.dense_store import DenseStore, TermStats, text_digest

    if not dense_available() or DenseStore.exists(path):
        return
    ids, texts = index.answer_texts()
    encoder = DenseEncoder()
    vectors = encode_cached(texts, encoder=encoder, progress=progress)
    DenseStore(ids=ids, vectors=vectors, model=encoder.model_id, terms=TermStats.of(texts),
               digests=[text_digest(t) for t in texts], generation=index.generation()).save(path)
