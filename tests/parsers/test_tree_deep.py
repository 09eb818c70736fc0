"""Trees deeper than Python's recursion limit compare, hash and print (a long text's neural tree is that deep)."""

from __future__ import annotations

import sys

from parsers.tree import Node


def chain(depth: int, relation: str = "Elaboration") -> Node:
    node = Node.leaf(0)
    for i in range(1, depth):
        node = Node(first=0, last=i, relation=relation, nuclearity=("N", "S"), children=(node, Node.leaf(i)))
    return node


def test_deep_trees_compare_and_hash_without_recursion():
    depth = sys.getrecursionlimit() + 500
    a, b = chain(depth), chain(depth)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != chain(depth, relation="Joint")
    assert a != chain(depth - 1)
    assert "children=<2 nodes>" in repr(a)


def test_equality_sees_every_field_at_every_level():
    base = chain(5)
    leaf_changed = Node(first=0, last=4, relation="Elaboration", nuclearity=("N", "S"),
                        children=(base.children[0], Node.leaf(5)))
    nuclearity_changed = Node(first=0, last=4, relation="Elaboration", nuclearity=("S", "N"), children=base.children)
    assert base == chain(5) and base != leaf_changed and base != nuclearity_changed
    assert Node.leaf(1) != Node.leaf(2) and Node.leaf(1) == Node.leaf(1)
    assert Node.leaf(1) != "Node.leaf(1)"
