"""A hand-built tree shared by the parser tests: Concession(Joint(a, b), c) over three EDUs."""

from __future__ import annotations

from parsers.tree import EDU, DiscourseTree, Node


def concession_tree(pieces: list[str]) -> DiscourseTree:
    """Return Concession[S][N](Joint[N][N](pieces[0], pieces[1]), pieces[2]) over one sentence."""
    edus, pos = [], 0
    for i, p in enumerate(pieces):
        edus.append(EDU(index=i, text=p, start=pos, end=pos + len(p), sentence=0))
        pos += len(p) + 1
    lv = [Node.leaf(i) for i in range(len(pieces))]
    root = Node.relate("Concession", [Node.relate("Joint", lv[:2], "NN"), lv[2]], "SN")
    return DiscourseTree(text=" ".join(pieces), edus=tuple(edus), root=root)
