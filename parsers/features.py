"""EDU token ranges (``EduView``, ``edus_from_labels``: the neural parser and GUM preparation) and the linear
feature families of the retired scikit-learn parser (kept for parser research, not run by any registered parser).

Two feature families, both plain ``dict[str, float]`` for a ``DictVectorizer``:

* token-boundary features for the EDU segmenter (``boundary_features``): does an
  EDU start at token *i*?  Lexical context, POS/dependency, and where *i*
  stands in the syntax (which clause subtree starts or ends here);
* span-pair features for the structure scorer and the relation/nuclearity
  classifier (``pair_features``): lexical edges, discourse cues, syntactic
  attachment between the spans, positional and length information.

Both work on ``AnalyzedText`` so the same code serves gold-aligned training
documents and raw inference text.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

from parsers.nlp_base import AnalyzedText, Token
from parsers.tree import EDU
from parsers.tree_builder import Span

#: Connectives and cue phrases (first words) that signal relations or EDU starts.
DISCOURSE_MARKERS: frozenset[str] = frozenset({
    "after", "afterwards", "also", "although", "and", "as", "because", "before", "besides", "but",
    "by", "consequently", "despite", "even", "eventually", "finally", "first", "firstly", "for",
    "furthermore", "hence", "however", "if", "in", "indeed", "instead", "later", "meanwhile",
    "moreover", "nevertheless", "next", "nonetheless", "now", "once", "or", "otherwise", "second",
    "secondly", "since", "so", "still", "then", "therefore", "though", "thus", "to", "unless",
    "until", "when", "whenever", "where", "whereas", "which", "while", "who", "whose", "with",
    "without", "yet", "that", "what", "how", "why", "according", "said", "says", "say", "think",
    "example", "instance", "addition", "contrast", "result", "order", "fact", "particular",
    "like", "unlike", "similarly", "likewise", "overall", "summary", "briefly", "ultimately",
    "already", "again", "only", "just", "too", "especially", "including", "such", "not", "no",
})

_CLAUSE_DEPS = frozenset({"advcl", "ccomp", "xcomp", "relcl", "acl", "conj", "parataxis", "csubj", "pcomp", "prep",
                          "mark", "cc", "advmod", "nsubj", "appos", "npadvmod", "intj", "dep", "root"})


def _bucket(n: int, edges: Sequence[int] = (1, 2, 3, 5, 8, 13, 21, 34)) -> str:
    for edge in edges:
        if n <= edge:
            return f"<={edge}"
    return f">{edges[-1]}"


@dataclass
class SyntaxIndex:
    """Per-token syntactic helpers derived once per text: subtree edges and depth."""

    left_edge: list[int]
    right_edge: list[int]
    has_subject: list[bool]

    @classmethod
    def of(cls, analyzed: AnalyzedText) -> SyntaxIndex:
        """Return the subtree left/right edges of every token of ``analyzed``."""
        toks = analyzed.tokens
        n = len(toks)
        left = list(range(n))
        right = list(range(n))
        for t in toks:
            # Walk to the root once per token; spaCy trees are shallow, so this stays linear in practice.
            node, seen = t.i, 0
            while toks[node].head != node and seen < n:
                node = toks[node].head
                if t.i < left[node]:
                    left[node] = t.i
                if t.i > right[node]:
                    right[node] = t.i
                seen += 1
        subj = [False] * n
        for t in toks:
            if t.dep in ("nsubj", "nsubjpass", "csubj", "expl") and t.head != t.i:
                subj[t.head] = True
        return cls(left_edge=left, right_edge=right, has_subject=subj)


def _highest_subtree_at(analyzed: AnalyzedText, edges: list[int], i: int) -> int | None:
    """Return the highest token whose subtree edge (``edges``: left or right edges) is token ``i``, or None."""
    toks = analyzed.tokens
    best = None
    node = i
    for _ in range(len(toks)):
        if edges[node] != i:
            break
        best = node
        head = toks[node].head
        if head == node:
            break
        node = head
    return best


def _subtree_starting_at(analyzed: AnalyzedText, syn: SyntaxIndex, i: int) -> int | None:
    """Return the highest token whose subtree starts at token ``i`` (within its sentence), or None."""
    return _highest_subtree_at(analyzed, syn.left_edge, i)


def _subtree_ending_at(analyzed: AnalyzedText, syn: SyntaxIndex, i: int) -> int | None:
    """Return the highest token whose subtree ends at token ``i``, or None."""
    return _highest_subtree_at(analyzed, syn.right_edge, i)


def _word(toks: Sequence[Token], j: int) -> str:
    """Return token ``j`` lowercased, or a sentinel past either end of the text."""
    return toks[j].text.lower() if 0 <= j < len(toks) else ("<s>" if j < 0 else "</s>")


def _tag(toks: Sequence[Token], j: int) -> str:
    """Return the fine POS tag of token ``j``, or a sentinel past either end of the text."""
    return toks[j].tag if 0 <= j < len(toks) else ("<s>" if j < 0 else "</s>")


def _shape(toks: Sequence[Token], j: int) -> str:
    """Return a one-character shape of token ``j``: d(igits), X (capitalised), x (lower), else its first char."""
    if not 0 <= j < len(toks):
        return "<none>"
    x = toks[j].text
    return "d" if x.isdigit() else "X" if x[:1].isupper() else "x" if x[:1].isalpha() else x[:1]


def _starts_sentence(toks: Sequence[Token], i: int) -> bool:
    return i == 0 or toks[i - 1].sent != toks[i].sent


def _window_features(toks: Sequence[Token], i: int) -> dict[str, float]:
    """Return the lexical, POS, dependency and shape features of the tokens around boundary ``i``."""
    t = toks[i]
    w = functools.partial(_word, toks)
    p = functools.partial(_tag, toks)
    shape = functools.partial(_shape, toks)
    return {
        "bias": 1.0,
        f"w0={w(i)}": 1.0,
        f"w-1={w(i - 1)}": 1.0,
        f"w+1={w(i + 1)}": 1.0,
        f"w-2={w(i - 2)}": 1.0,
        f"l0={t.lemma}": 1.0,
        f"p0={p(i)}": 1.0,
        f"p-1={p(i - 1)}": 1.0,
        f"p+1={p(i + 1)}": 1.0,
        f"p-2={p(i - 2)}": 1.0,
        f"p-1p0={p(i - 1)}|{p(i)}": 1.0,
        f"p0p+1={p(i)}|{p(i + 1)}": 1.0,
        f"w-1w0={w(i - 1)}|{w(i)}": 1.0,
        f"d0={t.dep}": 1.0,
        f"d0p0={t.dep}|{t.pos}": 1.0,
        f"hdir={'L' if t.head < i else 'R' if t.head > i else 'S'}": 1.0,
        f"hdep={toks[t.head].dep}": 1.0,
        f"hpos={toks[t.head].pos}": 1.0,
        f"sentstart={_starts_sentence(toks, i)}": 1.0,
        # Shapes catch citations ("[ 18 ]") and numbers that lexical features scatter.
        f"shape={shape(i - 1)}{shape(i)}{shape(i + 1)}": 1.0,
        f"shape+2={shape(i)}{shape(i + 1)}{shape(i + 2)}": 1.0,
    }


def _previous_token_features(toks: Sequence[Token], i: int) -> dict[str, float]:
    """Return what the token before boundary ``i`` is: its dependency and whether (which) punctuation."""
    if i == 0:
        return {}
    prev = toks[i - 1]
    f = {f"d-1={prev.dep}": 1.0, f"prevpunct={prev.is_punct}": 1.0}
    if prev.is_punct:
        f[f"prevpunctw={prev.text}|p0={toks[i].tag}"] = 1.0
    return f


def _marker_features(toks: Sequence[Token], i: int) -> dict[str, float]:
    """Return the discourse-marker features of token ``i`` (with the word before it)."""
    if toks[i].text.lower() not in DISCOURSE_MARKERS:
        return {}
    return {"marker0": 1.0, f"marker0prev={_word(toks, i - 1)}": 1.0}


def _subtree_start_features(analyzed: AnalyzedText, syn: SyntaxIndex, i: int) -> dict[str, float]:
    """Return the features of the highest subtree that starts at token ``i`` inside a sentence."""
    toks = analyzed.tokens
    start = _subtree_starting_at(analyzed, syn, i)
    if start is None or _starts_sentence(toks, i):
        return {}
    st = toks[start]
    prev = _word(toks, i - 1) if i > 0 and toks[i - 1].is_punct else _tag(toks, i - 1)
    f = {
        f"starts={st.dep}": 1.0,
        f"starts={st.dep}|{st.pos}": 1.0,
        f"starts={st.dep}|w0={_word(toks, i)}": 1.0,
        f"startslen={_bucket(syn.right_edge[start] - i + 1)}": 1.0,
        f"starts={st.dep}|{st.pos}|prev={prev}": 1.0,
        f"starts={st.dep}|{st.pos}|subj={syn.has_subject[start]}": 1.0,
    }
    if st.dep in _CLAUSE_DEPS and st.pos in ("VERB", "AUX"):
        f["startsclause"] = 1.0
    return f


def _next_subtree_features(analyzed: AnalyzedText, syn: SyntaxIndex, i: int) -> dict[str, float]:
    """Return the features of the highest subtree that starts right after token ``i`` inside a sentence."""
    toks = analyzed.tokens
    if i + 1 >= len(toks) or _starts_sentence(toks, i):
        return {}
    nxt = _subtree_starting_at(analyzed, syn, i + 1)
    if nxt is None:
        return {}
    nt = toks[nxt]
    return {
        f"nextstarts={nt.dep}|{nt.pos}|w0={_word(toks, i)}": 1.0,
        f"nextstarts={nt.dep}|{nt.pos}|p0={_tag(toks, i)}|subj={syn.has_subject[nxt]}": 1.0,
    }


def _subtree_end_features(analyzed: AnalyzedText, syn: SyntaxIndex, i: int) -> dict[str, float]:
    """Return the features of the highest subtree that ends at the token before boundary ``i``."""
    if i == 0:
        return {}
    end = _subtree_ending_at(analyzed, syn, i - 1)
    if end is None:
        return {}
    et = analyzed.tokens[end]
    return {f"ends={et.dep}|{et.pos}": 1.0}


def _sentence_position_features(toks: Sequence[Token], i: int) -> dict[str, float]:
    """Return how far token ``i`` is into its sentence: EDUs rarely start in the first couple of tokens."""
    sent_first = i
    while sent_first > 0 and toks[sent_first - 1].sent == toks[i].sent:
        sent_first -= 1
    return {f"sentpos={_bucket(i - sent_first)}": 1.0}


def boundary_features(analyzed: AnalyzedText, syn: SyntaxIndex, i: int) -> dict[str, float]:
    """Return the features of the candidate EDU boundary *before* token ``i``."""
    toks = analyzed.tokens
    # The order of the steps fixes the dict order; the shipped model was fitted on this order.
    f = _window_features(toks, i)
    f.update(_previous_token_features(toks, i))
    f.update(_marker_features(toks, i))
    f.update(_subtree_start_features(analyzed, syn, i))
    f.update(_next_subtree_features(analyzed, syn, i))
    f.update(_subtree_end_features(analyzed, syn, i))
    f.update(_sentence_position_features(toks, i))
    return f


def all_boundary_features(analyzed: AnalyzedText) -> list[dict[str, float]]:
    """Return ``boundary_features`` for every token of ``analyzed`` (index 0 included)."""
    syn = SyntaxIndex.of(analyzed)
    return [boundary_features(analyzed, syn, i) for i in range(len(analyzed.tokens))]


def boundary_labels(analyzed: AnalyzedText, edu_starts: Sequence[int]) -> list[int]:
    """Return 1 for each token that begins an EDU (by character offset in ``edu_starts``), else 0.

    Token 0 is always 1. Offsets that fall inside a token are snapped to that token.
    """
    starts = set(edu_starts)
    labels = [0] * len(analyzed.tokens)
    for t in analyzed.tokens:
        if t.idx in starts:
            labels[t.i] = 1
    unmatched = starts - {t.idx for t in analyzed.tokens}
    for off in unmatched:
        for t in analyzed.tokens:
            if t.idx <= off < t.end:
                labels[t.i] = 1
                break
    if labels:
        labels[0] = 1
    return labels


@dataclass
class EduView:
    """An EDU as a token range ``[start, end)`` of an analysed text, with its sentence number."""

    start: int
    end: int
    sentence: int


def label_spans(analyzed: AnalyzedText, labels: Sequence[int]) -> list[list[int]]:
    """Return the ``[start, end)`` token ranges that begin-of-EDU ``labels`` cut the text into."""
    spans: list[list[int]] = []
    for t in analyzed.tokens:
        if labels[t.i] or not spans:
            spans.append([t.i, t.i + 1])
        else:
            spans[-1][1] = t.i + 1
    return spans


def edus_from_labels(analyzed: AnalyzedText, labels: Sequence[int]) -> list[EduView]:
    """Return the EDU token ranges implied by begin-of-EDU ``labels``.

    An EDU made only of punctuation is merged into its left neighbour (the right one at the start).
    """
    toks = analyzed.tokens
    spans = label_spans(analyzed, labels)
    merged: list[list[int]] = []
    for s in spans:
        if merged and all(x.is_punct for x in toks[s[0]: s[1]]):
            merged[-1][1] = s[1]
        else:
            merged.append(s)
    if len(merged) > 1 and all(x.is_punct for x in toks[merged[0][0]: merged[0][1]]):
        merged[1][0] = merged[0][0]
        merged.pop(0)
    return [EduView(start=a, end=b, sentence=toks[a].sent) for a, b in merged]


@dataclass
class DocContext:
    """An analysed text split into EDUs, with the per-EDU facts pair features need."""

    analyzed: AnalyzedText
    edus: list[EduView]
    syn: SyntaxIndex = field(init=False)
    heads: list[int] = field(init=False)
    n_sentences: int = field(init=False)

    def __post_init__(self) -> None:
        self.syn = SyntaxIndex.of(self.analyzed)
        self.heads = [self._edu_head(e) for e in self.edus]
        self.n_sentences = max((e.sentence for e in self.edus), default=0) + 1

    def _edu_head(self, e: EduView) -> int:
        # The EDU's syntactic head: of the tokens attached outside the EDU (or roots), the one with
        # the widest subtree, so "but it failed" is headed by "failed", not by "but".
        toks = self.analyzed.tokens
        outside = [j for j in range(e.start, e.end) if toks[j].head == j or not e.start <= toks[j].head < e.end]
        if not outside:
            return e.start
        return max(outside, key=lambda j: (self.syn.right_edge[j] - self.syn.left_edge[j], -j))

    def words(self, edu: int) -> list[str]:
        """Return the lowercased non-punctuation words of EDU ``edu``."""
        e = self.edus[edu]
        return [t.text.lower() for t in self.analyzed.tokens[e.start: e.end] if not t.is_punct] or ["<punct>"]


def _edu_side(ctx: DocContext, edu: int, tag: str, f: dict[str, float]) -> None:
    toks = ctx.analyzed.tokens
    e = ctx.edus[edu]
    words = ctx.words(edu)
    first = toks[e.start]
    last = toks[e.end - 1]
    head = toks[ctx.heads[edu]]
    f[f"{tag}w1={words[0]}"] = 1.0
    f[f"{tag}w12={'_'.join(words[:2])}"] = 1.0
    f[f"{tag}wl={words[-1]}"] = 1.0
    f[f"{tag}p1={first.tag}"] = 1.0
    f[f"{tag}pl={last.text if last.is_punct else last.tag}"] = 1.0
    f[f"{tag}hdep={head.dep}"] = 1.0
    f[f"{tag}hpos={head.pos}"] = 1.0
    f[f"{tag}hdeppos={head.dep}|{head.tag}"] = 1.0
    f[f"{tag}hlem={head.lemma}"] = 0.5
    for w in words[:3]:
        if w in DISCOURSE_MARKERS:
            f[f"{tag}mk={w}"] = 1.0
    if any(t.tag == "MD" for t in toks[e.start: e.end]):
        f[f"{tag}modal"] = 1.0
    if any(t.dep == "neg" for t in toks[e.start: e.end]):
        f[f"{tag}neg"] = 1.0
    verbs = [t for t in toks[e.start: e.end] if t.pos in ("VERB", "AUX")]
    f[f"{tag}hasverb={bool(verbs)}"] = 1.0
    if verbs:
        f[f"{tag}vtag={verbs[0].tag}"] = 1.0
    if last.text == "?":
        f[f"{tag}question"] = 1.0
    f[f"{tag}len={_bucket(e.end - e.start, (2, 4, 7, 11, 16, 25))}"] = 1.0


def _edge_edu_features(ctx: DocContext, left: Span, right: Span) -> dict[str, float]:
    """Return the features of the EDUs at the edges of the two spans.

    The edge EDUs carry most cues; the first EDU of each span approximates its nucleus.
    """
    f: dict[str, float] = {}
    _edu_side(ctx, left[1], "Le:", f)
    _edu_side(ctx, right[0], "Rs:", f)
    if left[0] != left[1]:
        _edu_side(ctx, left[0], "Ls:", f)
    if right[0] != right[1]:
        _edu_side(ctx, right[1], "Re:", f)
    return f


def _size_features(left: Span, right: Span) -> dict[str, float]:
    """Return the sizes of the two spans, in EDUs."""
    ln = left[1] - left[0] + 1
    rn = right[1] - right[0] + 1
    return {
        f"lsize={_bucket(ln)}": 1.0,
        f"rsize={_bucket(rn)}": 1.0,
        f"sizes={_bucket(ln, (1, 2, 4, 8))}|{_bucket(rn, (1, 2, 4, 8))}": 1.0,
    }


def _sentence_and_position_features(ctx: DocContext, left: Span, right: Span) -> dict[str, float]:
    """Return how the spans sit in sentences and in the document."""
    n_edus = len(ctx.edus)
    ls = ctx.edus[left[0]].sentence
    le = ctx.edus[left[1]].sentence
    rs = ctx.edus[right[0]].sentence
    re_ = ctx.edus[right[1]].sentence
    return {
        f"lsents={_bucket(le - ls + 1, (1, 2, 3, 5, 8))}": 1.0,
        f"rsents={_bucket(re_ - rs + 1, (1, 2, 3, 5, 8))}": 1.0,
        f"samesent={le == rs}": 1.0,
        f"lfullsent={left[0] == 0 or ctx.edus[left[0] - 1].sentence != ls}": 1.0,
        f"rfullsent={right[1] == n_edus - 1 or ctx.edus[right[1] + 1].sentence != re_}": 1.0,
        f"atstart={left[0] == 0}": 1.0,
        f"atend={right[1] == n_edus - 1}": 1.0,
        f"pos={_bucket(int(10 * left[0] / max(n_edus, 1)), (0, 1, 2, 4, 7, 9))}": 1.0,
    }


@dataclass(frozen=True)
class Attachment:
    """Which EDUs of one span have their syntactic head governed by a token of the other span."""

    r_into_l: list[int]
    l_into_r: list[int]

    @classmethod
    def between(cls, ctx: DocContext, left: Span, right: Span) -> Attachment:
        """Return the attachments between the adjacent spans ``left`` and ``right`` (SPADE/HILDA's dominance sets)."""
        toks = ctx.analyzed.tokens
        lstart, lend = ctx.edus[left[0]].start, ctx.edus[left[1]].end
        rstart, rend = ctx.edus[right[0]].start, ctx.edus[right[1]].end
        return cls(r_into_l=[k for k in range(right[0], right[1] + 1) if lstart <= toks[ctx.heads[k]].head < lend],
                   l_into_r=[k for k in range(left[0], left[1] + 1) if rstart <= toks[ctx.heads[k]].head < rend])

    @property
    def direction(self) -> str:
        """Return ``"L->R"``, ``"R->L"`` or ``"-"`` (no attachment); left-into-right wins when both exist."""
        return "L->R" if self.l_into_r else "R->L" if self.r_into_l else "-"


def _attachment_features(ctx: DocContext, attach: Attachment) -> dict[str, float]:
    """Return the attachment features, conjoined with the attaching EDU's first word and the governing lemma.

    A linear model cannot form "advcl + if" or "ccomp under say" from the separate features.
    """
    toks = ctx.analyzed.tokens
    f: dict[str, float] = {}
    for name, attaching in (("R->L", attach.r_into_l), ("L->R", attach.l_into_r)):
        if not attaching:
            continue
        k = attaching[0]
        t = toks[ctx.heads[k]]
        gov = toks[t.head]
        w1 = ctx.words(k)[0]
        f[name] = 1.0
        f[f"{name}:{t.dep}"] = 1.0
        f[f"{name}:{t.dep}|{gov.pos}"] = 1.0
        f[f"{name}:{t.dep}|w1={w1}"] = 1.0
        f[f"{name}:{t.dep}|gov={gov.lemma}"] = 1.0
        f[f"{name}:{t.dep}|tag={t.tag}"] = 1.0
    if not attach.r_into_l and not attach.l_into_r:
        f["noattach"] = 1.0
    return f


def _content_lemmas(ctx: DocContext, span: Span) -> set[str]:
    """Return the lemmas of the nouns, proper nouns, verbs and adjectives of EDU span ``span``."""
    toks = ctx.analyzed.tokens
    start, end = ctx.edus[span[0]].start, ctx.edus[span[1]].end
    return {t.lemma for t in toks[start:end] if t.pos in ("NOUN", "PROPN", "VERB", "ADJ")}


def _cue_features(ctx: DocContext, left: Span, right: Span, attach: Attachment, *, level: str) -> dict[str, float]:
    """Return cue conjunctions across the join and the spans' lexical overlap."""
    toks = ctx.analyzed.tokens
    rw = ctx.words(right[0])[0]
    lend_tok = toks[ctx.edus[left[1]].end - 1]
    # The right span's opening word with the left span's closing punctuation.
    f = {
        f"Rw1|Lpunct={rw}|{lend_tok.text if lend_tok.is_punct else '-'}": 1.0,
        f"Rhdep|Lhdep={toks[ctx.heads[right[0]]].dep}|{toks[ctx.heads[left[1]]].dep}": 1.0,
    }
    # Lexical overlap hints at Elaboration/Restatement across sentences.
    overlap = len(_content_lemmas(ctx, left) & _content_lemmas(ctx, right))
    f[f"overlap={_bucket(overlap, (0, 1, 2, 4))}"] = 1.0
    f[f"Lw1|attach={ctx.words(left[0])[0]}|{attach.direction}"] = 1.0
    f[f"Rw1|attach={rw}|{attach.direction}"] = 1.0
    if level == "inter":
        f[f"Rw1inter={rw}"] = 1.0
    return f


def pair_features(ctx: DocContext, left: Span, right: Span, *, level: str) -> dict[str, float]:
    """Return the features of joining the adjacent EDU spans ``left`` and ``right`` (inclusive EDU indices).

    ``level`` is ``"intra"`` (inside one sentence) or ``"inter"`` (across sentences).
    """
    attach = Attachment.between(ctx, left, right)
    # The order of the steps fixes the dict order; the shipped model was fitted on this order.
    f: dict[str, float] = {"bias": 1.0}
    f.update(_edge_edu_features(ctx, left, right))
    f.update(_size_features(left, right))
    f.update(_sentence_and_position_features(ctx, left, right))
    f.update(_attachment_features(ctx, attach))
    f.update(_cue_features(ctx, left, right, attach, level=level))
    return f


def edus_to_tree_edus(analyzed: AnalyzedText, views: Sequence[EduView]) -> list[EDU]:
    """Return ``EDU`` objects (text, character span, sentence number) for token-range ``views``.

    ``lemmas`` and ``entities`` are left empty (``parsers.edu_content.enrich_edus`` fills them).
    """
    toks = analyzed.tokens
    out = []
    for k, v in enumerate(views):
        words = [t for t in toks[v.start: v.end] if not t.text.isspace()] or list(toks[v.start: v.end])
        start = words[0].idx
        end = words[-1].end
        out.append(EDU(index=k, text=analyzed.text[start:end], start=start, end=end, sentence=v.sentence))
    return out
