"""Greedy bottom-up discourse tree building over span-pair scores, sentence by sentence, then across sentences.

The builder knows nothing about features or models: it takes a *scorer*
(adjacent span pairs -> merge scores) and a *labeller* (merged pairs ->
relation and nuclearity) per level, so training code can drive it with
gold oracles and the trained parser with classifiers.

Spans are inclusive EDU index pairs ``(first, last)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from parsers.tree import Node

Span = tuple[int, int]
Pair = tuple[Span, Span]
#: Adjacent pairs -> one merge score per pair (higher merges first).
Scorer = Callable[[list[Pair]], Sequence[float]]
#: Merged pairs -> one (relation, nuclearity such as "NS") per pair.
Labeller = Callable[[list[Pair]], Sequence[tuple[str, str]]]

INTRA = "intra"
INTER = "inter"


@dataclass(frozen=True)
class Merge:
    """One merge decision: the two adjacent spans joined and the level it was made at."""

    left: Span
    right: Span
    level: str

    @property
    def span(self) -> Span:
        return (self.left[0], self.right[1])


def greedy_merges(items: Sequence[Span], score: Scorer, *, level: str) -> list[Merge]:
    """Return the merges that reduce adjacent ``items`` to one span, best-scoring adjacent pair first.

    Scores are computed once per distinct pair, so each step costs only the two new pairs.
    """
    frontier = list(items)
    cache: dict[Pair, float] = {}
    merges: list[Merge] = []
    while len(frontier) > 1:
        pairs = [(frontier[k], frontier[k + 1]) for k in range(len(frontier) - 1)]
        new = [p for p in pairs if p not in cache]
        if new:
            for p, s in zip(new, score(new)):
                cache[p] = float(s)
        best = max(range(len(pairs)), key=lambda k: cache[pairs[k]])
        left, right = pairs[best]
        merges.append(Merge(left=left, right=right, level=level))
        frontier[best: best + 2] = [(left[0], right[1])]
    return merges


def sentence_groups(sentence_of_edu: Sequence[int]) -> list[Span]:
    """Return the EDU spans of consecutive EDUs sharing a sentence number."""
    groups: list[Span] = []
    for i, s in enumerate(sentence_of_edu):
        if groups and sentence_of_edu[groups[-1][1]] == s:
            groups[-1] = (groups[-1][0], i)
        else:
            groups.append((i, i))
    return groups


def build_merges(sentence_of_edu: Sequence[int], *, score_intra: Scorer, score_inter: Scorer) -> list[Merge]:
    """Return all merges for a text: each sentence's EDUs first, then the sentence spans into one tree."""
    merges: list[Merge] = []
    groups = sentence_groups(sentence_of_edu)
    for first, last in groups:
        if last > first:
            merges.extend(greedy_merges([(i, i) for i in range(first, last + 1)], score_intra, level=INTRA))
    merges.extend(greedy_merges(groups, score_inter, level=INTER))
    return merges


def assemble(n_edus: int, merges: Sequence[Merge], labels: Sequence[tuple[str, str]]) -> Node:
    """Return the root ``Node`` built from ``merges`` (in merge order) and their ``labels``."""
    nodes: dict[Span, Node] = {(i, i): Node.leaf(i) for i in range(n_edus)}
    for m, (relation, nuclearity) in zip(merges, labels):
        nodes[m.span] = Node.relate(relation, [nodes[m.left], nodes[m.right]], nuclearity)
    return nodes[(0, n_edus - 1)]


def label_merges(merges: Sequence[Merge], *, label_intra: Labeller, label_inter: Labeller) -> list[tuple[str, str]]:
    """Return the (relation, nuclearity) of every merge, labelling each level in one batch."""
    out: list[tuple[str, str] | None] = [None] * len(merges)
    for level, labeller in ((INTRA, label_intra), (INTER, label_inter)):
        idx = [k for k, m in enumerate(merges) if m.level == level]
        if idx:
            for k, lab in zip(idx, labeller([(merges[k].left, merges[k].right) for k in idx])):
                out[k] = lab
    return [lab for lab in out if lab is not None]


def gold_oracle_pairs(items: Sequence[Span], gold_spans: set[Span]) -> tuple[list[tuple[Pair, int]], list[Span]]:
    """Return the training pairs of a gold-guided greedy run over ``items`` and the frontier it stops at.

    Every distinct adjacent pair seen is labelled 1 when joining it gives a gold
    constituent, else 0. The run merges gold pairs (leftmost first) until none is left.
    """
    frontier = list(items)
    seen: dict[Pair, int] = {}
    while len(frontier) > 1:
        pairs = [(frontier[k], frontier[k + 1]) for k in range(len(frontier) - 1)]
        gold_k = None
        for k, (a, b) in enumerate(pairs):
            lab = int((a[0], b[1]) in gold_spans)
            seen.setdefault((a, b), lab)
            if lab and gold_k is None:
                gold_k = k
        if gold_k is None:
            break
        a, b = pairs[gold_k]
        frontier[gold_k: gold_k + 2] = [(a[0], b[1])]
    return list(seen.items()), frontier
