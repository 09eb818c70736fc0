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
