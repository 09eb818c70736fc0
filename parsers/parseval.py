"""RST-Parseval metrics (Morey et al. 2017 style) and EDU segmentation scores over ``DiscourseTree`` pairs.

Definitions (all micro-averaged when ``aggregate`` sums the counts of many documents):

* Trees are first **binarised** (``binarize``): multinuclear nodes right-branching,
  mononuclear n-ary nodes by attaching the satellites nearest the nucleus first.
* A **constituent** is an inner node of the binarised tree, labelled the way
  Morey et al. (2017) move RST labels onto the parent: its nuclearity string
  (``"NS"``, ``"SN"`` or ``"NN"``) and its relation. The root (it always spans the
  whole text) and the leaves (EDUs; scored by segmentation instead) are excluded
  by default, as Morey et al. do; ``include_root=True`` keeps the root.
* Constituents are compared by **character spans**, not EDU indices, so trees
  whose predicted EDUs differ from the gold ones are still comparable: a span is
  ``(first non-space char of its first EDU, end of the last non-space char of its
  last EDU)`` in the tree's text. Both trees must be over the same text.
* ``span`` counts matching spans; ``nuc`` matching span + nuclearity; ``rel``
  matching span + relation; ``full`` matching span + nuclearity + relation.
* **Segmentation** compares the sets of internal EDU boundaries (start offsets
  of every EDU but the first, after skipping whitespace): P/R/F1.
* **Non-default detection**: a constituent counts when its relation is not a
  default one (``relations.is_default``); a predicted one is correct when the gold
  tree has a non-default constituent with the same span (``nondefault``), and
  also the same relation (``nondefault_rel``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, fields

from parsers.relations import is_default
from parsers.tree import NUCLEUS, SATELLITE, DiscourseTree, Node

CharSpan = tuple[int, int]


#: Published end-to-end GUM results shown beside ours (F1 as fractions): the one copy the trainers' manifests and
#: ``eval.parser_bench`` read.
PUBLISHED_GUM = {
    "isanlp_rst_v3_gumrrg": {"seg_f1": 0.955, "span_f1": 0.674, "nuc_f1": 0.562, "rel_f1": 0.496, "full_f1": 0.487},
    "dmrst_xlmr_base_gum": {"span_f1": 0.580, "nuc_f1": 0.439, "rel_f1": 0.342},
}


@dataclass(frozen=True)
class Constituent:
    """One labelled constituent: its character span, nuclearity string and relation."""

    span: CharSpan
    nuclearity: str
    relation: str


@dataclass(frozen=True)
class ParsevalCounts:
    """Raw match counts for one document (or, summed with ``+``, for a corpus)."""

    gold: int = 0
    pred: int = 0
    span: int = 0
    nuc: int = 0
    rel: int = 0
    full: int = 0
    seg_gold: int = 0
    seg_pred: int = 0
    seg_match: int = 0
    nd_gold: int = 0
    nd_pred: int = 0
    nd_match: int = 0
    nd_rel_match: int = 0
    docs: int = 0

    def __add__(self, other: ParsevalCounts) -> ParsevalCounts:
        return ParsevalCounts(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def to_dict(self) -> dict[str, int]:
        """Return the counts as a plain dict."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _binary(relation: str, marks: tuple[str, str], left: Node, right: Node) -> Node:
    return Node(first=left.first, last=right.last, relation=relation, nuclearity=marks, children=(left, right))


def binarize_node(node: Node) -> Node:
    """Return an equivalent node whose inner nodes all have exactly two children.

    Multinuclear lists become right-branching chains with the same relation; a
    mononuclear node with several satellites nests them nucleus-outwards: first the
    satellites right of the nucleus (nearest first), then those left of it.
    """
    if node.is_leaf:
        return node
    kids = [binarize_node(c) for c in node.children]
    marks = list(node.nuclearity)
    rel = node.relation or ""
    if len(kids) == 2:
        return _binary(rel, (marks[0], marks[1]), kids[0], kids[1])
    if SATELLITE not in marks:
        acc = kids[-1]
        for kid in reversed(kids[:-1]):
            acc = _binary(rel, (NUCLEUS, NUCLEUS), kid, acc)
        return acc
    # Mixed: build outwards from the (first) nucleus; extra nuclei join as a list first.
    p = marks.index(NUCLEUS)
    q = p
    while q + 1 < len(marks) and marks[q + 1] == NUCLEUS:
        q += 1
    core = kids[q]
    for kid in reversed(kids[p:q]):
        core = _binary(rel, (NUCLEUS, NUCLEUS), kid, core)
    for kid, mark in zip(kids[q + 1:], marks[q + 1:]):
        core = _binary(rel, (NUCLEUS, mark), core, kid)
    for kid, mark in zip(reversed(kids[:p]), reversed(marks[:p])):
        core = _binary(rel, (mark, NUCLEUS), kid, core)
    return core


def binarize(tree: DiscourseTree) -> DiscourseTree:
    """Return ``tree`` with every inner node binary (see ``binarize_node``)."""
    return DiscourseTree(text=tree.text, edus=tree.edus, root=binarize_node(tree.root), parser=tree.parser,
                         meta=tree.meta)


def _edu_char_spans(tree: DiscourseTree) -> list[CharSpan]:
    """Return each EDU's (start, end) trimmed of surrounding whitespace in ``tree.text``."""
    out = []
    text = tree.text
    for e in tree.edus:
        start, end = e.start, e.end
        if text and 0 <= start <= end <= len(text):
            while start < end and text[start].isspace():
                start += 1
            while end > start and text[end - 1].isspace():
                end -= 1
        out.append((start, end))
    return out


def constituents(tree: DiscourseTree, *, include_root: bool = False) -> list[Constituent]:
    """Return the labelled constituents of the binarised ``tree`` (see the module docstring)."""
    spans = _edu_char_spans(tree)
    root = binarize_node(tree.root)
    out = []
    for node in root.walk():
        if node.is_leaf or (node is root and not include_root):
            continue
        out.append(Constituent(span=(spans[node.first][0], spans[node.last][1]),
                               nuclearity="".join(node.nuclearity), relation=node.relation or ""))
    return out


def segmentation_boundaries(tree: DiscourseTree) -> set[int]:
    """Return the character offsets where EDUs 2..n start (whitespace skipped)."""
    return {s for s, _ in _edu_char_spans(tree)[1:]}


def segmentation_counts(gold: DiscourseTree, pred: DiscourseTree) -> ParsevalCounts:
    """Return the segmentation counts (``seg_gold``, ``seg_pred``, ``seg_match``) of ``pred`` against ``gold``."""
    g = segmentation_boundaries(gold)
    p = segmentation_boundaries(pred)
    return ParsevalCounts(seg_gold=len(g), seg_pred=len(p), seg_match=len(g & p))


def _matches(gold: Counter, pred: Counter) -> int:
    return sum((gold & pred).values())


def parseval(gold: DiscourseTree, pred: DiscourseTree, *, include_root: bool = False) -> ParsevalCounts:
    """Return the Parseval, segmentation and non-default detection counts of ``pred`` against ``gold``.

    Both trees must be over the same text (character offsets are compared).
    """
    gc = constituents(gold, include_root=include_root)
    pc = constituents(pred, include_root=include_root)

    def count(items: list[Constituent], *parts: str) -> Counter:
        return Counter(tuple(getattr(c, a) for a in parts) for c in items)

    g_nd = [c for c in gc if not is_default(c.relation)]
    p_nd = [c for c in pc if not is_default(c.relation)]
    seg = segmentation_counts(gold, pred)
    return ParsevalCounts(
        gold=len(gc), pred=len(pc),
        span=_matches(count(gc, "span"), count(pc, "span")),
        nuc=_matches(count(gc, "span", "nuclearity"), count(pc, "span", "nuclearity")),
        rel=_matches(count(gc, "span", "relation"), count(pc, "span", "relation")),
        full=_matches(count(gc, "span", "nuclearity", "relation"), count(pc, "span", "nuclearity", "relation")),
        seg_gold=seg.seg_gold, seg_pred=seg.seg_pred, seg_match=seg.seg_match,
        nd_gold=len(g_nd), nd_pred=len(p_nd),
        nd_match=_matches(count(g_nd, "span"), count(p_nd, "span")),
        nd_rel_match=_matches(count(g_nd, "span", "relation"), count(p_nd, "span", "relation")),
        docs=1,
    )


def prf(match: int, gold: int, pred: int) -> tuple[float, float, float]:
    """Return (precision, recall, F1); 0.0 where undefined, except 1.0 when both sides are empty."""
    if gold == 0 and pred == 0:
        return 1.0, 1.0, 1.0
    p = match / pred if pred else 0.0
    r = match / gold if gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def aggregate(counts: Iterable[ParsevalCounts] | ParsevalCounts) -> dict[str, float]:
    """Return micro-averaged scores from per-document counts.

    Keys: ``seg_p/seg_r/seg_f1``, ``span_p/_r/_f1``, ``nuc_*``, ``rel_*``, ``full_*``,
    ``nondefault_p/_r/_f1`` (span detection), ``nondefault_rel_p/_r/_f1`` and ``docs``.
    """
    total = counts if isinstance(counts, ParsevalCounts) else sum(counts, ParsevalCounts())
    out: dict[str, float] = {"docs": float(total.docs)}
    for name, match, gold, pred in (
        ("seg", total.seg_match, total.seg_gold, total.seg_pred),
        ("span", total.span, total.gold, total.pred),
        ("nuc", total.nuc, total.gold, total.pred),
        ("rel", total.rel, total.gold, total.pred),
        ("full", total.full, total.gold, total.pred),
        ("nondefault", total.nd_match, total.nd_gold, total.nd_pred),
        ("nondefault_rel", total.nd_rel_match, total.nd_gold, total.nd_pred),
    ):
        p, r, f = prf(match, gold, pred)
        out[f"{name}_p"], out[f"{name}_r"], out[f"{name}_f1"] = p, r, f
    return out

