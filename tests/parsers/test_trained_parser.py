"""The shipped trained parser: loads offline by name, parses the paper's example, stays within its size budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from parsers.base import available_parsers, get_parser
from parsers.errors import ConfigError, InputError, ModelNotAvailableError
from parsers.relations import RELATIONS, is_default
from parsers.trained_parser import DEFAULT_MODEL, MANIFEST_FILE, MODEL_FILE, MODELS_DIR, ParserModel

PAPER_EXAMPLE = ("I have checked the spark plugs, replaced the battery, also replaced ignition coils and the "
                 "solenoid, but I still could not start my car.")
SHIPPED = MODELS_DIR / DEFAULT_MODEL


@pytest.fixture(scope="module")
def parser():
    if not (SHIPPED / MODEL_FILE).is_file():
        pytest.skip(f"shipped model missing at {SHIPPED}")
    return get_parser("trained")


def test_registered_by_name():
    assert "trained" in available_parsers()


def test_shipped_model_within_budget_and_described():
    files = [p for p in SHIPPED.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) <= 30 * 1024 * 1024
    manifest = json.loads((SHIPPED / MANIFEST_FILE).read_text(encoding="utf-8"))
    assert manifest["sklearn_version"]
    assert set(manifest["data"]["genres_excluded"]) >= {"fiction", "essay", "letter", "podcast", "whow", "reddit"}
    assert not set(manifest["data"]["genres_used"]) & set(manifest["data"]["genres_excluded"])
    for level in ("intra", "inter"):
        labels = manifest["components"]["labeller"][level]["labels"]
        assert labels and all(lab.split("|")[0] in RELATIONS and lab.split("|")[1] in ("NS", "SN", "NN")
                              for lab in labels)
    assert {"seg_f1", "span_f1", "rel_f1"} <= set(manifest["scores"]["test"])
    card = (SHIPPED / "MODEL_CARD.md").read_text(encoding="utf-8")
    assert "CC-BY 4.0" in card and "fiction" in card


def test_shipped_model_loads_without_scikit_learn():
    if not (SHIPPED / MODEL_FILE).is_file():
        pytest.skip(f"shipped model missing at {SHIPPED}")
    code = ("import sys; from parsers.trained_parser import ParserModel, MODELS_DIR, DEFAULT_MODEL; "
            "m = ParserModel.from_disk(MODELS_DIR / DEFAULT_MODEL); "
            "print(sorted(m.structure), 'sklearn' in sys.modules, 'scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"}, cwd=str(SHIPPED.parents[2]))
    assert out.stdout.split() == ["['inter',", "'intra']", "False", "False"]


def test_paper_example_gets_a_tree_with_a_non_default_relation(parser):
    tree = parser.parse(PAPER_EXAMPLE)
    assert tree.parser == "trained"
    assert len(tree.edus) >= 3
    # EDUs tile the text in order and carry lemmas/entities for the index.
    assert [e.index for e in tree.edus] == list(range(len(tree.edus)))
    assert all(tree.text[e.start:e.end] == e.text for e in tree.edus)
    assert any("battery" in e.lemmas for e in tree.edus)
    assert any("spark plugs" in e.entities for e in tree.edus)
    assert tree.non_default_nodes(), tree.pretty()
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
