"""MiniLM on OpenVINO in bfloat16: chosen only where it is verified, close to ONNX Runtime's vectors, and a runtime
that cannot be used is a fallback (``auto``) or a one-line error (asked for by name)."""

import importlib.util
import logging
import threading

import numpy as np
import pytest

import parsers.encoder as pe
from parsers import encoder_openvino as ovr
from parsers.encoder import OnnxMiniLM
from parsers.errors import ConfigError, ModelNotAvailableError


def _usable() -> bool:
    return importlib.util.find_spec("onnxruntime") is not None and ovr.available() and ovr.computes_bf16()


needs_bf16_openvino = pytest.mark.skipif(not _usable(), reason="needs the [openvino] extra and a CPU with bfloat16 "
                                                                "units (AMX or AVX-512 BF16), where OpenVINO is used")
pytestmark = pytest.mark.dense


@pytest.fixture(autouse=True)
def own_home(tmp_path, monkeypatch):
    monkeypatch.setenv("DTDIALOG_HOME", str(tmp_path))
    monkeypatch.setattr(pe, "_fallen_back_openvino", set())
    return tmp_path


def _builtin_texts() -> list[str]:
    from data.builtin import load_builtin_corpus

    corpus = load_builtin_corpus()
    return list(dict.fromkeys([d.question for d in corpus] + [t.text for d in corpus for _, t in d.answers()]))


def test_bad_runtime_is_refused_in_one_line(monkeypatch):
    with pytest.raises(ConfigError, match="must be one of auto, onnxruntime, openvino"):
        OnnxMiniLM(runtime="cuda")
    monkeypatch.setenv("DTDIALOG_ENCODER_RUNTIME", "fast")
    with pytest.raises(ConfigError, match="DTDIALOG_ENCODER_RUNTIME"):
        OnnxMiniLM()


@needs_bf16_openvino
def test_auto_runs_openvino_within_cosine_0_9999_of_onnxruntime_and_remembers_the_check(own_home):
    texts = _builtin_texts()
    assert len(texts) >= 300
    auto = OnnxMiniLM()
    vectors = auto.encode(texts)
    assert isinstance(auto._session, ovr.OpenVinoSession) and auto.runtime_in_use == "openvino"
    reference = OnnxMiniLM(runtime="onnxruntime").encode(texts)
    cos = np.sum(vectors * reference, axis=1)
    assert cos.min() >= 0.9999, f"min {cos.min():.6f}"
    assert auto.model_id == pe.vectors_label(runtime="openvino") == pe.MODEL_ID + "/openvino-bf16"
    assert OnnxMiniLM(runtime="onnxruntime").model_id == pe.MODEL_ID + "/onnxruntime-fp32"  # never one cache
    [marker] = (own_home / "models").glob("*openvino*.verified")
    assert not list((own_home / "models").glob(".verify-*"))
    stamp = marker.stat().st_mtime_ns
    OnnxMiniLM().encode(texts[:1])  # a second process-like open checks nothing again
    assert marker.stat().st_mtime_ns == stamp


@needs_bf16_openvino
def test_padding_and_threads_move_openvino_vectors_by_rounding_only():
    texts = ["The brakes squeal when I stop.", "Check engine light", "", "Why does my car pull to the left "
             "when I brake hard on the highway, and shake at speed?", "Squealing brakes while stopping."] * 8
    enc = OnnxMiniLM(batch_size=2, workers=2, runtime="openvino")
    batched = enc.encode(texts)
    single = np.vstack([enc.encode([t]) for t in texts[:5]])
    assert np.sum(batched[:5] * single, axis=1).min() >= 0.9999
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    results: list = [None] * 4

    def encode(slot: int) -> None:
        results[slot] = enc.encode(texts)

    threads = [threading.Thread(target=encode, args=(slot,)) for slot in range(4)]  # more callers than streams
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got in results:
        assert np.array_equal(got, batched)


@needs_bf16_openvino
def test_a_failed_check_falls_back_to_onnxruntime_with_one_warning_and_remembers_nothing(own_home, monkeypatch,
                                                                                        caplog):
    monkeypatch.setattr(pe, "_BF16_MIN_COSINE", 1.01)  # no session can pass
    with caplog.at_level(logging.WARNING, logger="parsers.encoder"):
        first, second = OnnxMiniLM(), OnnxMiniLM()
        first.encode(["Why do my brakes squeal?"])
        second.encode(["Why do my brakes squeal?"])
    assert not isinstance(first._session, ovr.OpenVinoSession)
    [warning] = [r for r in caplog.records if r.name == "parsers.encoder"]
    assert "ONNX Runtime, not OpenVINO" in warning.getMessage() and "\n" not in warning.getMessage()
    assert not list((own_home / "models").glob("*openvino*")) and not list((own_home / "models").glob(".verify-*"))
    with pytest.raises(ModelNotAvailableError, match="OpenVINO cannot run the MiniLM here: the states differ"):
        OnnxMiniLM(runtime="openvino").encode(["x"])


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None, reason="the [dense] extra is not installed")
def test_without_openvino_or_bf16_units_auto_is_onnxruntime_and_asking_is_one_line(monkeypatch):
    real = importlib.util.find_spec
    with monkeypatch.context() as patch:
        patch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "openvino" else real(name, *a))
        enc = OnnxMiniLM()
        enc.encode(["brakes"])
        assert not isinstance(enc._session, ovr.OpenVinoSession)
        with pytest.raises(ModelNotAvailableError, match=r"needs OpenVINO: pip install 'dtdialog\[openvino\]'"):
            OnnxMiniLM(runtime="openvino").encode(["brakes"])
    if not ovr.available():
        return  # the CPU case below needs OpenVINO installed to be asked
    monkeypatch.setattr(ovr, "computes_bf16", lambda: False)
    enc = OnnxMiniLM()
    enc.encode(["brakes"])
    assert not isinstance(enc._session, ovr.OpenVinoSession)
    with pytest.raises(ModelNotAvailableError, match="no bfloat16 units"):
        OnnxMiniLM(runtime="openvino").encode(["brakes"])


def test_shared_encoder_is_one_per_runtime_setting(monkeypatch):
    monkeypatch.setenv("DTDIALOG_ENCODER_RUNTIME", "onnxruntime")
    ort = pe.shared_encoder()
    assert ort.runtime == "onnxruntime" and pe.shared_encoder() is ort
    monkeypatch.setenv("DTDIALOG_ENCODER_RUNTIME", "auto")
    assert pe.shared_encoder() is not ort and pe.shared_encoder().runtime == "auto"


@needs_bf16_openvino
def test_a_new_session_makes_its_first_tensor_reads_on_the_thread_that_opens_it(monkeypatch):
    """OpenVINO's bindings set up their numpy bridge on the first tensor read, and two threads doing their first
    reads at once can deadlock: the session does one pass when it opens, before any encoding worker can run."""
    calls: list[str] = []
    real_run = ovr.OpenVinoSession.run

    def run(self, outputs, feed):
        calls.append(threading.current_thread().name)
        return real_run(self, outputs, feed)

    monkeypatch.setattr(ovr.OpenVinoSession, "run", run)
    opener = threading.current_thread().name
    session = ovr.OpenVinoSession(pe.folded_weights_model(), threads=1, streams=2)
    assert calls == [opener]
    from tokenizers import Tokenizer

    enc = OnnxMiniLM(runtime="openvino", workers=2)  # its passes on the session above, from two worker threads
    enc._session, enc._tokenizer = session, Tokenizer.from_file(str(pe.TOKENIZER_FILE))
    vectors = enc.encode([f"the brakes squeal on cold morning number {i}" for i in range(12)])
    assert vectors.shape == (12, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert len(calls) == 1 + 3 and set(calls[1:]) <= {f"minilm_{i}" for i in range(2)}
