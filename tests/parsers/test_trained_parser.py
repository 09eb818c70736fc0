"""The trained parser: no longer shipped, trained here on a few GUM documents; loads by name or path, parses the
paper's example, says how to train it when absent."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from parsers.base import available_parsers, get_parser
from parsers.errors import ConfigError, InputError, ModelNotAvailableError
from parsers.relations import RELATIONS, is_default
from parsers.trained_parser import DEFAULT_MODEL, MANIFEST_FILE, MODEL_FILE, MODELS_DIR, ParserModel, TrainedParser

PAPER_EXAMPLE = ("I have checked the spark plugs, replaced the battery, also replaced ignition coils and the "
                 "solenoid, but I still could not start my car.")


@pytest.fixture(scope="module")
def model_dir(gum_dir, tmp_path_factory):
    """A small model trained on 8 GUM documents (about 10 s): the shipped one left the repository (size budget)."""
    from parsers.train import main

    out = tmp_path_factory.mktemp("trained") / "small"
    assert main(["--gum", str(gum_dir), "--out", str(out), "--limit", "8", "--quick", "--no-test"]) == 0
    return out


@pytest.fixture(scope="module")
def parser(model_dir):
    return TrainedParser(model=str(model_dir))


def test_registered_by_name():
    assert "trained" in available_parsers()


def test_not_shipped_and_the_error_says_how_to_train_it(tmp_path, monkeypatch):
    monkeypatch.setenv("DTDIALOG_HOME", str(tmp_path))
    assert not (MODELS_DIR / DEFAULT_MODEL).exists()
    with pytest.raises(ModelNotAvailableError) as info:
        get_parser("trained")
    message = str(info.value)
    assert "python -m parsers.train" in message and str(tmp_path / "models" / DEFAULT_MODEL) in message
    assert "\n" not in message


def test_a_model_trained_into_the_data_home_loads_by_name(model_dir, tmp_path, monkeypatch):
    import shutil

    monkeypatch.setenv("DTDIALOG_HOME", str(tmp_path))
    shutil.copytree(model_dir, tmp_path / "models" / DEFAULT_MODEL)
    tree = get_parser("trained").parse("The engine stalled because the battery was dead.")
    assert tree.parser == "trained" and tree.edus


def test_trained_model_is_described(model_dir):
    manifest = json.loads((model_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
    assert manifest["sklearn_version"]
    assert set(manifest["data"]["genres_excluded"]) >= {"fiction", "essay", "letter", "podcast", "whow", "reddit"}
    assert not set(manifest["data"]["genres_used"]) & set(manifest["data"]["genres_excluded"])
    for level in ("intra", "inter"):
        labels = manifest["components"]["labeller"][level]["labels"]
        assert labels and all(lab.split("|")[0] in RELATIONS and lab.split("|")[1] in ("NS", "SN", "NN")
                              for lab in labels)
    card = (model_dir / "MODEL_CARD.md").read_text(encoding="utf-8")
    assert "CC-BY 4.0" in card and "fiction" in card


def test_model_loads_without_scikit_learn(model_dir):
    code = ("import sys; from parsers.trained_parser import ParserModel; "
            f"m = ParserModel.from_disk({str(model_dir)!r}); "
            "print(sorted(m.structure), 'sklearn' in sys.modules, 'scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"}, cwd=str(MODELS_DIR.parents[1]))
    assert out.stdout.split() == ["['inter',", "'intra']", "False", "False"]


def test_paper_example_gets_a_tree(parser):
    tree = parser.parse(PAPER_EXAMPLE)
    assert tree.parser == "trained"
    assert len(tree.edus) >= 3
    # EDUs tile the text in order and carry lemmas/entities for the index.
    assert [e.index for e in tree.edus] == list(range(len(tree.edus)))
    assert all(tree.text[e.start:e.end] == e.text for e in tree.edus)
    assert any("battery" in e.lemmas for e in tree.edus)
    assert any("spark plugs" in e.entities for e in tree.edus)
    # "but I still could not start my car" is its own unit.
    assert any(e.text.startswith("but") for e in tree.edus), [e.text for e in tree.edus]
    assert tree.root.span == (0, len(tree.edus) - 1)
    assert all(not is_default(r) or r in RELATIONS for r in tree.relations())


def test_parse_many_keeps_order_and_single_edu_texts(parser):
    texts = ["My car will not start.", PAPER_EXAMPLE, "Hello"]
    trees = list(parser.parse_many(texts))
    assert [t.text for t in trees] == texts
    assert len(trees[2].edus) == 1 and trees[2].root.is_leaf


def test_bad_input_is_a_clear_error(parser):
    with pytest.raises(InputError):
        parser.parse("   \n ")
    with pytest.raises(InputError):
        parser.parse(b"\xff\xfe\x00bad")


def test_unknown_model_and_missing_files(tmp_path):
    with pytest.raises(ConfigError, match="unknown trained parser model"):
        get_parser("trained", model="no-such-model")
    with pytest.raises(ModelNotAvailableError, match="python -m parsers.train"):
        ParserModel.from_disk(tmp_path)
    (tmp_path / MODEL_FILE).write_bytes(b"not a joblib file")
    with pytest.raises(ModelNotAvailableError, match="cannot load"):
        ParserModel.from_disk(tmp_path)
