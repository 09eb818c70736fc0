"""A calibrator fitted on a team's own dialogues: ``--calibrator FILE``, a project's ``calibrator:`` key, a saved spec,
and ``eval.calibrate --data`` writing it beside its report, never over the shipped ones."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from dtdialog.cli import main
from dtdialog.selection.confidence import RULES_CALIBRATOR, Calibrator
from dtdialog.setup.project import PROJECT_FILE, load_project
from parsers.errors import ConfigError

ROUTER = "The lights on my router are all red and nothing works."


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("DTDIALOG_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DTDIALOG_INDEX", raising=False)


def _doubting(path: Path, *, ranker: str = "rules", model_name: str = "") -> Path:
    """Write a calibrator that gives every answer a near-zero chance (as a team's would on a pool the ranker reads
    badly): whatever the step's numbers, its probability is sigmoid(-8)."""
    return Calibrator(ranker=ranker, feature_names=("margin",), coef=(0.0,), intercept=-8.0, means=(0.0,),
                      scales=(1.0,), model_name=model_name).save(path)


def _first_turn(capsys, tmp_path: Path, argv: list[str], *, engine: tuple[str, ...] = ("--ranker", "rules")) -> dict:
    """Return the bot's first JSON turn to ``ROUTER`` (``engine``: the options that choose it; a saved spec takes
    none)."""
    script = tmp_path / "turns.txt"
    script.write_text(ROUTER + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["chat", *argv, "--script", str(script), "--json", "--quiet", *engine]) == 0
    return json.loads(capsys.readouterr().out.splitlines()[0])


@pytest.fixture
def project(tmp_path, monkeypatch):
    folder = tmp_path / "bot"
    assert main(["init", str(folder)]) == 0
    monkeypatch.chdir(folder)
    return folder


def test_the_projects_calibrator_decides_the_confidence(project, tmp_path, capsys):
    shipped = _first_turn(capsys, tmp_path, [])
    assert shipped["kind"] == "answer" and shipped["confidence"] >= 0.21  # the shipped calibrator answers it

    _doubting(project / ".dtdialog" / "calibrator.json")
    config = yaml.safe_load((project / PROJECT_FILE).read_text(encoding="utf-8"))
    config["calibrator"] = ".dtdialog/calibrator.json"
    (project / PROJECT_FILE).write_text(yaml.safe_dump(config), encoding="utf-8")
    own = _first_turn(capsys, tmp_path, [])
    assert own["kind"] != "answer" and own.get("answer_id") in (None, "")  # the team's calibrator doubts it


def test_the_calibrator_option_beats_the_projects_and_a_missing_file_is_one_line(project, tmp_path, capsys):
    own = _first_turn(capsys, tmp_path, ["--calibrator", str(_doubting(tmp_path / "doubting.json"))])
    assert own["kind"] != "answer"
    capsys.readouterr()
    assert main(["chat", "--calibrator", str(tmp_path / "nowhere.json"), "--ranker", "rules", "--quiet",
                 "--script", str(tmp_path / "turns.txt")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no calibrator at" in err and "nowhere.json" in err


def test_a_calibrator_fitted_for_another_ranker_is_refused(project, tmp_path, capsys):
    learned = _doubting(tmp_path / "learned.json", ranker="learned", model_name="ranker-v1")
    (tmp_path / "turns.txt").write_text(ROUTER + "\n", encoding="utf-8")
    assert main(["chat", "--calibrator", str(learned), "--ranker", "rules", "--quiet",
                 "--script", str(tmp_path / "turns.txt")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "fitted for the learned ranker-v1 ranker" in err and "rules" in err


def test_a_project_naming_a_missing_calibrator_says_how_to_fit_it(project):
    config = yaml.safe_load((project / PROJECT_FILE).read_text(encoding="utf-8"))
    config["calibrator"] = ".dtdialog/calibrator.json"
    (project / PROJECT_FILE).write_text(yaml.safe_dump(config), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"calibrator .* not found; fit it with python -m eval.calibrate --data"):
        load_project(project / PROJECT_FILE)


def test_a_saved_spec_keeps_its_calibrator_and_refuses_one_gone_missing(project, tmp_path, capsys):
    from dtdialog.setup.assembly import EngineSpec

    calibrator = _doubting(tmp_path / "doubting.json")
    spec_file = tmp_path / "engine.json"
    assert main(["chat", "--calibrator", str(calibrator), "--ranker", "rules", "--save-engine", str(spec_file)]) == 0
    assert EngineSpec.load(spec_file).calibrator == str(calibrator)
    assert _first_turn(capsys, tmp_path, ["--engine", str(spec_file)], engine=())["kind"] != "answer"
    calibrator.unlink()
    with pytest.raises(ConfigError, match="the calibrator file .*doubting.json is missing"):
        EngineSpec.load(spec_file)


def test_calibrating_on_ones_own_data_writes_beside_the_report_not_over_the_shipped_one(tmp_path, capsys):
    from data.builtin import load_builtin_corpus
    from eval.calibrate import main as calibrate

    data = tmp_path / "ours.jsonl"
    data.write_text("".join(json.dumps(d.to_dict()) + "\n" for d in load_builtin_corpus()[:12]), encoding="utf-8")
    shipped = hashlib.sha256(RULES_CALIBRATOR.read_bytes()).hexdigest()
    out = tmp_path / "out"
    assert calibrate(["--data", str(data), "--format", "jsonl", "--rankers", "rules", "--out", str(out),
                      "--no-progress"]) == 0
    assert hashlib.sha256(RULES_CALIBRATOR.read_bytes()).hexdigest() == shipped
    own = Calibrator.load(out / RULES_CALIBRATOR.name)
    assert own.ranker == "rules" and "ours" in own.manifest["fitted_on"]
    assert f"dtdialog chat --calibrator {out / RULES_CALIBRATOR.name}" in capsys.readouterr().out
