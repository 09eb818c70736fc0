"""A report's provenance names what the engine resolved: the encoder runtime and the ranker, never ``auto``."""

from __future__ import annotations

import argparse
import json

import pytest

from eval.datasets import EvalDialogue, EvalSet, PoolAnswer
from eval.methods.base import RankingMethod
from eval.provenance import encoder_runtime, provenance, provenance_lines


@pytest.fixture
def tiny_set() -> EvalSet:
    pool = (PoolAnswer(id="d1#1", text="Replace the battery.", dialogue_id="d1", position=1),
            PoolAnswer(id="d2#1", text="Top up the coolant.", dialogue_id="d2", position=1))
    dialogues = (EvalDialogue(id="d1", question="My car will not start.", answer_ids=("d1#1",)),
                 EvalDialogue(id="d2", question="The engine overheats.", answer_ids=("d2#1",)))
    return EvalSet(name="tiny", dialogues=dialogues, pool=pool)


def test_the_encoder_runtime_is_the_one_auto_resolves_to(monkeypatch):
    from parsers.encoder import resolved_runtime

    monkeypatch.delenv("DTDIALOG_ENCODER_RUNTIME", raising=False)
    assert encoder_runtime() == f"onnx/{resolved_runtime()}"
    assert encoder_runtime() in ("onnx/onnxruntime", "onnx/openvino")
    monkeypatch.setenv("DTDIALOG_ENCODER_RUNTIME", "onnxruntime")
    assert encoder_runtime() == "onnx/onnxruntime"


def test_an_unresolved_ranker_is_recorded_as_the_engine_resolves_it(tiny_set, monkeypatch):
    monkeypatch.delenv("DTDIALOG_RANKER", raising=False)
    monkeypatch.setattr("index.dense.dense_available", lambda: False)
    prov = provenance([tiny_set])
    assert prov["ranker"] == {"name": "rules", "model": "", "version": "", "feature_set": ""}
    assert "ranker rules;" in provenance_lines(prov)[-1]
    monkeypatch.setattr("index.dense.dense_available", lambda: True)
    prov = provenance([tiny_set], ranker="auto", tree_ablation=True)
    assert prov["ranker"]["name"] == "learned" and prov["ranker"]["version"] == "ranker-v1"
    assert prov["ranker_without_tree"]["version"] == "ranker-v1-hybrid"


def test_the_ranker_the_engine_built_wins_over_what_the_environment_says(tiny_set, monkeypatch):
    monkeypatch.setenv("DTDIALOG_RANKER", "learned")
    assert provenance([tiny_set], ranker="rules")["ranker"]["name"] == "rules"


class _ResolvedLearned(RankingMethod):
    """An engine method whose engine resolved to the learned ranker, whatever the option said."""

    name = "dtq"
    label = "fake engine"

    def fit(self, *, pool):
        self.resolved_ranker = "learned"

    def rank(self, *, question, followups, step, exclude_ids, k):
        return []


def test_reconstruct_records_the_ranker_its_engine_method_resolved_to(tiny_set, monkeypatch, tmp_path):
    from eval import reconstruct

    monkeypatch.delenv("DTDIALOG_RANKER", raising=False)
    monkeypatch.setattr("index.dense.dense_available", lambda: False)  # the option alone would resolve to rules
    monkeypatch.setattr(reconstruct, "get_method", lambda name, **options: _ResolvedLearned())
    ds = reconstruct.run_dataset("tiny", ["dtq"], data_dir=None, limit=None, k=5, seed=13, n_resamples=5,
                                 progress=False, eval_set=tiny_set,
                                 args=argparse.Namespace(parser=None, ranker=None, pool=None))
    assert ds.runs[0].ranker == "learned"
    assert ds.provenance["ranker"]["name"] == "learned"
    reconstruct.write_outputs(tmp_path, [ds])
    assert json.loads((tmp_path / "provenance.json").read_text())["tiny"]["ranker"]["name"] == "learned"
