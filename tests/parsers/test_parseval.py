"""RST-Parseval and segmentation metrics on hand-built trees."""

from __future__ import annotations

import pytest

from parsers.parseval import (
    ParsevalCounts,
    aggregate,
    binarize_node,
    constituents,
    parseval,
    segmentation_counts,
)
from parsers.tree import EDU, DiscourseTree, Node


def make_tree(pieces: list[str], root_fn) -> DiscourseTree:
    """Return a tree over ``pieces`` joined by spaces, root built by ``root_fn(leaves)``."""
    edus, pos = [], 0
    for i, p in enumerate(pieces):
        edus.append(EDU(index=i, text=p, start=pos, end=pos + len(p), sentence=0))
        pos += len(p) + 1
    leaves = [Node.leaf(i) for i in range(len(pieces))]
    return DiscourseTree(text=" ".join(pieces), edus=tuple(edus), root=root_fn(leaves))


PIECES = ["I checked the plugs,", "replaced the battery,", "but it still fails", "when it is cold."]


def gold_tree() -> DiscourseTree:
    # Concession( Joint(a, b), Condition(c, d) )
    return make_tree(PIECES, lambda lv: Node.relate(
        "Concession", [Node.relate("Joint", lv[0:2], "NN"), Node.relate("Background", lv[2:4], "NS")], "SN"))


def test_identical_trees_score_one():
    g = gold_tree()
    scores = aggregate([parseval(g, g)])
    for key in ("seg_f1", "span_f1", "nuc_f1", "rel_f1", "full_f1", "nondefault_f1", "nondefault_rel_f1"):
        assert scores[key] == pytest.approx(1.0), key


def test_root_and_leaves_excluded_by_default():
    g = gold_tree()
    assert len(constituents(g)) == 2
    with_root = constituents(g, include_root=True)
    assert len(with_root) == 3
    assert with_root[0].relation == "Concession" and with_root[0].nuclearity == "SN"
    assert with_root[0].span == (0, len(g.text))


def test_wrong_relation_keeps_span_and_nuclearity():
    g = gold_tree()
    p = make_tree(PIECES, lambda lv: Node.relate(
        "Concession", [Node.relate("Joint", lv[0:2], "NN"), Node.relate("Condition", lv[2:4], "NS")], "SN"))
    c = parseval(g, p)
    assert (c.gold, c.pred, c.span, c.nuc, c.rel, c.full) == (2, 2, 2, 2, 1, 1)
    # Background vs Condition: both non-default, same span -> detected, relation wrong.
    assert (c.nd_gold, c.nd_pred, c.nd_match, c.nd_rel_match) == (1, 1, 1, 0)


def test_different_structure_partial_match():
    g = gold_tree()
    # Right-branching prediction: Elaboration(a, Joint(b, Background(c, d)))
    p = make_tree(PIECES, lambda lv: Node.relate("Elaboration", [
        lv[0], Node.relate("Joint", [lv[1], Node.relate("Background", lv[2:4], "NS")], "NN")], "NS"))
    c = parseval(g, p)
    assert c.span == 1 and c.full == 1  # only Background(c, d) agrees
    s = aggregate(c)
    assert s["span_p"] == pytest.approx(0.5) and s["span_r"] == pytest.approx(0.5)


def test_different_segmentation_compares_char_spans():
    g = gold_tree()
    # The prediction merges the first two gold EDUs into one EDU.
    merged = ["I checked the plugs, replaced the battery,", "but it still fails", "when it is cold."]
    p = make_tree(merged, lambda lv: Node.relate(
        "Concession", [lv[0], Node.relate("Background", lv[1:3], "NS")], "SN"))
    assert p.text == g.text
    seg = segmentation_counts(g, p)
    assert (seg.seg_gold, seg.seg_pred, seg.seg_match) == (3, 2, 2)
    c = parseval(g, p)
    assert (c.gold, c.pred, c.span, c.full) == (2, 1, 1, 1)
    s = aggregate(c)
    assert s["seg_p"] == pytest.approx(1.0)
    assert s["seg_r"] == pytest.approx(2 / 3)
    assert s["span_p"] == pytest.approx(1.0) and s["span_r"] == pytest.approx(0.5)


def test_binarize_multinuclear_right_branching():
    node = Node.relate("Joint", [Node.leaf(0), Node.leaf(1), Node.leaf(2)], "NNN")
    b = binarize_node(node)
    assert len(b.children) == 2 and b.children[0].is_leaf
    assert b.children[1].span == (1, 2) and b.children[1].relation == "Joint"
    assert b.nuclearity == ("N", "N")


def test_binarize_mononuclear_satellites_nucleus_outwards():
    node = Node.relate("Elaboration", [Node.leaf(0), Node.leaf(1), Node.leaf(2)], "SNS")
    b = binarize_node(node)
    # S (N S): right satellite attaches first, then the left one.
    assert b.nuclearity == ("S", "N")
    assert b.children[1].span == (1, 2) and b.children[1].nuclearity == ("N", "S")


def test_counts_add_and_aggregate_micro_average():
    a = ParsevalCounts(gold=2, pred=2, span=2, nuc=2, rel=2, full=2, docs=1)
    b = ParsevalCounts(gold=2, pred=2, span=0, nuc=0, rel=0, full=0, docs=1)
    s = aggregate([a, b])
    assert s["docs"] == 2
    assert s["span_f1"] == pytest.approx(0.5)


def test_single_edu_trees_are_vacuously_perfect():
    t = make_tree(["Hello."], lambda lv: lv[0])
    s = aggregate(parseval(t, t))
    assert s["span_f1"] == 1.0 and s["seg_f1"] == 1.0
