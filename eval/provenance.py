"""What an evaluation report records about how its figures were made: data, pool, parser, encoder, ranker, commit."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

from eval.datasets import REPO_ROOT, EvalSet


def git_commit(checkout: Path = REPO_ROOT) -> str:
    """Return the short sha of ``checkout`` (default: the one the code runs from), or ``unknown`` outside git."""
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "unknown"


def encoder_runtime() -> str:
    """Return who encodes: ``torch`` (the fp32 reference) or ``onnx/<runtime>``, the runtime the encoder resolves
    ``$DTDIALOG_ENCODER_RUNTIME`` to here (``onnxruntime`` or ``openvino``: ``auto`` decided), without loading it."""
    import index.dense as dense
    from parsers.encoder import resolved_runtime

    backend = dense.current_encoder()
    return backend if backend == "torch" else f"{backend}/{resolved_runtime()}"


def ranker_model(ranker: str | None = None, model_path: str | None = None) -> dict:
    """Return the ranker's name, its model file, the model's version and feature set (``hybrid+dt``, or ``hybrid``
    without discourse-tree features).

    ``ranker``: the one the engine built (``Engine.ranker``, ``DTQMethod.resolved_ranker``) when the evaluation has
    it, else the option given; ``auto`` and None are resolved as the engine resolves them over its SQLite pool index
    (``sqlite_ranker``), so a report never says ``auto``.
    """
    from dtdialog.ranking.learned_scorer import DEFAULT_MODEL
    from dtdialog.setup.spec_resolution import sqlite_ranker

    name = sqlite_ranker(ranker, model_path)
    if name == "rules":
        return {"name": name, "model": "", "version": "", "feature_set": ""}
    path = Path(model_path) if model_path else DEFAULT_MODEL
    try:
        manifest = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        version, feature_set = str(manifest.get("name", "")), str(manifest.get("feature_set", ""))
    except (OSError, ValueError, AttributeError):
        version, feature_set = "", ""
    return {"name": name, "model": str(path), "version": version, "feature_set": feature_set}


def data_record(eval_set: EvalSet) -> dict:
    """Return what ``eval_set`` is: its name, source (dataset or file), dialogue count and pool (kind, size)."""
    pool = dict(eval_set.meta.get("pool") or {"kind": "dataset", "source": eval_set.name})
    return {"name": eval_set.name, "data": eval_set.meta.get("data", eval_set.name),
            "dialogues": len(eval_set.dialogues), "pool": {**pool, "size": len(eval_set.pool)}}


def provenance(sets: Sequence[EvalSet | dict], *, parser: str | None = None, ranker: str | None = None,
               model_path: str | None = None, tree_ablation: bool = False) -> dict:
    """Return the provenance every report records: data and pool per set, parser, encoder runtime, ranker, commit;
    with ``tree_ablation`` also the ranker of the engine without the tree (``ranker_without_tree``). ``ranker``: the
    one the evaluation's engine resolved to, when it has one (``ranker_model``). A set may be given as its
    ``data_record`` already (a bench whose questions and pool are no ``EvalSet``)."""
    from dtdialog.setup.assembly import EngineSpec, engine_parser_name

    out = {"data": [s if isinstance(s, dict) else data_record(s) for s in sets], "parser": engine_parser_name(parser),
           "encoder_runtime": encoder_runtime(), "ranker": ranker_model(ranker, model_path), "commit": git_commit()}
    if tree_ablation:
        out["ranker_without_tree"] = ranker_model(ranker, EngineSpec(ranker_model=model_path, use_tree=False).model_path())
    return out


def provenance_lines(prov: dict) -> list[str]:
    """Return the report's text header: one line per set, then one line for the engine and the commit."""
    lines = [f"Data: {d['name']} ({d['data']})" + (f", {d['dialogues']} dialogues" if "dialogues" in d else "") +
             f"; pool: {d['pool']['kind']}, "
             f"{d['pool']['size']} answers" + (f" ({d['pool']['source']})" if d["pool"].get("source") else "")
             for d in prov["data"]]
    without = f"; without the tree: {_ranker_words(prov['ranker_without_tree'])}" if "ranker_without_tree" in prov else ""
    lines.append(f"Parser {prov['parser']}; encoder {prov['encoder_runtime']}; ranker {_ranker_words(prov['ranker'])}"
                 f"{without}; commit {prov['commit']}.")
    return lines


def _ranker_words(ranker: dict) -> str:
    """Return "learned ranker-v1 (hybrid+dt features)" or "rules"."""
    if not ranker["model"]:
        return ranker["name"]
    features = f" ({ranker['feature_set']} features)" if ranker.get("feature_set") else ""
    return f"{ranker['name']} {ranker['version'] or ranker['model']}{features}"
