"""Answer embeddings cached by text across evaluation methods and runs (``data_home()/eval-vectors.sqlite``).

``dense``, ``hybrid``, ``hybrid+dt`` and ``dtq`` all embed the same pool with the same MiniLM; on a
busy 2-core machine the 7,620 IRC answers take tens of minutes per encoding. An embedding depends
only on the text and the model, so it is stored under (model, text digest) and reused, and only
texts never seen before are encoded. The cache is derived data: deleting the file loses nothing.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

CACHE_FILE = "eval-vectors.sqlite"


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", errors="replace")).hexdigest()


def cache_path() -> Path:
    """Return the cache file path (under ``$DTDIALOG_HOME`` or ``~/.cache/dtdialog``)."""
    from dtdialog.runtime.paths import data_home

    return data_home() / CACHE_FILE


def encode_cached(texts: Sequence[str], *, encoder, model: str | None = None, path: Path | None = None,
                  progress: bool = False) -> np.ndarray:
    """Return the ``(len(texts), dim)`` float32 unit embeddings of ``texts``, encoding only uncached ones.

    ``model`` (default: the encoder's id, which names its runtime and precision) keys the cache: vectors of
    two encoders, such as ONNX Runtime fp32 and OpenVINO bf16, are kept apart."""
    from index.dense_store import encoder_id

    model = model or encoder_id(encoder)
    path = path or cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = [_key(t) for t in texts]
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS vectors(model TEXT, key TEXT, vec BLOB, PRIMARY KEY(model, key))")
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            chunk = unique[start:start + 500]
            rows = conn.execute(f"SELECT key, vec FROM vectors WHERE model = ? AND key IN ({','.join('?' * len(chunk))})",
                                [model, *chunk]).fetchall()
            found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        todo = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in found))
        if todo:
            from index.dense_store import build_dense_store

            # build_dense_store encodes in batches behind the progress bar; its ids are the texts' keys here
            store = build_dense_store(ids=[_key(t) for t in todo], texts=todo, encoder=encoder, progress=progress)
            fresh = dict(zip(store.ids, np.asarray(store.vectors)))
            conn.executemany("INSERT OR REPLACE INTO vectors(model, key, vec) VALUES (?, ?, ?)",
                             [(model, k, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for k, v in fresh.items()])
            found.update(fresh)
    if not keys:
        return np.zeros((0, 384), dtype=np.float32)
    return np.stack([found[k] for k in keys]).astype(np.float32)
