"""DenseEncoder: unit-length float32 vectors from the packaged MiniLM, offline; clear errors otherwise."""

import numpy as np
import pytest

from index.dense import DenseEncoder, dense_available
from parsers.errors import ModelNotAvailableError


def test_bad_batch_size_is_refused():
    with pytest.raises(ValueError):
        DenseEncoder(batch_size=0)


def test_missing_model_dir_says_so(tmp_path):
    if not dense_available():
        pytest.skip("the [dense] extra is not installed")
    with pytest.raises(ModelNotAvailableError):
        DenseEncoder(model_path=tmp_path / "nope").encode(["x"])


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
