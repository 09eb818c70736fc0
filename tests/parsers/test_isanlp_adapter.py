"""isanlp-rst adapter: DiscourseUnit-shaped trees built from GUM gold round-trip into equal DiscourseTrees."""

from __future__ import annotations

import itertools
import os
import sys
from dataclasses import dataclass

import pytest
from tree_helpers import concession_tree

from parsers.errors import ConfigError, InputError, ModelNotAvailableError
from parsers.gum import iter_gum
from parsers.isanlp_adapter import ENV_MODEL_DIR, IsanlpParser, discourse_unit_to_tree, map_label
from parsers.parseval import constituents
from parsers.relations import GUM_TO_INVENTORY, MULTINUCLEAR_RELATIONS, RSTDT_TO_INVENTORY
from parsers.tree import DiscourseTree, Node


@dataclass
class DU:
    """The shape of ``isanlp.annotation_rst.DiscourseUnit`` (fields used by the adapter)."""

    id: int
    left: DU | None = None
    right: DU | None = None
    relation: str = "elementary"
    nuclearity: str = "_"
    start: int = 0
    end: int = 0
    text: str = ""


def to_du(tree: DiscourseTree, label_style: str = "gumrrg") -> DU:
    """Return the DiscourseUnit-shaped form of a binary ``tree`` (labels spelled the isanlp way)."""
    gum_label = {}
    for label, rel in sorted(GUM_TO_INVENTORY.items()):
        gum_label.setdefault(rel, label)
    rstdt_label = {}
    for label, rel in sorted(RSTDT_TO_INVENTORY.items()):
        rstdt_label.setdefault(rel, label.capitalize())
    ids = itertools.count()

    def build(node: Node) -> DU:
        if node.is_leaf:
            e = tree.edus[node.edu]
            return DU(id=next(ids), start=e.start, end=e.end, text=e.text)
        assert len(node.children) == 2
        left, right = build(node.children[0]), build(node.children[1])
        nuc = "".join(node.nuclearity)
        if label_style == "gumrrg":
            label = gum_label[node.relation] + ("_m" if nuc == "NN" else "_r")
        else:
            label = rstdt_label.get(node.relation, "Contrast")  # RST-DT has no Concession class
        return DU(id=next(ids), left=left, right=right, relation=label, nuclearity=nuc,
                  start=left.start, end=right.end, text=tree.text[left.start:right.end])

    return build(tree.root)


def assert_same_structure(a: DiscourseTree, b: DiscourseTree) -> None:
    assert [(e.start, e.end, e.text) for e in a.edus] == [(e.start, e.end, e.text) for e in b.edus]
    assert constituents(a, include_root=True) == constituents(b, include_root=True)
    assert a.to_compact() == b.to_compact()


def hand_tree() -> DiscourseTree:
    pieces = ["I checked the plugs,", "replaced the battery,", "but it still fails."]
    return concession_tree(pieces)


@pytest.mark.parametrize("style", ["gumrrg", "rstdt"])
def test_hand_tree_round_trip(style):
    tree = hand_tree()
    back = discourse_unit_to_tree(to_du(tree, style), tree.text, label_set=style)
    # RST-DT folds Concession into Contrast.
    if style == "rstdt":
        assert back.root.relation == "Contrast"
        return
    assert_same_structure(tree, back)


@pytest.mark.gum
def test_gum_gold_round_trip(gum_dir):
    docs = list(iter_gum(gum_dir, split="test"))[:8]
    assert docs
    for doc in docs:
        back = discourse_unit_to_tree(to_du(doc.tree), doc.tree.text)
        assert_same_structure(doc.tree, back)
        assert back.parser == "isanlp"


def test_label_spellings():
    assert map_label("joint_m") == "Joint"
    assert map_label("adversative-concession_r") == "Concession"
    assert map_label("elaboration") == "Elaboration"
    assert map_label("adversative_r") == "Contrast"
    assert map_label("same-unit_m") == "Same-Unit"
    assert map_label("Elaboration", "rstdt") == "Elaboration"
    assert map_label("Textual-organization", "rstdt") == "Organization"
    assert map_label("same-unit", "rstdt") == "Same-Unit"
    with pytest.raises(ConfigError):
        map_label("nonsense_r")
    with pytest.raises(ConfigError):
        map_label("joint", "penn")


def test_multiple_roots_join_as_joint():
    text = "First part. Second part."
    a = DU(id=0, start=0, end=11, text="First part.")
    b = DU(id=1, start=12, end=24, text="Second part.")
    tree = discourse_unit_to_tree([a, b], text)
    assert tree.root.relation == "Joint" and len(tree.edus) == 2
    assert tree.edus[1].sentence == 1
    assert "Joint" in MULTINUCLEAR_RELATIONS


def test_malformed_units_are_input_errors():
    text = "Short text."
    with pytest.raises(InputError, match="outside"):
        discourse_unit_to_tree(DU(id=0, start=0, end=99), text)
    bad = DU(id=2, left=DU(id=0, start=0, end=5), right=DU(id=1, start=6, end=11), relation="joint_m",
             nuclearity="XX")
    with pytest.raises(InputError, match="nuclearity"):
        discourse_unit_to_tree(bad, text)
    with pytest.raises(InputError):
        discourse_unit_to_tree([], text)


def test_module_does_not_import_isanlp():
    assert "isanlp_rst" not in sys.modules


def test_missing_model_dir_is_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_MODEL_DIR, raising=False)
    with pytest.raises(ModelNotAvailableError, match=ENV_MODEL_DIR):
        IsanlpParser()
    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        IsanlpParser(model_dir=tmp_path / "missing")
    with pytest.raises(ConfigError):
        IsanlpParser(model_dir=tmp_path, label_set="penn")


@pytest.mark.isanlp
def test_real_isanlp_parser():
    folder = os.environ.get(ENV_MODEL_DIR)
    if not folder:
        pytest.skip(f"isanlp-rst weights not available: set {ENV_MODEL_DIR}")
    pytest.importorskip("isanlp_rst", reason="isanlp-rst not installed (pip install isanlp-rst)")
    tree = IsanlpParser(model_dir=folder).parse(
        "I have checked the spark plugs, replaced the battery, but I still could not start my car.")
    assert len(tree.edus) >= 2
