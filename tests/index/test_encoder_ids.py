"""Encoder ids name the runtime and precision: vectors of two runtimes never share a cache entry or an index,
and a store labelled before ids named the runtime keeps its vectors only when they prove to be this encoder's."""

from __future__ import annotations

import numpy as np
import pytest

import parsers.encoder as pe
from index.dense_store import build_dense_store, refresh_dense_store
from parsers.errors import ModelNotAvailableError

TEXTS = ["The brakes squeal when I stop.", "Check the battery terminals.", "Replace the fuel pump relay."]


class _Runtime(pe.OnnxMiniLM):
    """The real encoder class with its session replaced: each runtime gives slightly different vectors, as
    ONNX Runtime fp32 and OpenVINO bf16 do (~1e-3 apart), without loading either."""

    calls = 0

    @property
    def runtime_in_use(self) -> str:
        return self.runtime

    def encode(self, texts, *, progress=False):
        self.calls += len(texts)
        rows = np.stack([np.random.default_rng(sum(map(ord, t))).standard_normal(16) for t in texts])
        rows = rows.astype(np.float32) + (1e-3 if self.runtime == "openvino" else 0.0)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_each_runtime_and_precision_has_its_own_id():
    ids = {_Runtime(runtime="onnxruntime").model_id, _Runtime(runtime="openvino").model_id,
           _Runtime(arithmetic="int8", runtime="openvino").model_id}
    assert ids == {pe.MODEL_ID + "/onnxruntime-fp32", pe.MODEL_ID + "/openvino-bf16",
                   pe.MODEL_ID + "/onnxruntime-int8"}


def test_the_vector_cache_keeps_two_runtimes_apart(tmp_path):
    from eval.methods.vector_cache import encode_cached

    path = tmp_path / "vectors.sqlite"
    onnx, openvino = _Runtime(runtime="onnxruntime"), _Runtime(runtime="openvino")
    first = encode_cached(TEXTS, encoder=onnx, path=path)
    assert np.array_equal(encode_cached(TEXTS, encoder=_Runtime(runtime="onnxruntime"), path=path), first)
    other = encode_cached(TEXTS, encoder=openvino, path=path)
    assert openvino.calls == len(TEXTS)  # encoded, not read from the other runtime's entries
    assert not np.array_equal(other, first)


def test_an_index_of_another_runtime_is_re_encoded_or_refused():
    from dtdialog.ranking.dense_signals import DenseSignals

    ids = ["a", "b", "c"]
    store = build_dense_store(ids=ids, texts=TEXTS, encoder=_Runtime(runtime="openvino"), progress=False)
    onnx = _Runtime(runtime="onnxruntime")
    with pytest.raises(ModelNotAvailableError, match="made by .*/openvino-bf16, the query encoder is .*/onnxruntime"):
        DenseSignals(store=store, encoder=onnx)
    fresh, encoded = refresh_dense_store(store, ids=ids, texts=TEXTS, encoder=onnx, progress=False)
    assert encoded == 3 and fresh.model == onnx.model_id


@pytest.mark.parametrize("made_by, kept", [("onnxruntime", True), ("openvino", False)])
def test_a_store_labelled_before_runtime_ids_is_kept_only_when_it_is_this_encoders(made_by, kept):
    ids = ["a", "b", "c"]
    old = build_dense_store(ids=ids, texts=TEXTS, encoder=_Runtime(runtime=made_by), progress=False)
    old.model = pe.MODEL_ID  # the one label both runtimes' vectors carried
    encoder = _Runtime(runtime="onnxruntime")
    store, encoded = refresh_dense_store(old, ids=ids, texts=TEXTS, encoder=encoder, progress=False)
    assert store.model == encoder.model_id
    assert encoded == (0 if kept else 3)
    assert np.array_equal(np.asarray(store.vectors), np.asarray(old.vectors)) == kept
