"""The default RST parser: offline, deterministic rules over a spaCy parse and a GUM-derived cue lexicon.

1. ``text_input.clean_text`` decodes and bounds the text; the NLP backend parses it.
2. ``segmenter.segment`` cuts sentences into EDUs at clause edges.
3. Inside a sentence, EDUs are joined bottom-up along the dependency structure
   (an EDU is joined to the EDU holding its clause's syntactic head once all its
   own dependents are attached; right dependents before left ones, nearest first). Conjuncts of a
   conjunct attach to the first one, so "checked ..., replaced ..., but could
   not start" becomes Concession(Joint(checked, replaced), could not start).
   Each join is labelled by ``CueLexicon.predict``; the rest of a clause
   interrupted by an embedded one is joined as Same-Unit.
4. Sentences are joined inside a paragraph (blank-line separated), then paragraphs:
   a sentence opening with a pronoun or demonstrative that points back ("It", "This",
   "They", "His", a bracketed citation, ...) is first joined to the sentence before it
   as its Elaboration satellite; a sentence opening with a discourse marker ("However",
   "So", "Because", ...) is then joined to the unit before it, labelled from the
   lexicon at the ``d`` level; the resulting units are chained right-branching as a
   Joint list.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parsers.base import RSTParser, register_parser
from parsers.cue_lexicon import (
    DEFAULT_LEXICON_PATH,
    INTER_SENTENCE_MARKERS,
    SAME_UNIT_LABEL,
    CueLexicon,
    UnitView,
    edu_view,
    join_features,
)
from parsers.edu_content import content_lemmas, entity_phrases
from parsers.errors import ConfigError
from parsers.nlp_base import AnalyzedText, NLPBackend
from parsers.relations import ELABORATION, JOINT, MULTINUCLEAR_RELATIONS, TEMPORAL
from parsers.segmenter import Segment, SegmenterConfig, segment
from parsers.text_input import MAX_CHARS, clean_text
from parsers.tree import EDU, NUCLEUS, DiscourseTree, Node

#: Longest run of sentences (or paragraphs) joined as one chain; longer runs are chained in blocks,
#: which keeps trees under ~300 levels (the tree's JSON/picture code recurses). Long GUM documents
#: score better the longer the chain, so it is not smaller.
MAX_CHAIN = 200
#: Most EDUs of one sentence joined along its dependencies; run-on sentences are built in blocks.
MAX_SENTENCE_EDUS = 32
#: Sentence openers that point back to the sentence before (pronouns, demonstratives, bracketed
#: citations or asides): such a sentence is joined to its predecessor as an Elaboration satellite
#: before the Joint chain: in GUM, sentence boundaries before these openers sit lowest in the gold trees
#: (the dev figures of this choice and the variants it beat are in docs/parsers.md).
CONTINUATION_OPENERS: frozenset[str] = frozenset({
    "it", "its", "this", "these", "they", "their", "them", "he", "she", "his", "her", "him", "that", "those",
    "such", "both", "each", "[", "(",
})


@dataclass
class _Unit:
    first: int
    last: int
    head: int  # EDU index whose clause heads this unit
    node: Node


class RuleParser(RSTParser):
    """Offline rule-based RST parser (see the module docstring).

    ``nlp``: an ``NLPBackend`` (default: ``SpacyBackend``, loaded lazily on first use);
    ``lexicon_path``: the cue lexicon JSON; ``max_chars``: longer texts are refused;
    ``named_entities``: also run spaCy's NER for ``EDU.entities`` (off by default: it
    doubles the parse time, and noun chunks already hold the entity phrases);
    ``sentence_branching``: how sentences of a paragraph are joined, ``"right"``
    (each sentence joins everything after it; better on GUM dev) or ``"left"``.
    """

    name = "rules"

    def __init__(self, *, nlp: NLPBackend | None = None, lexicon_path: str | Path | None = None,
                 max_chars: int = MAX_CHARS, segmenter: SegmenterConfig | None = None,
                 named_entities: bool = False, sentence_branching: str = "right") -> None:
        if max_chars <= 0:
            raise ConfigError(f"max_chars must be positive, got {max_chars}")
        if sentence_branching not in ("left", "right"):
            raise ConfigError(f"sentence_branching must be 'left' or 'right', got {sentence_branching!r}")
        self.named_entities = named_entities
        self.sentence_branching = sentence_branching
        self.lexicon_path = Path(lexicon_path) if lexicon_path else DEFAULT_LEXICON_PATH
        self.lexicon = CueLexicon.from_disk(self.lexicon_path)
        self.max_chars = max_chars
        self.segmenter = segmenter or SegmenterConfig()
        self._nlp = nlp

    @property
    def nlp(self) -> NLPBackend:
        if self._nlp is None:
            from parsers.nlp_spacy import SpacyBackend

            self._nlp = SpacyBackend(disable=() if self.named_entities else ("ner",))
        return self._nlp

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "lexicon_path": str(self.lexicon_path), "max_chars": self.max_chars,
                "named_entities": self.named_entities, "sentence_branching": self.sentence_branching}

    # --- public API ---------------------------------------------------------
    def parse(self, text: str | bytes) -> DiscourseTree:
        """Return the discourse tree of ``text``; ``InputError`` for empty, too long or undecodable text."""
        return self.analyze_and_parse(text)[1]

    def analyze_and_parse(self, text: str | bytes) -> tuple[AnalyzedText, DiscourseTree]:
        """Return ``(analysis, tree)`` of ``text`` as ``parse`` makes them: the analysis (of the cleaned text) is
        for a caller that needs more of the same parse (the learned ranker's SG phrases of a question)."""
        analysis = self.nlp.analyze(clean_text(text, max_chars=self.max_chars))
        return analysis, self.parse_analyzed(analysis)

    def parse_many(self, texts: Iterable[str | bytes], *, batch_size: int = 64,
                   n_process: int = 1) -> Iterator[DiscourseTree]:
        """Yield the trees of ``texts`` in order, batching the NLP (``n_process`` > 1 forks workers).

        Every text is cleaned first, so one bad text raises ``InputError`` before any parsing.
        """
        for _, tree in self.analyze_and_parse_many(texts, batch_size=batch_size, n_process=n_process):
            yield tree

    def analyze_and_parse_many(self, texts: Iterable[str | bytes], *, batch_size: int = 64,
                               n_process: int = 1) -> Iterator[tuple[AnalyzedText, DiscourseTree]]:
        """Yield ``(analysis, tree)`` of ``texts`` in order, as ``parse_many`` does: the analysis is what a caller
        needing more of the same parse (the index's SG phrases) reads instead of parsing every text again."""
        cleaned = [clean_text(t, max_chars=self.max_chars) for t in texts]
        for doc in self.nlp.analyze_many(cleaned, batch_size=batch_size, n_process=n_process):
            yield doc, self.parse_analyzed(doc)

    def parse_analyzed(self, doc: AnalyzedText) -> DiscourseTree:
        """Return the tree of an already analysed (and cleaned) text."""
        segments = [s for s in segment(doc, self.segmenter) if s.end > s.start]
        if not segments:
            edu = EDU(index=0, text=doc.text.strip(), start=0, end=len(doc.text.rstrip()), sentence=0)
            return DiscourseTree.single(doc.text, edu, parser=self.name)
        edus = tuple(self._edu(doc, i, s) for i, s in enumerate(segments))
        views = [edu_view(doc, s.start, s.end) for s in segments]
        root = self._build(doc, segments, views)
        return DiscourseTree(text=doc.text, edus=edus, root=root, parser=self.name)

    # --- internals ----------------------------------------------------------
    def _edu(self, doc: AnalyzedText, index: int, seg: Segment) -> EDU:
        start = doc.tokens[seg.start].idx
        end = doc.tokens[seg.end - 1].end
        return EDU(index=index, text=doc.text[start:end], start=start, end=end, sentence=seg.sent,
                   lemmas=content_lemmas(doc, seg.start, seg.end), entities=entity_phrases(doc, seg.start, seg.end))

    def _parents(self, doc: AnalyzedText, segments: list[Segment]) -> list[int | None]:
        edu_of = {}
        for e, s in enumerate(segments):
            for t in range(s.start, s.end):
                edu_of[t] = e
        parents: list[int | None] = []
        for e, s in enumerate(segments):
            h = doc.tokens[s.head]
            p = edu_of.get(h.head) if h.head != h.i else None
            parents.append(p if p is not None and p != e and segments[p].sent == s.sent else None)
        # Conjuncts of a conjunct attach to the first conjunct, so lists flatten.
        for e, s in enumerate(segments):
            seen = 0
            while (s.head_dep == "conj" and parents[e] is not None and segments[parents[e]].head_dep == "conj"
                   and parents[parents[e]] is not None and seen < len(segments)):
                parents[e] = parents[parents[e]]
                seen += 1
        return parents

    def _join(self, left: _Unit, right: _Unit, label: tuple[str, str], head: int, *, flatten: bool = False) -> _Unit:
        relation, nuc = label
        kids: list[Node] = [left.node, right.node]
        marks = list(nuc)
        if relation in MULTINUCLEAR_RELATIONS and nuc == "NN":
            marks = [NUCLEUS, NUCLEUS]
            # Inside a sentence, extend an n-ary list rather than nesting it (GUM binarises lists
            # right-branching); across sentences the nesting keeps sentence and paragraph edges.
            ln = left.node
            if flatten and not ln.is_leaf and ln.relation == relation and all(m == NUCLEUS for m in ln.nuclearity):
                kids = [*ln.children, right.node]
                marks = [NUCLEUS] * len(kids)
        return _Unit(first=left.first, last=right.last, head=head, node=Node.relate(relation, kids, tuple(marks)))

    def _label(self, views: list[UnitView], left: _Unit, right: _Unit) -> tuple[str, str]:
        lv, rv = views[left.first: left.last + 1], views[right.first: right.last + 1]
        level = "s" if lv[-1].sent == rv[0].sent else "d"
        if level == "d" and not (rv[0].words and rv[0].words[0] in INTER_SENTENCE_MARKERS):
            # Two past-tense main clauses in a row narrate a sequence ("He joined ... . He left ...").
            if lv[-1].root_tag == "VBD" and rv[0].root_tag == "VBD":
                return (TEMPORAL, "NN")
            return (JOINT, "NN")
        return self.lexicon.predict(join_features(lv, rv), level)

    def _build(self, doc: AnalyzedText, segments: list[Segment], views: list[UnitView]) -> Node:
        parents = self._parents(doc, segments)
        sentence_units: list[_Unit] = []
        start = 0
        while start < len(segments):
            end = start
            while end + 1 < len(segments) and segments[end + 1].sent == segments[start].sent:
                end += 1
            if end - start + 1 <= MAX_SENTENCE_EDUS:
                sentence_units.append(self._build_sentence(segments, views, parents, start, end))
            else:
                # A run-on "sentence" of many clauses: build it in blocks to bound the depth.
                blocks = [self._build_sentence(segments, views, parents, b, min(b + MAX_SENTENCE_EDUS - 1, end))
                          for b in range(start, end + 1, MAX_SENTENCE_EDUS)]
                sentence_units.append(self._chain(blocks, views))
            start = end + 1
        openers = [doc.tokens[s.start].text.lower() for s in segments]
        # Paragraphs (blank-line separated) group sentences before the whole text is joined.
        paragraphs: list[list[_Unit]] = []
        last_para = -1
        for unit in sentence_units:
            para = doc.text.count("\n\n", 0, doc.tokens[segments[unit.first].start].idx)
            if para != last_para:
                paragraphs.append([])
                last_para = para
            paragraphs[-1].append(unit)
        para_units = [self._chain(units, views, openers=openers) for units in paragraphs]
        return self._chain(para_units, views, openers=openers).node

    def _chain(self, units: list[_Unit], views: list[UnitView], *, openers: list[str] | None = None) -> _Unit:
        # Long texts are chained in blocks, then the blocks chained, so the tree's depth
        # stays logarithmic: tree recursion (JSON, pictures) must not hit Python's limit.
        if len(units) > MAX_CHAIN:
            blocks = [self._chain(units[i: i + MAX_CHAIN], views, openers=openers)
                      for i in range(0, len(units), MAX_CHAIN)]
            return self._chain(blocks, views)
        if len(units) > 1 and openers is not None:
            # "The starter clicks. It ..." : a sentence pointing back elaborates the one before.
            runs: list[list[_Unit]] = [[units[0]]]
            for unit in units[1:]:
                prev = runs[-1][-1]
                if openers[unit.first] in CONTINUATION_OPENERS and views[unit.first].sent != views[prev.last].sent:
                    runs[-1].append(unit)
                else:
                    runs.append([unit])
            paired = []
            for run in runs:
                # "S. It ... . They ..." : the follow-ups form a chain that elaborates S as a whole
                acc = run[-1]
                for unit in reversed(run[1:-1]):
                    acc = self._join(unit, acc, self._label(views, unit, acc), unit.head)
                if len(run) > 1:
                    acc = self._join(run[0], acc, (ELABORATION, "NS"), run[0].head)
                paired.append(acc)
            units = paired
            if len(units) == 1:
                return units[0]
        if len(units) > 2:
            # A sentence opening with a marker ("However, ...") relates to the one before it:
            # join that pair first, then chain.
            merged: list[_Unit] = [units[0]]
            for unit in units[1:]:
                words = views[unit.first].words
                if words and words[0] in INTER_SENTENCE_MARKERS:
                    prev = merged.pop()
                    merged.append(self._join(prev, unit, self._label(views, prev, unit), prev.head))
                else:
                    merged.append(unit)
            units = merged
            if len(units) == 1:
                return units[0]
        if self.sentence_branching == "right":
            acc = units[-1]
            for unit in reversed(units[:-1]):
                acc = self._join(unit, acc, self._label(views, unit, acc), unit.head)
            return acc
        acc = units[0]
        for unit in units[1:]:
            acc = self._join(acc, unit, self._label(views, acc, unit), acc.head)
        return acc

    def _build_sentence(self, segments: list[Segment], views: list[UnitView], parents: list[int | None],
                        first: int, last: int) -> _Unit:
        units = [_Unit(first=e, last=e, head=e, node=Node.leaf(e)) for e in range(first, last + 1)]

        def governs(a: _Unit, b: _Unit) -> bool:
            p = parents[b.head]
            return p is not None and a.first <= p <= a.last

        def complete(u: _Unit) -> bool:
            return all(u.first <= e <= u.last for e in range(first, last + 1)
                       if parents[e] is not None and u.first <= parents[e] <= u.last)

        while len(units) > 1:
            # Head-outward: complete right dependents attach first, then left ones
            # ("If X, Y because Z" -> Condition(X, Cause(Y, Z)); better on GUM dev).
            pick = None
            for i in range(len(units) - 1):
                a, b = units[i], units[i + 1]
                if governs(a, b) and complete(b):
                    pick = (i, a.head, b)
                    break
            if pick is None:
                for i in range(len(units) - 1):
                    a, b = units[i], units[i + 1]
                    if governs(b, a) and complete(a):
                        pick = (i, b.head, a)
                        break
            if pick is None:
                for i in range(len(units) - 1):
                    a, b = units[i], units[i + 1]
                    if governs(a, b) or governs(b, a):
                        pick = (i, a.head if governs(a, b) else b.head, b if governs(a, b) else a)
                        break
            if pick is None:
                pick = (0, units[0].head, units[1])
            i, head, dependent = pick
            a, b = units[i], units[i + 1]
            if segments[dependent.head].head_dep == "frag":
                label = SAME_UNIT_LABEL
            else:
                label = self._label(views, a, b)
            units[i: i + 2] = [self._join(a, b, label, head, flatten=True)]
        return units[0]


@register_parser("rules")
def make_rule_parser(**config: Any) -> RuleParser:
    """Return a ``RuleParser`` built from ``config`` (``lexicon_path``, ``max_chars``)."""
    return RuleParser(**config)
