"""From an analysed text and its word vectors to a ``DiscourseTree``: shared by the parser and training.

Training scores its dev/test trees through these same functions, so the figures in the manifest are
the parser's own, not those of a training-only re-implementation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from parsers.features import EduView, boundary_labels, edus_from_labels, edus_to_tree_edus, label_spans
from parsers.neural.cues import edu_cues
from parsers.neural.model import NeuralModel, edu_raw, sentence_chunks, word_flags
from parsers.nlp_base import AnalyzedText
from parsers.tree import DiscourseTree


def segment(model: NeuralModel, analyzed: AnalyzedText, words: np.ndarray) -> list[EduView]:
    """Return the EDUs the segmenter finds (a line break always ends a unit, as in the trained parser)."""
    toks = analyzed.tokens
    probs = model.seg_probs(words, word_flags(toks), sentence_chunks(toks))
    labels = [int(p >= model.seg_threshold) for p in probs]
    labels[0] = 1
    for i in range(1, len(toks)):
        if toks[i].text.isspace():
            labels[i] = 0
        elif "\n" in toks[i - 1].text or "\n" in toks[i - 1].whitespace:
            labels[i] = 1
    return edus_from_labels(analyzed, labels)


def views_from_offsets(analyzed: AnalyzedText, edu_starts: Sequence[int]) -> list[EduView]:
    """Return the EDUs starting at character offsets ``edu_starts`` (pre-segmented input) as token ranges."""
    toks = analyzed.tokens
    spans = label_spans(analyzed, boundary_labels(analyzed, list(edu_starts)))
    return [EduView(start=a, end=b, sentence=toks[a].sent) for a, b in spans]


def sentence_groups(views: Sequence[EduView]) -> np.ndarray:
    """Return each EDU's sentence number, renumbered 0, 1, 2, ... in text order."""
    ids: dict[int, int] = {}
    return np.array([ids.setdefault(v.sentence, len(ids)) for v in views], dtype=np.int64)


def tree_from_views(model: NeuralModel, analyzed: AnalyzedText, words: np.ndarray, views: Sequence[EduView], *,
                    parser: str = "neural") -> DiscourseTree:
    """Return the tree built over the EDUs ``views`` of ``analyzed`` (word vectors ``words``)."""
    groups = sentence_groups(views)
    views = [EduView(start=v.start, end=v.end, sentence=int(g)) for v, g in zip(views, groups)]
    edus = edus_to_tree_edus(analyzed, views)
    if len(edus) == 1:
        return DiscourseTree.single(analyzed.text, edus[0], parser=parser)
    bounds = [(v.start, v.end) for v in views]
    cues = edu_cues(analyzed.tokens, bounds, model.cue_words) if model.cue_words else None
    root = model.build(edu_raw(words, bounds), groups, cues)
    return DiscourseTree(text=analyzed.text, edus=tuple(edus), root=root, parser=parser)


def parse_analyzed(model: NeuralModel, analyzed: AnalyzedText, words: np.ndarray, *,
                   edu_starts: Sequence[int] | None = None, parser: str = "neural") -> tuple[DiscourseTree, list[EduView]]:
    """Return the tree of ``analyzed`` (segmented by the model, or at ``edu_starts``) and its EDU views."""
    views = views_from_offsets(analyzed, edu_starts) if edu_starts is not None else segment(model, analyzed, words)
    tree = tree_from_views(model, analyzed, words, views, parser=parser)
    groups = sentence_groups(views)
    return tree, [EduView(start=v.start, end=v.end, sentence=int(g)) for v, g in zip(views, groups)]
