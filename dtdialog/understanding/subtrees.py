"""Split the discourse tree of a question (DT-Q) into parts Q1, Q2, ... in the order they were raised.

Algorithm ("top-level issues"):

1. An *issue root* is a node with a non-default relation none of whose ancestors has one.
   Its whole subtree is one part, so nested non-default relations (a Cause inside a Contrast)
   stay together as one chain the answer must address, as in the paper's chains
   ``Contrast[...]-Temporal[...]``.
2. Default relations (Elaboration, Joint, Same-Unit, Organization) above the issue roots only
   join issues; they are where the question is cut. EDUs outside every issue root
   (default context such as "I drive a 2009 Civic.") are attached to the nearest part by
   text distance (ties go to the preceding part), so their keywords still reach a query.
3. Parts are ordered by their first EDU: the order the customer raised the issues.
4. A question with no non-default relation is one *factual* part: the whole tree.

Every part keeps its nodes, its EDUs and its non-default ``RelationInstance``s. ``part_sides`` splits a part's EDUs
into the satellites of its non-default relations (the backstory: what was tried, the conditions) and the rest (the
problem itself), so a ranker can compare an answer with each apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parsers.relations import is_default
from parsers.tree import EDU, DiscourseTree, Node, RelationInstance

RELATIONAL = "relational"
FACTUAL = "factual"


@dataclass(frozen=True)
class QuestionPart:
    """One issue of the question: an issue-root subtree plus attached default context."""

    index: int
    root: Node
    edus: tuple[EDU, ...]
    relations: tuple[RelationInstance, ...]
    kind: str = RELATIONAL

    @property
    def text(self) -> str:
        return " ".join(e.text for e in self.edus)

    @property
    def nodes(self) -> list[Node]:
        """Return the nodes of the part's subtree, pre-order."""
        return list(self.root.walk())

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready summary (index, kind, EDU indices and text, relations)."""
        return {
            "index": self.index, "kind": self.kind, "span": list(self.root.span),
            "edus": [e.index for e in self.edus], "text": self.text,
            "relations": [{"relation": r.relation, "phrase": r.phrase(12)} for r in self.relations],
        }


@dataclass(frozen=True)
class QuestionPlan:
    """DT-Q and its ordered parts: what answers A1, A2, ... should address."""

    question: str
    tree: DiscourseTree
    parts: tuple[QuestionPart, ...]

    @property
    def kind(self) -> str:
        """Return ``factual`` when the question has no non-default relation, else ``relational``."""
        return FACTUAL if all(p.kind == FACTUAL for p in self.parts) else RELATIONAL

    def part(self, step: int) -> QuestionPart:
        """Return the part for dialogue step ``step`` (the last part once the plan is exhausted)."""
        return self.parts[min(max(step, 0), len(self.parts) - 1)]

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict; ``from_dict`` rebuilds an equal plan."""
        return {"question": self.question, "kind": self.kind, "tree": self.tree.to_dict(),
                "compact": self.tree.to_compact(), "parts": [p.to_dict() for p in self.parts]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuestionPlan:
        """Return the plan in ``data`` (re-split from the stored tree, which is deterministic)."""
        return split_question(DiscourseTree.from_dict(data["tree"]), question=str(data.get("question", "")))


@dataclass(frozen=True)
class PartSides:
    """A part's EDUs on either side of its non-default relations (both in text order)."""

    nuclei: tuple[EDU, ...]
    satellites: tuple[EDU, ...]

    @property
    def nuclei_text(self) -> str:
        return " ".join(e.text for e in self.nuclei)

    @property
    def satellites_text(self) -> str:
        return " ".join(e.text for e in self.satellites)


def part_sides(part: QuestionPart) -> PartSides:
    """Return the part's EDUs split into satellites of any of its non-default relations and the rest.

    A nested relation's nucleus inside an outer satellite stays a satellite: the outer relation says the whole span
    is background to the problem. A factual part has no satellites.
    """
    satellite = {e.index for r in part.relations for e in r.satellite_edus}
    return PartSides(nuclei=tuple(e for e in part.edus if e.index not in satellite),
                     satellites=tuple(e for e in part.edus if e.index in satellite))


#: Parts a question is split into at most: each is a dialogue step, and no customer raises more issues at once.
MAX_PARTS = 8
#: EDUs of a question that are planned from; the rest of a longer question is not analysed (see ``AnswerSelector.plan``).
MAX_QUESTION_EDUS = 60


def issue_roots(tree: DiscourseTree) -> list[Node]:
    """Return the non-default nodes that have no non-default ancestor, in text order."""
    roots: list[Node] = []
    stack = [tree.root]  # a loop, not recursion: a long text's tree can be hundreds of levels deep
    while stack:
        node = stack.pop()
        if node.is_leaf:
            continue
        if not is_default(node.relation or ""):
            roots.append(node)
            continue
        stack.extend(node.children)
    return sorted(roots, key=lambda n: n.first)


def split_question(tree: DiscourseTree, *, question: str | None = None, max_parts: int = MAX_PARTS) -> QuestionPlan:
    """Return the plan of ``tree``: its parts ordered as raised (see the module docstring), at most ``max_parts``
    (the EDUs of the issues beyond join the nearest kept part)."""
    text = tree.text if question is None else question
    roots = issue_roots(tree)[:max_parts]
    if not roots:
        part = QuestionPart(index=0, root=tree.root, edus=tree.edus, relations=(), kind=FACTUAL)
        return QuestionPlan(question=text, tree=tree, parts=(part,))
    members: list[list[int]] = [list(range(r.first, r.last + 1)) for r in roots]
    covered = {i for m in members for i in m}
    for edu in tree.edus:
        if edu.index in covered:
            continue
        # nearest part by EDU distance; on a tie the preceding part wins (it comes first in this min)
        best = min(range(len(roots)), key=lambda k: (_distance(roots[k], edu.index), roots[k].first > edu.index))
        members[best].append(edu.index)
    parts = []
    for k, root in enumerate(roots):
        relations = tuple(tree.instance(n) for n in root.walk() if not n.is_leaf and not is_default(n.relation or ""))
        edus = tuple(tree.edus[i] for i in sorted(members[k]))
        parts.append(QuestionPart(index=k, root=root, edus=edus, relations=relations))
    return QuestionPlan(question=text, tree=tree, parts=tuple(parts))


def _distance(node: Node, edu_index: int) -> int:
    if edu_index < node.first:
        return node.first - edu_index
    return edu_index - node.last
