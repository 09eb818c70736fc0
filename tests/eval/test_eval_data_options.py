"""Every evaluation that reads dialogues takes ``--data FILE --format F`` (and ``--pool`` where it builds a pool from
them), and its report records the provenance: the calibrations, the Haystack and hybrid benches, the ranker's
training."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def smoke_env(monkeypatch, tmp_path):
    monkeypatch.setenv("DTDIALOG_PARSER", "rules")
    monkeypatch.delenv("DTDIALOG_RANKER", raising=False)
    return tmp_path


def test_calibrate_reads_a_dialogue_file(toy_file, smoke_env, capsys):
    from eval.calibrate import main

    out = smoke_env / "out"
    # read and ranked: the four toy dialogues are too few to fit on, which the calibration says in one line
    assert main(["--data", str(toy_file), "--format", "jsonl", "--rankers", "rules", "--out", str(out),
                 "--models-dir", str(smoke_env / "models"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "error: calibration needs both right and wrong answers (at least 4 rows)"
    assert (out / "rows" / "rules" / "rows_toy_dialogues_dtq.json").is_file()


def test_calibrate_records_the_pool_and_the_provenance(smoke_env, capsys):
    from eval.calibrate import main

    out = smoke_env / "out"
    assert main(["--sets", "builtin", "--pool", "file", "--limit", "8", "--rankers", "rules", "--out", str(out),
                 "--models-dir", str(smoke_env / "models"), "--no-progress"]) == 0
    [report] = json.loads((out / "calibration.json").read_text(encoding="utf-8"))
    prov = report["provenance"]
    assert [(d["name"], d["dialogues"], d["pool"]["kind"]) for d in prov["data"]] == [("builtin", 8, "file")]
    assert prov["parser"] == "rules" and prov["ranker"]["name"] == "rules"
    assert prov["encoder_runtime"] in ("onnx/onnxruntime", "onnx/openvino") and prov["commit"]
    assert "Parser rules;" in capsys.readouterr().out


@pytest.mark.parametrize("module", ["eval.calibrate", "eval.calibrate_followup"])
def test_a_calibration_takes_a_file_or_named_sets_not_both(module, toy_file, capsys):
    import importlib

    main = importlib.import_module(module).main
    assert main(["--data", str(toy_file), "--format", "jsonl", "--sets", "builtin"]) == 2
    assert capsys.readouterr().err.strip() == "error: give --data FILE or --sets, not both"
    assert main(["--sets", "builtin", "--format", "jsonl"]) == 2
    assert "--format applies to --data FILE" in capsys.readouterr().err


def test_calibrate_followup_reads_a_dialogue_file(toy_file, smoke_env, capsys):
    from eval.calibrate_followup import main

    assert main(["--data", str(toy_file), "--format", "jsonl", "--rankers", "rules", "--out", str(smoke_env / "out"),
                 "--models-dir", str(smoke_env / "models"), "--no-progress"]) == 2
    # the toy file's one follow-up step was found and scored: too few to fit on
    assert capsys.readouterr().err.strip().splitlines()[-1] == ("error: only 1 follow-up steps: too few to fit a "
                                                                "calibrator")


def test_calibrate_followup_takes_a_pool_for_its_named_sets(toy_file):
    import argparse

    from eval.calibrate_followup import load_sets
    from eval.data_args import add_data_arguments

    parser = argparse.ArgumentParser()
    parser.add_argument("--sets")
    parser.add_argument("--limit", type=int)
    add_data_arguments(parser, dataset=False)
    whole = load_sets(parser.parse_args(["--sets", "builtin"]))[0]
    more = load_sets(parser.parse_args(["--sets", "builtin", "--pool", str(toy_file), "--format", "jsonl"]))[0]
    assert len(more.pool) == len(whole.pool) + 5
    assert more.meta["pool"] == {"kind": "answer file", "source": str(toy_file)}


def test_hybrid_bench_times_a_dialogue_file_and_records_the_provenance(toy_file, smoke_env, capsys):
    from eval.hybrid_bench import main

    out = smoke_env / "bench.json"
    assert main(["--data", str(toy_file), "--format", "jsonl", "--data-dir", str(smoke_env / "no-shared-data"),
                 "--answers", "12", "--questions", "2", "--cache", str(smoke_env / "cache"), "--json", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["sources"] == {"toy_dialogues": 5} and result["answers_indexed"] == 12
    prov = result["provenance"]
    assert prov["data"] == [{"name": "toy_dialogues", "data": str(toy_file), "dialogues": 2,
                             "pool": {"kind": "distinct bench corpus", "source": "toy_dialogues", "size": 12}}]
    assert prov["ranker"]["name"] == "learned" and prov["ranker"]["version"] == "ranker-v1"
    assert prov["parser"] == "rules" and prov["encoder_runtime"] in ("onnx/onnxruntime", "onnx/openvino")
    assert "Data: toy_dialogues" in capsys.readouterr().out


def test_the_hybrid_bench_index_starts_with_the_timed_files_answers(toy_file, tmp_path):
    from eval.datasets import load_file_set
    from eval.hybrid_bench import assemble_corpus

    own = load_file_set(toy_file, "jsonl")
    corpus = assemble_corpus(answers=7, data_dir=tmp_path, first=(own.name, own.pool))
    assert [a.id for a in corpus.answers[:5]] == [a.id for a in own.pool]  # kept: the follow-ups find them
    assert corpus.sources == {"toy_dialogues": 5} and corpus.replicas == 2
    assert "builtin" in assemble_corpus(answers=7, data_dir=tmp_path).sources  # no file: the built-in answers


def test_hybrid_bench_refuses_a_format_without_a_file(capsys):
    from eval.hybrid_bench import main

    assert main(["--format", "jsonl"]) == 2
    assert capsys.readouterr().err.strip() == ("error: --format applies to --data FILE; a named dataset knows its own "
                                               "format")


def _fake_haystack(monkeypatch, eval_set_answers: dict[str, str]):
    """Stand Haystack and the engine's build in, so the bench's data and report handling run without them."""
    from types import SimpleNamespace

    from dtdialog.ranking.learned_scorer import MODELS_DIR
    from eval import haystack_bench as hb

    class Selector:
        def plan(self, question):
            return question

        def rank(self, *, question, step, size):
            return [SimpleNamespace(document=SimpleNamespace(id=eval_set_answers.get(question, "none")))]

    engine = SimpleNamespace(selector=Selector(), parser=None, ranker="learned", close=lambda: None,
                             spec=SimpleNamespace(ranker_model=MODELS_DIR / "ranker-v1.joblib"))
    settings = {"parser": "rules", "haystack_version": "fake", "torch_threads": 1, "encoder_threads": 1,
                "encoder_workers": 1, "cpu_count": 2}
    monkeypatch.setattr(hb, "haystack_available", lambda: None)
    monkeypatch.setattr(hb, "_settings", lambda threads: dict(settings))
    monkeypatch.setattr(hb, "build_dtdialog", lambda eval_set, *, tmp, progress: (engine, 100.0, None))
    monkeypatch.setattr(hb, "build_haystack", lambda eval_set, *, progress: ({"haystack RRF": None}, 20.0))
    monkeypatch.setattr(hb, "haystack_top", lambda pipe, question: None)
    monkeypatch.setattr(hb, "time_floors", lambda eval_set, *, parser, encoder, progress: (1.0, 1.0, [1.0]))


def test_haystack_bench_reads_a_dialogue_file_with_its_pool_and_records_the_provenance(toy_file, toy_dialogues,
                                                                                       monkeypatch, tmp_path, capsys):
    from eval.haystack_bench import main

    _fake_haystack(monkeypatch, {d.question: d.answer_ids[0] for d in toy_dialogues})
    out = tmp_path / "bench.json"
    assert main(["--data", str(toy_file), "--format", "jsonl", "--pool", "file", "--limit", "3", "--quiet",
                 "--json", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["questions"] == 3 and result["pool"] == 5 and result["rows"]["dtdialog hybrid+dt"]["p1"] == 1.0
    prov = result["provenance"]
    assert prov["data"] == [{"name": "toy_dialogues", "data": str(toy_file), "dialogues": 3,
                             "pool": {"kind": "file", "source": str(toy_file), "size": 5}}]
    assert prov["ranker"]["name"] == "learned" and prov["ranker"]["version"] == "ranker-v1"
    assert "Data: toy_dialogues" in capsys.readouterr().out


def test_haystack_bench_names_mechanics_its_one_named_set(capsys):
    from eval.haystack_bench import main

    assert main(["--dataset", "twitter"]) == 2
    assert "the bench's named set is mechanics" in capsys.readouterr().err


def test_train_ranker_reads_its_data_directory_and_records_the_provenance(tmp_path, monkeypatch, capsys):
    import numpy as np
    from test_train_ranker import synthetic

    from eval import train_ranker
    from eval.datasets import EvalDialogue, EvalSet, PoolAnswer

    queries = synthetic(30)
    mechanics = EvalSet("mechanics", tuple(EvalDialogue(q.question_id, f"question {q.question_id}", ("a0",))
                                           for q in queries), (PoolAnswer("a0", "an answer", "d0", 1),))
    read_from = []

    def collect(*, data_dir, cache, k, limit, progress):
        read_from.append(data_dir)
        return queries

    monkeypatch.setattr(train_ranker, "collect", collect)
    monkeypatch.setattr(train_ranker, "full_pool_dense_ranks", lambda **_: np.zeros(len(queries), dtype=int))
    monkeypatch.setattr("eval.datasets.load_mechanics", lambda data_dir: mechanics)
    out = tmp_path / "report.json"
    assert train_ranker.main(["--data-dir", str(tmp_path / "shared"), "--no-save", "--no-progress",
                              "--cache", str(tmp_path / "cache"), "--json", str(out)]) == 0
    assert read_from == [tmp_path / "shared"]
    prov = json.loads(out.read_text(encoding="utf-8"))["provenance"]
    assert prov["data"] == [{"name": "mechanics", "data": "mechanics", "dialogues": 30,
                             "pool": {"kind": "dataset", "source": "mechanics", "size": 1}}]
    assert prov["ranker"]["name"] == "learned" and prov["ranker"]["version"] == "ranker-v1"
    assert prov["encoder_runtime"] in ("onnx/onnxruntime", "onnx/openvino")
    assert "Data: mechanics (mechanics), 30 dialogues" in capsys.readouterr().out


def test_encoder_probe_names_its_data_directory_data_dir(tmp_path, monkeypatch):
    from eval import encoder_probe

    seen = []
    monkeypatch.setattr(encoder_probe, "run", seen.append)
    assert encoder_probe.main(["--model", "m", "--data-dir", str(tmp_path)]) == 0
    assert seen[0].data_dir == str(tmp_path)
