"""The discourse tree model: EDUs as leaves, relation nodes with nuclearity above them.

A ``DiscourseTree`` is immutable once built. Leaves are ``Node`` objects whose
``edu`` field indexes ``DiscourseTree.edus``; inner nodes carry a relation from
``parsers.relations`` and one nuclearity mark (``"N"`` or ``"S"``) per child.
Trees need not be binary: multinuclear Joint lists may have many children.

Nothing here recurses over the tree: a long text can give a tree hundreds of levels deep, and its JSON
(``to_dict``, schema 2) is a flat list of nodes that point to their children by position, so no JSON
encoder, pydantic model or client parser meets a nesting limit. ``from_dict`` still reads schema 1
(nested ``root``), as stored by older indexes and sessions.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from parsers.errors import InputError
from parsers.relations import canonical, is_default

T = TypeVar("T")
NUCLEUS = "N"
SATELLITE = "S"
#: 2: the nodes as a flat pre-order list (``nodes``), children by index; 1: one nested ``root`` object (still read)
SCHEMA_VERSION = 2


@dataclass(frozen=True)
class EDU:
    """One elementary discourse unit: a contiguous span of the source text."""

    index: int
    text: str
    start: int
    end: int
    sentence: int
    lemmas: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict of this EDU."""
        return {
            "index": self.index, "text": self.text, "start": self.start, "end": self.end,
            "sentence": self.sentence, "lemmas": list(self.lemmas), "entities": list(self.entities),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EDU:
        """Return the EDU described by ``data`` (the output of ``to_dict``)."""
        # the fields ``__init__`` would set, set at once: a frozen dataclass's ``__init__`` pays an
        # ``object.__setattr__`` per field, and every EDU of every candidate answer new to the process comes through here
        edu = object.__new__(cls)
        edu.__dict__.update(
            index=int(data["index"]), text=str(data["text"]), start=int(data["start"]),
            end=int(data["end"]), sentence=int(data.get("sentence", 0)),
            lemmas=tuple(data.get("lemmas", ())), entities=tuple(data.get("entities", ())),
        )
        return edu


@dataclass(frozen=True, eq=False, repr=False)
class Node:
    """A tree node: a leaf (``edu`` set) or a relation over ``children``.

    ``first``/``last`` are the inclusive EDU indices the node spans. Equality, hashing and ``repr`` walk the tree
    with loops: the generated ones recurse once per level, and a long text's tree can be over a thousand levels
    deep (a RecursionError in a comparison).
    """

    first: int
    last: int
    relation: str | None = None
    nuclearity: tuple[str, ...] = ()
    children: tuple[Node, ...] = ()
    edu: int | None = None

    def _preorder(self) -> list[tuple]:
        """Return every node's own fields and child count in pre-order: two trees are equal when these are."""
        out, stack = [], [self]
        while stack:
            node = stack.pop()
            out.append((node.first, node.last, node.relation, node.nuclearity, node.edu, len(node.children)))
            stack.extend(reversed(node.children))
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Node):
            return NotImplemented
        return self is other or self._preorder() == other._preorder()

    def __hash__(self) -> int:
        return hash(tuple(self._preorder()))

    def __repr__(self) -> str:
        inner = "" if self.is_leaf else f", relation={self.relation!r}, nuclearity={self.nuclearity!r}, " \
                                        f"children=<{len(self.children)} nodes>"
        return f"Node(first={self.first}, last={self.last}{inner}, edu={self.edu})"

    @property
    def is_leaf(self) -> bool:
        return self.edu is not None

    @property
    def span(self) -> tuple[int, int]:
        return (self.first, self.last)

    @classmethod
    def leaf(cls, edu: int) -> Node:
        """Return a leaf node over EDU number ``edu``."""
        return cls(first=edu, last=edu, edu=edu)

    @classmethod
    def relate(cls, relation: str, children: list[Node] | tuple[Node, ...], nuclearity: str | tuple[str, ...]) -> Node:
        """Return an inner node joining adjacent ``children`` by ``relation``.

        ``nuclearity`` is a per-child tuple, or a string such as ``"NS"``.
        Raises ``InputError`` when the children are not adjacent or the marks do not fit.
        """
        kids = tuple(children)
        marks = tuple(nuclearity)
        if len(kids) < 2:
            raise InputError("a relation node needs at least two children")
        if len(marks) != len(kids) or any(m not in (NUCLEUS, SATELLITE) for m in marks):
            raise InputError(f"nuclearity {nuclearity!r} does not fit {len(kids)} children")
        if NUCLEUS not in marks:
            raise InputError("a relation node needs at least one nucleus")
        for left, right in zip(kids, kids[1:]):
            if left.last + 1 != right.first:
                raise InputError(f"children spans {left.span} and {right.span} are not adjacent")
        return cls(first=kids[0].first, last=kids[-1].last, relation=canonical(relation),
                   nuclearity=marks, children=kids)

    def walk(self) -> Iterator[Node]:
        """Yield this node and all descendants, pre-order (left to right)."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def nuclei(self) -> tuple[Node, ...]:
        """Return the nucleus children of this node."""
        return tuple(c for c, m in zip(self.children, self.nuclearity) if m == NUCLEUS)

    def satellites(self) -> tuple[Node, ...]:
        """Return the satellite children of this node."""
        return tuple(c for c, m in zip(self.children, self.nuclearity) if m == SATELLITE)

    def to_dict(self) -> dict[str, Any]:
        """Return this subtree as one nested dict (schema 1's ``root``); built without recursion."""
        return nested_from_flat(nodes_to_list(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Node:
        """Return the subtree of a nested dict (``to_dict``); raises ``InputError`` when it is malformed."""
        return nodes_from_list(flat_from_nested(data))


def nodes_to_list(root: Node) -> list[dict[str, Any]]:
    """Return the nodes under ``root`` as a flat pre-order list: ``{"edu": i}`` for a leaf, else
    ``{"relation", "nuclearity", "children": [positions in the list]}``; ``root`` is at position 0."""
    out: list[dict[str, Any]] = []
    stack: list[tuple[Node, dict[str, Any] | None]] = [(root, None)]
    while stack:
        node, parent = stack.pop()
        if parent is not None:
            parent["children"].append(len(out))
        entry: dict[str, Any] = ({"edu": node.edu} if node.is_leaf else
                                 {"relation": node.relation, "nuclearity": "".join(node.nuclearity), "children": []})
        out.append(entry)
        stack.extend((child, entry) for child in reversed(node.children))
    return out


def nodes_from_list(entries: Any) -> Node:
    """Return the root of the flat node list ``nodes_to_list`` made; raises ``InputError`` when it is malformed.

    Every node but the first must be the child of exactly one node before it, so the list is a tree.
    """
    # a stored answer's tree is rebuilt for each candidate new to the process: the list as ``nodes_to_list`` writes
    # it takes one checked pass; anything else (or anything wrong) goes through the general reader, which accepts the
    # same inputs, builds the same nodes and says what is wrong
    root = _nodes_from_plain_list(entries) if type(entries) is list else None
    return root if root is not None else _nodes_from_any_list(entries)


def _nodes_from_any_list(entries: Any) -> Node:
    """``nodes_from_list`` for any input: every field converted and checked, the error message for what is wrong."""
    if not isinstance(entries, list) or not entries:
        raise InputError("malformed discourse tree JSON: 'nodes' must be a non-empty list")
    built: list[Node | None] = [None] * len(entries)
    parent_of = [-1] * len(entries)
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InputError(f"malformed discourse tree JSON: node {i} is not an object")
        for child in entry.get("children", ()) if "edu" not in entry else ():
            if not isinstance(child, int) or isinstance(child, bool) or not i < child < len(entries) or parent_of[child] >= 0:
                raise InputError(f"malformed discourse tree JSON: node {i} has a bad child {child!r}")
            parent_of[child] = i
    if any(p < 0 for p in parent_of[1:]):
        raise InputError("malformed discourse tree JSON: a node is not reachable from the root")
    try:
        for i in range(len(entries) - 1, -1, -1):  # children come after their parent: build from the end
            entry = entries[i]
            if "edu" in entry:
                built[i] = Node.leaf(int(entry["edu"]))
                continue
            built[i] = Node.relate(str(entry["relation"]), [built[c] for c in entry["children"]],  # type: ignore[misc]
                                   entry["nuclearity"])
            for c in entry["children"]:
                built[c] = None  # free the parts as they are joined
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"malformed discourse tree JSON: {exc!r}") from None
    return built[0]  # type: ignore[return-value]


#: leaves are immutable and the same for every tree (EDU ``i``, spanning ``i``): rebuilt trees share these
_LEAVES = tuple(Node.leaf(i) for i in range(512))
#: the nuclearity strings met, as checked per-child tuples (the few short strings trees use; bounded)
_MARKS: dict[str, tuple[str, ...]] = {}
_MARKS_SIZE = 1024
_new_object = object.__new__


def _checked_marks(nuclearity: str) -> tuple[str, ...] | None:
    """Return ``tuple(nuclearity)`` when ``Node.relate`` accepts it (only N/S marks, one N at least), else None."""
    marks = _MARKS.get(nuclearity)
    if marks is None:
        marks = tuple(nuclearity)
        if not marks or any(m not in (NUCLEUS, SATELLITE) for m in marks) or NUCLEUS not in marks:
            return None
        if len(_MARKS) < _MARKS_SIZE:
            _MARKS[nuclearity] = marks
    return marks


def _canonical_of(relation: str) -> str | None:
    """Return ``canonical(relation)``, or None for a label it rejects."""
    try:
        return canonical(relation)
    except ValueError:
        return None


def _nodes_from_plain_list(entries: list) -> Node | None:
    """Return the tree of a node list in the form ``nodes_to_list`` writes (dicts; an ``int`` edu; a ``str`` relation
    and nuclearity; a ``list`` of ``int`` children), checked as ``_nodes_from_any_list`` checks it, or None for
    anything else, valid or not.

    The same nodes as ``Node.leaf``/``Node.relate`` make, built without their per-field frozen ``__init__`` (a
    candidate's tree has ~25 nodes, and most candidates' trees are only read for their relation spans).
    """
    n = len(entries)
    if not n:
        return None
    built: list[Any] = [None] * n
    claimed = bytearray(n)
    leaves, n_leaves = _LEAVES, len(_LEAVES)
    for i in range(n - 1, -1, -1):  # children come after their parent: build from the end
        entry = entries[i]
        if type(entry) is not dict:
            return None
        if "edu" in entry:
            edu = entry["edu"]
            if type(edu) is not int:
                return None
            built[i] = leaves[edu] if 0 <= edu < n_leaves else Node.leaf(edu)
            continue
        children, relation, nuclearity = entry.get("children"), entry.get("relation"), entry.get("nuclearity")
        if type(children) is not list or type(relation) is not str or type(nuclearity) is not str:
            return None
        if len(children) < 2 or len(nuclearity) != len(children):
            return None
        kids = []
        last = -1
        for c in children:
            if type(c) is not int or not i < c < n or claimed[c]:
                return None
            claimed[c] = 1
            kid = built[c]
            if kids and last + 1 != kid.first:
                return None
            kids.append(kid)
            last = kid.last
        marks = _checked_marks(nuclearity)
        name = _canonical_of(relation)
        if marks is None or name is None:
            return None
        node = _new_object(Node)
        # a frozen dataclass's own fields, as its ``__init__`` would set them
        node.__dict__.update(first=kids[0].first, last=last, relation=name, nuclearity=marks, children=tuple(kids),
                             edu=None)
        built[i] = node
    if claimed.count(0) != 1:  # the root alone is nobody's child
        return None
    return built[0]


def flat_from_nested(data: Any) -> list[dict[str, Any]]:
    """Return the flat node list of a nested (schema 1) node dict, walking it without recursion."""
    out: list[dict[str, Any]] = []
    stack: list[tuple[Any, dict[str, Any] | None]] = [(data, None)]
    while stack:
        node, parent = stack.pop()
        if not isinstance(node, dict):
            raise InputError("malformed discourse tree JSON: a node is not an object")
        if parent is not None:
            parent["children"].append(len(out))
        if "edu" in node:
            out.append({"edu": node["edu"]})
            continue
        entry = {"relation": node.get("relation"), "nuclearity": node.get("nuclearity"), "children": []}
        out.append(entry)
        children = node.get("children")
        if not isinstance(children, list):
            raise InputError("malformed discourse tree JSON: a relation node needs a 'children' list")
        stack.extend((child, entry) for child in reversed(children))
    return out


def nested_from_flat(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Return the nested (schema 1) form of a flat node list, built without recursion."""
    nested = [({"edu": e["edu"]} if "edu" in e else {"relation": e["relation"], "nuclearity": e["nuclearity"]})
              for e in entries]
    for entry, out in zip(entries, nested):
        if "edu" not in entry:
            out["children"] = [nested[c] for c in entry["children"]]
    return nested[0]


@dataclass(frozen=True)
class RelationInstance:
    """A relation node seen with the EDUs on each side, for queries and agreement checks."""

    node: Node
    relation: str
    nucleus_edus: tuple[EDU, ...]
    satellite_edus: tuple[EDU, ...]

    @property
    def edus(self) -> tuple[EDU, ...]:
        return tuple(sorted(self.nucleus_edus + self.satellite_edus, key=lambda e: e.index))

    def phrase(self, max_words: int = 0) -> str:
        """Return the words of the relation's EDUs joined in text order (optionally capped)."""
        words = " ".join(e.text for e in self.edus).split()
        return " ".join(words[:max_words] if max_words else words)


@dataclass(frozen=True)
class DiscourseTree:
    """An RST discourse tree of one text."""

    text: str
    edus: tuple[EDU, ...]
    root: Node
    parser: str = ""
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not self.edus:
            raise InputError("a discourse tree needs at least one EDU")
        if self.root.span != (0, len(self.edus) - 1):
            raise InputError(f"root spans {self.root.span}, expected (0, {len(self.edus) - 1})")

    @classmethod
    def single(cls, text: str, edu: EDU, parser: str = "") -> DiscourseTree:
        """Return a one-EDU tree (a text with no internal discourse structure)."""
        return cls(text=text, edus=(edu,), root=Node.leaf(edu.index), parser=parser)

    # --- navigation ---------------------------------------------------------
    def nodes(self) -> Iterator[Node]:
        """Yield every node, pre-order."""
        return self.root.walk()

    def relation_nodes(self) -> list[Node]:
        """Return the inner (relation) nodes, pre-order."""
        return [n for n in self.nodes() if not n.is_leaf]

    def leaves(self) -> list[EDU]:
        """Return the EDUs in text order."""
        return list(self.edus)

    def nodes_with_relation(self, relation: str) -> list[Node]:
        """Return the nodes labelled ``relation`` (any spelling ``canonical`` accepts)."""
        rel = canonical(relation)
        return [n for n in self.relation_nodes() if n.relation == rel]

    def nucleus_chain_edus(self) -> list[EDU]:
        """Return the EDUs reached from the root through nuclei only (the main clause), in text order."""
        out: list[EDU] = []
        stack = [self.root]
        while stack:
            node = stack.pop()
            if node.is_leaf:
                out.extend(self.edus_of(node))
                continue
            stack.extend(node.nuclei() or node.children)
        return sorted(out, key=lambda e: e.index)

    def non_default_nodes(self) -> list[Node]:
        """Return the nodes whose relation is not a default one, pre-order."""
        # one walk, no generator and no list of every inner node: every stored answer new to a serving process,
        # and every answer an index build stores, comes through here
        out, stack = [], [self.root]
        while stack:
            node = stack.pop()
            if node.edu is None:
                stack.extend(reversed(node.children))
                if not is_default(node.relation or ""):
                    out.append(node)
        return out

    def relations(self) -> list[str]:
        """Return the relation of every inner node, pre-order (with repeats)."""
        return [n.relation for n in self.relation_nodes() if n.relation]

    def edus_of(self, node: Node) -> tuple[EDU, ...]:
        """Return the EDUs a node spans."""
        return self.edus[node.first: node.last + 1]

    def instance(self, node: Node) -> RelationInstance:
        """Return the node with the EDUs of its nucleus and satellite sides."""
        nuc = tuple(e for c in node.nuclei() for e in self.edus_of(c))
        sat = tuple(e for c in node.satellites() for e in self.edus_of(c))
        return RelationInstance(node=node, relation=node.relation or "", nucleus_edus=nuc, satellite_edus=sat)

    # --- serialisation ------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (schema 2: ``nodes`` is the flat pre-order node list, the root first);
        ``from_dict`` restores an equal tree."""
        return {
            "schema": SCHEMA_VERSION,
            "parser": self.parser,
            "text": self.text,
            "edus": [e.to_dict() for e in self.edus],
            "nodes": nodes_to_list(self.root),
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DiscourseTree:
        """Return the tree described by ``data`` (schema 2, or schema 1's nested ``root``); raises ``InputError``
        on malformed input."""
        try:
            edus = tuple(EDU.from_dict(e) for e in data["edus"])
            entries = data["nodes"] if "nodes" in data else flat_from_nested(data["root"])
            root = nodes_from_list(entries)
            return cls(text=str(data.get("text", "")), edus=edus, root=root,
                       parser=str(data.get("parser", "")), meta=dict(data.get("meta") or {}))
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(f"malformed discourse tree JSON: {exc}") from None

    def to_json(self, indent: int | None = None) -> str:
        """Return the tree as a JSON string."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    @classmethod
    def from_json(cls, text: str) -> DiscourseTree:
        """Return the tree in a JSON string; raises ``InputError`` on malformed JSON."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed discourse tree JSON: {exc}") from None
        except RecursionError:
            raise InputError("malformed discourse tree JSON: nested too deeply") from None
        if not isinstance(data, dict):
            raise InputError("malformed discourse tree JSON: expected an object")
        return cls.from_dict(data)

    # --- views --------------------------------------------------------------
    def _fold(self, leaf: Callable[[Node], T], inner: Callable[[Node, list[T]], T]) -> T:
        """Return ``inner(node, [results of its children])`` computed bottom-up without recursion."""
        done: dict[int, T] = {}
        stack: list[tuple[Node, bool]] = [(self.root, False)]
        while stack:
            node, expanded = stack.pop()
            if node.is_leaf:
                done[id(node)] = leaf(node)
            elif expanded:
                done[id(node)] = inner(node, [done.pop(id(c)) for c in node.children])
            else:
                stack.append((node, True))
                stack.extend((c, False) for c in reversed(node.children))
        return done[id(self.root)]

    def to_compact(self, max_words: int = 6) -> str:
        """Return a one-line form such as ``Contrast[N][S](checked plugs..., still no start)``."""

        def leaf(node: Node) -> str:
            words = self.edus[node.edu].text.split()  # type: ignore[index]
            short = " ".join(words[:max_words]) + (" ..." if len(words) > max_words else "")
            return f'"{short}"'

        def inner(node: Node, parts: list[str]) -> str:
            marks = "".join(f"[{m}]" for m in node.nuclearity)
            return f"{node.relation}{marks}(" + ", ".join(parts) + ")"

        return self._fold(leaf, inner)

    def to_nltk(self):
        """Return an ``nltk.Tree``: inner labels like ``Contrast[NS]``, leaves are EDU texts."""
        from nltk import Tree

        built = self._fold(lambda node: self.edus[node.edu].text,  # type: ignore[index]
                           lambda node, kids: Tree(f"{node.relation}[{''.join(node.nuclearity)}]", kids))
        return built if isinstance(built, Tree) else Tree("EDU", [built])

    def pretty(self) -> str:
        """Return an indented multi-line text drawing of the tree."""
        lines: list[str] = []
        stack: list[tuple[Node, int, str]] = [(self.root, 0, "")]
        while stack:
            node, depth, mark = stack.pop()
            pad = "  " * depth + (f"{mark}: " if mark else "")
            if node.is_leaf:
                lines.append(f"{pad}[{node.edu}] {self.edus[node.edu].text}")  # type: ignore[index]
                continue
            lines.append(f"{pad}{node.relation}")
            stack.extend((c, depth + 1, m) for c, m in reversed(list(zip(node.children, node.nuclearity))))
        return "\n".join(lines)
