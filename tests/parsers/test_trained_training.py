"""The training pipeline end to end on a couple of GUM documents (fast; skipped without GUM)."""

from __future__ import annotations

import json

import pytest

from parsers.gum import NON_COMMERCIAL_GENRES
from parsers.train import main
from parsers.trained_parser import MANIFEST_FILE, MODEL_FILE, TrainedParser

pytestmark = pytest.mark.gum


def test_train_tiny_model_end_to_end(gum_dir, tmp_path, capsys):
    out = tmp_path / "tiny-model"
    code = main(["--gum", str(gum_dir), "--out", str(out), "--limit", "2", "--quick", "--no-test"])
    assert code == 0
    assert (out / MODEL_FILE).is_file()
    manifest = json.loads((out / MANIFEST_FILE).read_text(encoding="utf-8"))
    assert len(manifest["data"]["train_docs"]) == 2
    assert not any(name.split("_")[1] in NON_COMMERCIAL_GENRES for name in manifest["data"]["train_docs"])
    assert 0.0 <= manifest["scores"]["dev"]["seg_f1"] <= 1.0
    printed = json.loads(capsys.readouterr().out)
    assert "dev" in printed
    # The directory is loadable as a model by path.
    tree = TrainedParser(model=str(out)).parse("The engine stalled because the battery was dead.")
    assert tree.parser == "trained" and tree.edus


def test_train_reports_missing_corpus_as_error(tmp_path, capsys):
    code = main(["--gum", str(tmp_path / "nowhere"), "--out", str(tmp_path / "m"), "--quick"])
    assert code == 2
    assert "error:" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
