"""DenseEncoder (int8 ONNX) and TorchEncoder (fp32 reference): unit-length float32 vectors, offline; clear errors."""

import numpy as np
import pytest

from index.dense import DenseEncoder, TorchEncoder, dense_available, torch_available
from parsers.errors import ConfigError, ModelNotAvailableError


def test_bad_batch_size_is_refused():
    with pytest.raises(ValueError):
        DenseEncoder(batch_size=0)


@pytest.mark.torch
def test_missing_model_dir_says_so(tmp_path):
    if not torch_available():
        pytest.skip("the [train] extra (torch, sentence-transformers, packaged MiniLM) is not installed")
    with pytest.raises(ModelNotAvailableError):
        TorchEncoder(model_path=tmp_path / "nope").encode(["x"])


def test_dense_encoder_takes_no_model_folder(tmp_path):
    with pytest.raises(ConfigError, match="TorchEncoder"):
        DenseEncoder(model_path=tmp_path)


def test_round_trip_of_options():
    enc = DenseEncoder(batch_size=8)
    assert DenseEncoder.from_dict(enc.to_dict()).batch_size == 8


@pytest.mark.dense
def test_encodes_unit_vectors_and_ranks_paraphrases_close():
    if not dense_available():
        pytest.skip("the [dense] extra is not installed (pip install 'dtdialog[dense]')")
    enc = DenseEncoder()
    v = enc.encode(["The brakes squeal when I stop.", "Squealing brakes while stopping.", "How to pay my bill?"])
    assert v.dtype == np.float32 and v.shape == (3, enc.dimension)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2]
    assert enc.encode([]).shape == (0, enc.dimension)
