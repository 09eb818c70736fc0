"""The int8 ONNX MiniLM: pinned file, same vectors as the fp32 reference, no torch when serving, no mixed vectors."""

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from index.dense import DenseEncoder, TorchEncoder, dense_available, torch_available
from parsers.encoder import MODEL_SHA256, OnnxMiniLM, file_sha256, model_file
from parsers.errors import ConfigError, ModelNotAvailableError

ROOT = Path(__file__).resolve().parents[2]
needs_onnx = pytest.mark.skipif(not dense_available(), reason="the [dense] extra (onnxruntime, tokenizers) is not installed")
needs_torch = pytest.mark.skipif(not torch_available(),
                                 reason="the [train] extra (torch, sentence-transformers, packaged MiniLM) is not installed")


def test_bad_settings_are_refused():
    with pytest.raises(ConfigError):
        OnnxMiniLM(threads=0)
    with pytest.raises(ConfigError):
        OnnxMiniLM(batch_size=0)


def test_bad_thread_variable_is_one_line(monkeypatch):
    monkeypatch.setenv("DTDIALOG_ENCODER_THREADS", "two")
    with pytest.raises(ConfigError, match="DTDIALOG_ENCODER_THREADS"):
        OnnxMiniLM()


@needs_onnx
def test_assembled_file_matches_its_pin():
    assert file_sha256(model_file()) == MODEL_SHA256


@needs_onnx
def test_a_file_that_is_not_the_pinned_one_is_refused(tmp_path):
    other = tmp_path / "model.onnx"
    shutil.copyfile(model_file(), other)
    with open(other, "r+b") as fh:  # one byte changed: damaged download, swapped file
        fh.seek(1000)
        byte = fh.read(1)
        fh.seek(1000)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(ModelNotAvailableError) as info:
        OnnxMiniLM(model_path=other).encode(["x"])
    assert "sha256" in str(info.value) and "\n" not in str(info.value)


@needs_onnx
def test_missing_file_is_one_line(tmp_path):
    with pytest.raises(ModelNotAvailableError, match="missing"):
        OnnxMiniLM(model_path=tmp_path / "nope.onnx").encode(["x"])


@needs_onnx
def test_batched_equals_one_by_one_and_order_is_kept():
    texts = ["The brakes squeal when I stop.", "Check engine light", "", "Why does my car pull to the left "
             "when I brake hard on the highway, and shake at speed?", "Squealing brakes while stopping."]
    enc = OnnxMiniLM(batch_size=2, runtime="onnxruntime")  # float32: padding moves nothing (openvino: its own test)
    batched = enc.encode(texts)
    single = np.vstack([enc.encode([t]) for t in texts])
    assert np.allclose(batched, single, atol=1e-4)
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    assert batched[0] @ batched[4] > batched[0] @ batched[1]


@needs_onnx
def test_token_states_are_layers_4_and_6_with_offsets():
    text = "The brakes squeal."
    [(offsets, states)] = OnnxMiniLM().token_states([text])
    assert states.shape == (len(offsets), 768) and states.dtype == np.float32
    assert offsets[0] == (0, 0) and text[slice(*offsets[1])].lower() == "the"
    # mean pooling the last layer's half gives the sentence vector
    last = states[:, 384:].mean(axis=0)
    assert np.allclose(last / np.linalg.norm(last), OnnxMiniLM().encode([text])[0], atol=1e-4)


@pytest.mark.torch
@needs_onnx
@needs_torch
def test_cosine_to_the_fp32_reference_on_real_texts():
    """The built-in corpus's questions and answers: every int8 vector within cosine 0.999 of the fp32 one."""
    from data.builtin import load_builtin_corpus

    corpus = load_builtin_corpus()
    texts = list(dict.fromkeys([d.question for d in corpus] + [t.text for d in corpus for _, t in d.answers()]))
    assert len(texts) >= 300
    cos = np.sum(TorchEncoder().encode(texts) * DenseEncoder().encode(texts), axis=1)
    assert cos.min() >= 0.999, f"min {cos.min():.5f} mean {cos.mean():.5f}"


@pytest.mark.torch
@pytest.mark.shared_data
@pytest.mark.slow
@needs_onnx
@needs_torch
def test_cosine_to_the_fp32_reference_on_long_real_questions_and_answers(shared_data):
    """150 mechanics_qa_dev questions and 150 pool answers (long, multi-sentence): the hardest texts measured."""
    from dtdialog.ranking.dense_signals import dense_query_text
    from eval.datasets import load_mechanics

    mech = load_mechanics(shared_data)
    texts = [dense_query_text(d.question) for d in mech.dialogues[:150]] + [a.text for a in mech.pool[:150]]
    cos = np.sum(TorchEncoder().encode(texts) * DenseEncoder().encode(texts), axis=1)
    assert cos.min() >= 0.999, f"min {cos.min():.5f} mean {cos.mean():.5f}"


SERVING = """
import sys
from dtdialog.api.app import create_app
from dtdialog.setup.assembly import build_engine
from dtdialog.ranking.dense_signals import DenseSignals
from index.dense import DenseEncoder
from index.dense_store import build_dense_store
enc = DenseEncoder()
store = build_dense_store(ids=["a", "b"], texts=["brakes squeal", "pay a bill"], encoder=enc, progress=False)
assert DenseSignals(store=store, encoder=enc).query_vector("squealing brakes").shape == (384,)
loaded = sorted(m for m in ("torch", "transformers", "sentence_transformers") if m in sys.modules)
print("LOADED", loaded)
"""


@needs_onnx
def test_serving_path_imports_no_torch_or_transformers():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", SERVING], capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "LOADED []" in done.stdout


class _Fake:
    """A hashing encoder with a label, so mixed-encoder stores are tested without a model."""

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        self.calls = 0

    def encode(self, texts, *, progress=False):
        self.calls += len(texts)
        rows = np.zeros((len(texts), 8), dtype=np.float32)
        for i, t in enumerate(texts):
            rows[i, hash(t) % 8] = 1.0
        return rows


def test_a_store_of_another_encoder_is_refused_for_queries():
    from dtdialog.ranking.dense_signals import DenseSignals
    from index.dense_store import build_dense_store

    store = build_dense_store(ids=["a"], texts=["x"], encoder=_Fake("all-MiniLM-L6-v2"), progress=False)
    with pytest.raises(ModelNotAvailableError, match="made by all-MiniLM-L6-v2.*query encoder is int8"):
        DenseSignals(store=store, encoder=_Fake("int8"))


def test_refresh_re_encodes_everything_when_the_encoder_changed():
    from index.dense_store import build_dense_store, refresh_dense_store

    old = build_dense_store(ids=["a", "b"], texts=["x", "y"], encoder=_Fake("fp32"), progress=False)
    same = _Fake("fp32")
    assert refresh_dense_store(old, ids=["a", "b"], texts=["x", "y"], encoder=same, progress=False)[1] == 0
    new = _Fake("int8")
    store, encoded = refresh_dense_store(old, ids=["a", "b"], texts=["x", "y"], encoder=new, progress=False)
    assert encoded == 2 and new.calls == 2 and store.model == "int8"


def test_engine_re_encodes_an_index_encoded_by_the_old_model(tmp_path, caplog):
    from data.builtin import load_builtin_corpus
    from dtdialog.ranking.factory import _store_for
    from index.builder import build_index
    from index.dense_store import DenseStore, build_dense_store
    from index.registry import open_index
    from parsers.base import get_parser

    path = tmp_path / "answers.sqlite"
    build_index(dialogues=load_builtin_corpus()[:3], parser=get_parser("rules"), backend="sqlite", out=path,
                progress=False)
    with open_index(backend="sqlite", path=path) as index:
        ids, texts = index.answer_texts()
        old = build_dense_store(ids=ids, texts=texts, encoder=_Fake("all-MiniLM-L6-v2"), progress=False)
        old.generation = index.generation()
        old.save(path)
        new = _Fake("int8")
        with caplog.at_level(logging.WARNING, logger="dtdialog.ranking"):
            store = _store_for(index, path, encoder=new, progress=False)
    assert store.model == "int8" and new.calls == len(ids)
    assert "re-encoding" in caplog.text
    assert DenseStore.load(path, latest=True).model == "int8"  # saved: the next start loads it as is


@needs_onnx
def test_subword_states_take_pretokenised_words_without_truncation():
    enc = OnnxMiniLM()
    words = ["The", "alternator", "whines", "."] * 80  # 320 words, more subwords than one 256 window
    ids, word_of = enc.subwords(words)
    assert len(ids) > 256 and word_of[0] == 0 and word_of[-1] == len(words) - 1  # nothing cut
    [states] = enc.subword_states([ids[:254]])
    assert states.shape == (254, 768)
    # the same states token_states gives for the joined text, without its [CLS]/[SEP]
    [(offsets, full)] = enc.token_states([" ".join(words[:8])])
    [part] = enc.subword_states([enc.subwords(words[:8])[0]])
    assert np.allclose(part, full[1:-1], atol=1e-4)
    with pytest.raises(ConfigError, match="254"):
        enc.subword_states([ids[:255]])


@needs_onnx
def test_int8_arithmetic_is_derived_once_and_stays_close(tmp_path, monkeypatch):
    """The neural parser's copy: derived from the pinned file into the data home, reused, not batch-dependent."""
    pytest.importorskip("onnx", reason="deriving the int8-arithmetic graph needs the onnx package ([dense])")
    from parsers.encoder import int8_arithmetic_model

    monkeypatch.setenv("DTDIALOG_HOME", str(tmp_path))
    path = int8_arithmetic_model()
    assert path.parent == tmp_path / "models" and path.is_file()
    stamp = path.stat().st_mtime_ns
    assert int8_arithmetic_model() == path and path.stat().st_mtime_ns == stamp  # reused, not derived again
    fast, exact = OnnxMiniLM(arithmetic="int8"), OnnxMiniLM()
    assert fast.model_id.endswith("/onnxruntime-int8") and fast.model_id != exact.model_id and fast.step == 1
    ids, _ = exact.subwords("The alternator whines when the engine is cold .".split())
    a, b = fast.subword_states([ids])[0], exact.subword_states([ids])[0]
    cos = (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert 0.95 < cos.mean() < 0.9999  # close to the float states, and really another arithmetic
    longer = ids + ids[:40]
    assert np.array_equal(fast.subword_states([ids, longer])[0], a)  # each sequence runs alone
    with pytest.raises(ConfigError, match="arithmetic"):
        OnnxMiniLM(arithmetic="int4")


@needs_onnx
def test_int8_arithmetic_without_onnx_is_one_line(tmp_path, monkeypatch):
    import importlib.util

    from parsers.encoder import int8_arithmetic_model

    monkeypatch.setenv("DTDIALOG_HOME", str(tmp_path))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnx" else real(name, *a))
    with pytest.raises(ModelNotAvailableError, match="onnx package"):
        int8_arithmetic_model()


@needs_onnx
def test_batches_on_several_threads_give_the_same_vectors_in_order(monkeypatch):
    texts = [f"The {part} makes a noise after {n} miles." for n in range(40) for part in ("belt", "pump")]
    one, two = OnnxMiniLM(workers=1, batch_size=8), OnnxMiniLM(workers=2, batch_size=8)
    assert np.array_equal(one.encode(texts), two.encode(texts))
    monkeypatch.setenv("DTDIALOG_ENCODER_WORKERS", "zero")
    with pytest.raises(ConfigError, match="DTDIALOG_ENCODER_WORKERS"):
        OnnxMiniLM()
    with pytest.raises(ConfigError, match="workers"):
        OnnxMiniLM(workers=0)


def _builtin_texts() -> list[str]:
    from data.builtin import load_builtin_corpus

    corpus = load_builtin_corpus()
    return list(dict.fromkeys([d.question for d in corpus] + [t.text for d in corpus for _, t in d.answers()]))


def _shipped_vectors(texts, monkeypatch, caplog) -> np.ndarray:
    """Vectors of the shipped graph: what an encoder falls back to when the onnx package is missing."""
    import importlib.util

    import parsers.encoder as pe

    model_file()  # assembled while onnx is importable
    monkeypatch.setattr(pe, "_fallen_back", set())
    real = importlib.util.find_spec
    with monkeypatch.context() as patch:
        patch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnx" else real(name, *a))
        with caplog.at_level(logging.WARNING, logger="parsers.encoder"):
            vectors = OnnxMiniLM(workers=1, runtime="onnxruntime").encode(texts)
            OnnxMiniLM(workers=1, runtime="onnxruntime").encode(texts[:1])  # neither retries nor warns again
    warnings = [r for r in caplog.records if r.name == "parsers.encoder"]
    assert len(warnings) == 1 and "shipped graph" in warnings[0].getMessage() and "onnx" in warnings[0].getMessage()
    return vectors


@needs_onnx
def test_float_graph_is_derived_once_and_gives_the_shipped_vectors(tmp_path, monkeypatch, caplog):
    """Built-in questions and answers: the derived graph's vectors are the shipped graph's (cosine >= 0.99999),
    so indexes, the prebuilt bundle and the ranker made with either stay valid under one model label."""
    pytest.importorskip("onnx", reason="deriving the float graph needs the onnx package ([dense])")
    import onnx

    from parsers.encoder import float_arithmetic_model

    monkeypatch.setenv("DTDIALOG_HOME", str(tmp_path))
    texts = _builtin_texts()
    assert len(texts) >= 300
    shipped = _shipped_vectors(texts, monkeypatch, caplog)
    assert not list((tmp_path / "models").glob("*float*"))  # the fallback derived nothing
    import parsers.encoder as pe

    monkeypatch.setattr(pe, "_fallen_back", set())
    enc = OnnxMiniLM(workers=1, runtime="onnxruntime")
    derived = enc.encode(texts)
    path = float_arithmetic_model()
    assert path.parent == tmp_path / "models" and enc.model_id == pe.vectors_label(runtime="onnxruntime")
    stamp = path.stat().st_mtime_ns
    assert float_arithmetic_model() == path and path.stat().st_mtime_ns == stamp  # reused, not derived again
    ops = [n.op_type for n in onnx.load(str(path), load_external_data=False).graph.node]
    assert ops.count("MultiHeadAttention") == 6 and "Softmax" not in ops  # really the fused graph that ran
    cos = np.sum(shipped * derived, axis=1)
    assert cos.min() >= 0.99999, f"min {cos.min():.7f}"
    states = enc.token_states(texts[:3])  # layer 4 is an output of the derived graph too
    assert all(s.shape == (len(o), 768) for o, s in states)


@needs_onnx
def test_a_derivation_that_changes_the_vectors_is_refused_and_the_shipped_graph_runs(tmp_path, monkeypatch, caplog):
    pytest.importorskip("onnx", reason="deriving the float graph needs the onnx package ([dense])")
    import parsers.encoder as pe

    monkeypatch.setenv("DTDIALOG_HOME", str(tmp_path))
    real_fuse = pe._fuse_attention

    def wrong_heads(model) -> None:  # a fusion bug: 6 heads of 64 instead of 12 of 32
        real_fuse(model)
        for node in model.graph.node:
            if node.op_type == "MultiHeadAttention":
                node.attribute[0].i = 6

    monkeypatch.setattr(pe, "_fuse_attention", wrong_heads)
    monkeypatch.setattr(pe, "_fallen_back", set())
    with caplog.at_level(logging.WARNING, logger="parsers.encoder"):
        vectors = OnnxMiniLM(workers=1, runtime="onnxruntime").encode(["Why do my brakes squeal?"])
    assert vectors.shape == (1, 384)
    [warning] = [r for r in caplog.records if r.name == "parsers.encoder"]
    assert "differ" in warning.getMessage() and "\n" not in warning.getMessage()
    leftovers = [p.name for p in (tmp_path / "models").iterdir() if "float" in p.name or p.name.startswith(".derive")]
    assert leftovers == []  # nothing half-written, nothing wrong kept for the next process
