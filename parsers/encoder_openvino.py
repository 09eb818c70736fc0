"""MiniLM's float graph run by OpenVINO in bfloat16, on CPUs that compute bfloat16 natively (AMX, AVX-512 BF16).

Why a second runtime: ONNX Runtime's CPU provider multiplies in float32 only. On a CPU with bfloat16 units,
OpenVINO multiplies bfloat16 inputs into float32 sums, which runs MiniLM several times faster (docs/encoder.md
has the figures) while its sentence vectors stay within cosine 0.9999 of the float32 ones. On other CPUs it
would multiply in float32 and win nothing, so ``computes_bf16`` asks OpenVINO itself before anyone uses it.

OpenVINO reads the pinned ONNX file as it is (it folds the int8 weights' ``Cast`` + ``Mul`` once, at compile
time), so no derived file is written: ``verified_session`` only keeps a small marker, once a session's states
have passed the caller's check on this machine and this OpenVINO version.
"""

from __future__ import annotations

import importlib.util
import queue
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from parsers.files import atomic_write_text
from parsers.home import data_home

#: The ``pip`` extra that installs OpenVINO.
INSTALL_HINT = "pip install 'dtdialog[openvino]'"


def available() -> bool:
    return importlib.util.find_spec("openvino") is not None


def computes_bf16() -> bool:
    """Return True when OpenVINO's own default precision for this CPU is bfloat16, i.e. the CPU has the units."""
    import openvino as ov

    return ov.Core().get_property("CPU", "INFERENCE_PRECISION_HINT") == ov.Type.bf16


#: Inputs are padded to a multiple of this many tokens (masked, so the states of real tokens stay the same).
WIDTH_STEP = 16


class OpenVinoSession:
    """One compiled MiniLM with ONNX Runtime's ``run(outputs, feed)``, safe to call from several threads.

    ``streams`` forward passes run at once (one per thread calling ``run``; more callers wait for a free
    stream), each on ``threads`` cores. Threads are not pinned to cores: the machine is shared with spaCy,
    SQLite and other workers.

    Why inputs are padded to ``WIDTH_STEP`` and one-text requests kept per width: OpenVINO re-plans a request's
    kernels and buffers whenever its input shape changes, a large share of a short query, so a request that only
    ever sees one shape never pays it, and padding leaves at most 16 widths to see. Batches (an index build's
    answers) share requests of any shape: there the re-plan is small beside the batch, and a request per batch
    shape would hold large buffers.
    """

    def __init__(self, model_path: Path, *, threads: int, streams: int) -> None:
        import openvino as ov

        core = ov.Core()
        self._compiled = core.compile_model(core.read_model(str(model_path)), "CPU", {
            "INFERENCE_PRECISION_HINT": "bf16", "NUM_STREAMS": streams,
            "INFERENCE_NUM_THREADS": streams * threads, "ENABLE_CPU_PINNING": False})
        self._outputs = {port.any_name: port for port in self._compiled.outputs}
        self._idle: dict[tuple[int, ...], queue.SimpleQueue] = {}  # one text's shape, or () -> free requests
        self._lock = threading.Lock()
        # OpenVINO's bindings set up their numpy bridge (pybind11) on the first tensor read in the process, and two
        # threads making their first reads at once can deadlock there: one pass now, on this thread, sets it up.
        ids = np.array([[101, 102]], dtype=np.int64)  # [CLS] [SEP]
        self.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})

    def run(self, outputs: Sequence[str] | None, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        names = list(self._outputs) if outputs is None else list(outputs)
        width = feed["input_ids"].shape[1]
        padded = -(-width // WIDTH_STEP) * WIDTH_STEP
        if padded != width:  # [PAD] is id 0, masked out
            feed = {k: np.pad(v, ((0, 0), (0, padded - width))) for k, v in feed.items()}
        shape = feed["input_ids"].shape if len(feed["input_ids"]) == 1 else ()
        with self._lock:
            idle = self._idle.setdefault(shape, queue.SimpleQueue())
        try:
            request = idle.get_nowait()
        except queue.Empty:
            request = self._compiled.create_infer_request()
        try:
            result = request.infer(feed)  # copies the outputs out, so the request can serve the next caller
            return [result[self._outputs[name]][:, :width] for name in names]
        finally:
            idle.put(request)


def verified_session(model_path: Path, sha256: str, *, threads: int, streams: int,
                     check: Callable[[OpenVinoSession], None]) -> OpenVinoSession:
    """Return an ``OpenVinoSession`` of ``model_path`` once ``check(session)`` has passed on this machine.

    The pass is remembered by a marker in ``data_home()/models`` named by the model's pin and the OpenVINO
    version (written atomically, after the check); ``check`` raises when the states are not close enough, and
    nothing is remembered then.
    """
    import openvino as ov

    session = OpenVinoSession(model_path, threads=threads, streams=streams)
    version = re.sub(r"[^\w.]+", "_", ov.__version__)  # it may hold "/" ("...-releases/2026/4")
    marker = data_home() / "models" / f"minilm-l6-v2-openvino-bf16-{sha256[:12]}-ov{version}.verified"
    if not marker.is_file():
        check(session)
        atomic_write_text(marker, f"{model_path.name}: states within the check's cosine of ONNX Runtime's float32\n")
    return session
