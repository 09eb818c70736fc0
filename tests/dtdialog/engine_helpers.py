"""Hand-built discourse trees and a parser that returns them, for engine tests independent of any RST parser."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from index.base import AnswerDocument
from index.documents import build_document
from parsers.base import RSTParser
from parsers.tree import EDU, DiscourseTree, Node

Spec = Any  # a str (one EDU) or (relation, nuclearity, [child specs])


def build_tree(spec: Spec, *, parser: str = "hand") -> DiscourseTree:
    """Return the tree of ``spec``: a string is an EDU; ``(relation, "NS", [children])`` a relation node."""
    edus: list[EDU] = []
    pos = [0]

    def build(node: Spec) -> Node:
        if isinstance(node, str):
            start = pos[0]
            edus.append(EDU(index=len(edus), text=node, start=start, end=start + len(node), sentence=0))
            pos[0] = start + len(node) + 1
            return Node.leaf(len(edus) - 1)
        relation, nuclearity, children = node
        return Node.relate(relation, [build(c) for c in children], nuclearity)

    root = build(spec)
    text = " ".join(e.text for e in edus)
    return DiscourseTree(text=text, edus=tuple(edus), root=root, parser=parser)


class TableParser(RSTParser):
    """Returns the hand-built tree registered for a text; any other text becomes a one-EDU tree."""

    name = "table"

    def __init__(self, specs: Sequence[Spec] = ()) -> None:
        self.trees: dict[str, DiscourseTree] = {}
        for spec in specs:
            self.add(spec)

    def add(self, spec: Spec) -> DiscourseTree:
        tree = build_tree(spec)
        self.trees[tree.text] = tree
        return tree

    def parse(self, text: str) -> DiscourseTree:
        if text in self.trees:
            return self.trees[text]
        return DiscourseTree.single(text, EDU(index=0, text=text, start=0, end=len(text), sentence=0), parser="table")


def make_doc(doc_id: str, spec: Spec) -> AnswerDocument:
    """Return the index document of a hand-built answer ``"dialogue#position"``."""
    tree = build_tree(spec)
    dialogue_id, position = doc_id.rsplit("#", 1)
    return build_document(doc_id=doc_id, dialogue_id=dialogue_id, position=int(position), text=tree.text, tree=tree)


def make_index(path: Path, docs: dict[str, Spec]):
    """Return a writable SQLite index at ``path`` holding the hand-built answers ``docs``."""
    from index.sqlite_index import SqliteIndex

    index = SqliteIndex(path, readonly=False)
    index.add([make_doc(doc_id, spec) for doc_id, spec in docs.items()])
    return index
