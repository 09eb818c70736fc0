"""SVG and PNG pictures of discourse trees."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from tree_helpers import concession_tree

from parsers.errors import ConfigError, InputError
from parsers.render import save_image, tree_to_svg
from parsers.tree import EDU, DiscourseTree, Node

SVG_NS = "{http://www.w3.org/2000/svg}"


def sample_tree() -> DiscourseTree:
    pieces = ["I checked the plugs & <coils>,", "replaced the battery,", "but it still won't start 🚗."]
    return concession_tree(pieces)


def test_svg_is_wellformed_and_labelled():
    svg = tree_to_svg(sample_tree())
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG_NS}svg"
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG_NS}text")]
    assert "Concession" in texts and "Joint" in texts
    assert texts.count("N") == 3 and texts.count("S") == 1
    joined = " ".join(texts)
    assert "<coils>" in joined and "🚗" in joined  # escaped in the file, intact once parsed
    # Satellite edges are dashed, nucleus edges solid.
    lines = list(root.iter(f"{SVG_NS}line"))
    assert sum(1 for ln in lines if ln.get("stroke-dasharray")) == 1 and len(lines) == 4


def test_single_edu_tree_draws():
    t = DiscourseTree.single("Hello", EDU(index=0, text="Hello", start=0, end=5, sentence=0))
    assert "Hello" in tree_to_svg(t)


def test_save_image_svg_and_png(tmp_path):
    tree = sample_tree()
    svg = save_image(tree, tmp_path / "t.svg")
    assert svg.read_text(encoding="utf-8").startswith("<svg")
    png = save_image(tree, tmp_path / "t.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.png", "t.svg"]  # no partial files left


def test_png_refuses_huge_trees_svg_does_not(tmp_path):
    n = 200
    edus = tuple(EDU(index=i, text=f"e{i}.", start=4 * i, end=4 * i + 3, sentence=i) for i in range(n))
    root = Node.relate("Joint", [Node.leaf(i) for i in range(n)], "N" * n)
    tree = DiscourseTree(text=" ".join(e.text for e in edus), edus=edus, root=root)
    with pytest.raises(InputError, match="use .svg"):
        save_image(tree, tmp_path / "big.png")
    assert not (tmp_path / "big.png").exists()
    assert save_image(tree, tmp_path / "big.svg").stat().st_size > 0


def test_save_image_bad_paths(tmp_path):
    with pytest.raises(ConfigError, match="svg or .png"):
        save_image(sample_tree(), tmp_path / "t.gif")
    with pytest.raises(InputError, match="does not exist"):
        save_image(sample_tree(), tmp_path / "missing" / "t.svg")
