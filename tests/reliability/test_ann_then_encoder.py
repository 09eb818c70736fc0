"""Reproduces a crash: a process that built an ANN graph (usearch) and then loaded the ONNX encoder died of SIGSEGV.

Importing usearch (it loads its numkong kernels with RTLD_GLOBAL) before onnxruntime's first import made that
import crash; ``index.dense_ann`` now loads onnxruntime first. Run in a child process so a crash fails this
test instead of killing the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import numpy as np
from index.dense_ann import AnnIndex
v = np.random.default_rng(0).standard_normal((500, 32)).astype(np.float32)
v /= np.linalg.norm(v, axis=1, keepdims=True)
ann = AnnIndex.build(v)
from parsers.encoder import shared_encoder
print(shared_encoder().encode(["the car does not start"]).shape, ann.search(v[0], 3)[0])
"""


@pytest.mark.dense
@pytest.mark.timeout(120)
def test_building_a_graph_then_loading_the_encoder_does_not_crash():
    from index.dense import dense_available
    from index.dense_ann import ann_available

    if not ann_available():
        pytest.skip("the [ann] extra (usearch) is not installed")

    if not dense_available():
        pytest.skip("the [dense] extra is not installed")
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=110,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.split() == ["(1,", "384)", "0"]
