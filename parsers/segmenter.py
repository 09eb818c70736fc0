"""EDU segmentation from a dependency parse, following GUM's segmentation guidelines.

Every sentence is cut at the edges of the clauses it embeds: adverbial clauses
(``advcl``: "because ...", "if ...", "to fix it"), relative and participial
clauses (``relcl``, ``acl``), coordinated clauses and verb phrases (``conj`` on a
verb), ``parataxis``, and complement clauses (``ccomp``) of attribution verbs
("he said | that ..."). A coordinating conjunction ("but", "and") goes with the
clause it introduces; commas go with the unit they close.

The output is a list of ``Segment`` token ranges; ``rule_parser`` turns them into EDUs.
"""

from __future__ import annotations

from dataclasses import dataclass

from parsers.nlp_base import AnalyzedText

#: Dependency labels whose (verbal) dependents start a new EDU.
CLAUSE_DEPS: frozenset[str] = frozenset({"advcl", "relcl", "acl", "conj", "parataxis", "ccomp", "dep"})
#: Prepositions that open a clause when their object is a gerund ("after assuming control, ...").
CLAUSAL_PREPOSITIONS: frozenset[str] = frozenset({
    "after", "before", "by", "without", "while", "since", "despite", "upon", "instead", "besides",
    "through", "when", "until",
})
#: Lemmas of attribution verbs whose complement clause (``ccomp``) is a separate EDU.
ATTRIBUTION_VERBS: frozenset[str] = frozenset({
    "say", "tell", "think", "believe", "know", "report", "claim", "argue", "suggest", "show", "find", "note",
    "explain", "add", "state", "feel", "mean", "hope", "expect", "guess", "realize", "realise", "assume",
    "suppose", "announce", "write", "read", "hear", "see", "learn", "notice", "indicate", "reveal",
    "confirm", "deny", "insist", "mention", "predict", "estimate", "conclude", "agree", "ask", "wonder",
    "doubt", "understand", "remember", "recall", "admit", "warn", "promise", "decide", "discover",
    "determine", "demonstrate", "prove", "imply", "acknowledge", "emphasize", "point", "answer", "reply",
})
_VERBAL = frozenset({"VERB", "AUX"})
#: Verbs whose "to"-infinitive is part of the same predicate ("want to go", "try to fix").
CONTROL_VERBS: frozenset[str] = frozenset({
    "want", "try", "need", "begin", "start", "seem", "like", "love", "hate", "have", "go", "able", "continue",
    "attempt", "fail", "manage", "plan", "decide", "hope", "expect", "intend", "prefer", "tend", "appear",
    "stop", "keep", "help", "let", "make", "get", "use", "come", "refuse", "agree", "promise", "learn", "seek",
})
_OPEN = {"(": ")", "[": "]"}
_SUBJ = frozenset({"nsubj", "nsubjpass", "csubj", "expl"})


@dataclass(frozen=True)
class Segment:
    """A candidate EDU: tokens ``[start, end)``, its sentence, head token and that head's dependency label.

    ``head_dep`` is the label of the clause that opened the segment (``"ROOT"`` for a
    sentence's main clause, ``"frag"`` for the rest of a clause interrupted by an embedded one).
    """

    start: int
    end: int
    sent: int
    head: int
    head_dep: str


@dataclass(frozen=True)
class SegmenterConfig:
    """Which clauses the segmenter cuts at."""

    clause_deps: frozenset[str] = CLAUSE_DEPS
    attribution_verbs: frozenset[str] = ATTRIBUTION_VERBS
    min_tokens: int = 2  # non-punctuation tokens an embedded clause needs to become its own EDU
    ccomp_that: bool = True  # any complement clause opened by "that"/"whether"/"if"
    xcomp_to: bool = False  # "to"-infinitive complements of verbs that are not control verbs
    prep_gerund: bool = True  # any preposition + gerund ("of viewing ...")
    brackets: bool = True  # bracketed insertions ("( see Smith 2014 )") are their own EDUs
    quotes: bool = True  # quoted speech is apart from its speech verb ('he said , | " This ...')


def _subtree_edges(heads: list[int], start: int, end: int) -> tuple[list[int], list[int]]:
    """Return the leftmost/rightmost token index of each token's subtree within ``[start, end)``."""
    left = list(range(start, end))
    right = list(range(start, end))
    kids: list[list[int]] = [[] for _ in range(start, end)]
    roots = []
    for i in range(start, end):
        h = heads[i]
        if h != i and start <= h < end:
            kids[h - start].append(i)
        else:
            roots.append(i)
    # Breadth-first from the roots, then children before parents: linear, no recursion.
    order = list(roots)
    for i in order:
        order.extend(kids[i - start])
    for i in reversed(order):
        h = heads[i]
        if h != i and start <= h < end:
            left[h - start] = min(left[h - start], left[i - start])
            right[h - start] = max(right[h - start], right[i - start])
    return left, right


def _is_clause(doc: AnalyzedText, i: int, kids: list[list[int]], cfg: SegmenterConfig) -> bool:
    tok = doc.tokens[i]
    if tok.dep == "prep" and (tok.lemma in CLAUSAL_PREPOSITIONS or cfg.prep_gerund):
        # The gerund needs dependents of its own: "by replacing the fuse", not "during walking".
        return any(doc.tokens[k].dep == "pcomp" and doc.tokens[k].pos == "VERB" and kids[k]
                   and (tok.lemma in CLAUSAL_PREPOSITIONS or doc.tokens[k].tag == "VBG") for k in kids[i])
    if tok.dep == "xcomp" and cfg.xcomp_to and tok.pos == "VERB":
        return (doc.tokens[tok.head].lemma not in CONTROL_VERBS
                and any(doc.tokens[k].dep == "aux" and doc.tokens[k].text.lower() == "to" for k in kids[i]))
    if tok.dep not in cfg.clause_deps:
        return False
    has_subj = any(doc.tokens[k].dep in _SUBJ for k in kids[i])
    if tok.pos not in _VERBAL and not (has_subj and any(doc.tokens[k].dep == "cop" for k in kids[i])):
        return False
    if tok.dep == "ccomp":
        head = doc.tokens[tok.head]
        # Not "the point is | that ..." nor extraposed "it has been proposed | that ...".
        if head.pos != "VERB" or any(doc.tokens[k].dep in ("expl", "auxpass", "nsubjpass") for k in kids[head.i]):
            return False
        if cfg.ccomp_that and any(doc.tokens[k].dep == "mark" and doc.tokens[k].text.lower() in ("that", "whether", "if")
                                  for k in kids[i]):
            return True
        return doc.tokens[tok.head].lemma in cfg.attribution_verbs
    if tok.dep in ("conj", "dep"):
        # A coordinated verb whose head is not verbal is a coordinated noun-ish thing.
        return doc.tokens[tok.head].pos in _VERBAL or has_subj
    return True


def segment(doc: AnalyzedText, config: SegmenterConfig | None = None) -> list[Segment]:
    """Return the EDU segments of ``doc`` in text order (they cover every token exactly once)."""
    cfg = config or SegmenterConfig()
    toks = doc.tokens
    if not toks:
        return []
    heads = [t.head for t in toks]
    kids: list[list[int]] = [[] for _ in toks]
    for t in toks:
        if t.head != t.i:
            kids[t.head].append(t.i)
    segments: list[Segment] = []
    for s_i, (s, e) in enumerate(doc.sentences):
        if s >= e:
            continue
        left, right = _subtree_edges(heads, s, e)
        cuts: dict[int, tuple[int, str]] = {}  # boundary token -> (clause head, dep) that opens there
        closes: set[int] = set()
        for i in range(s, e):
            if not _is_clause(doc, i, kids, cfg):
                continue
            lo, hi = left[i - s], right[i - s]
            content = sum(1 for k in range(lo, hi + 1) if not toks[k].is_punct)
            if content < cfg.min_tokens:
                continue
            # The conjunction before a coordinated clause belongs to it ("but I still could not ...").
            while lo > s and toks[lo - 1].dep in ("cc", "preconj") and not toks[lo - 1].is_punct:
                lo -= 1
            # Trailing commas close the embedded clause.
            hi += 1
            while hi < e and toks[hi].is_punct and toks[hi].text in (",", ";", ":", "-", "--", "—", ")"):
                hi += 1
            # Nested clauses can open at the same token: keep the outermost one.
            if lo not in cuts or right[cuts[lo][0] - s] < right[i - s]:
                cuts[lo] = (i, "conj" if toks[i].dep == "dep" else toks[i].dep)
            if hi < e:
                closes.add(hi)
        if cfg.brackets:
            _bracket_cuts(doc, s, e, cuts, closes)
        if cfg.quotes:
            _quote_cuts(doc, s, e, cuts, closes, cfg)
        bounds = sorted({s, *cuts, *closes})
        pieces = list(zip(bounds, bounds[1:] + [e]))
        # Units made only of punctuation join the previous unit.
        merged: list[tuple[int, int]] = []
        for lo, hi in pieces:
            if merged and all(toks[k].is_punct for k in range(lo, hi)):
                merged[-1] = (merged[-1][0], hi)
            else:
                merged.append((lo, hi))
        if len(merged) > 1 and all(toks[k].is_punct for k in range(*merged[0])):
            merged[1] = (merged[0][0], merged[1][1])
            merged.pop(0)
        for lo, hi in merged:
            head, dep = _segment_head(doc, lo, hi, cuts, heads)
            segments.append(Segment(start=lo, end=hi, sent=s_i, head=head, head_dep=dep))
    return segments


def _bracket_cuts(doc: AnalyzedText, s: int, e: int, cuts: dict[int, tuple[int, str]], closes: set[int]) -> None:
    toks = doc.tokens
    # A citation that spaCy put at the start of the next sentence ("[ 8 ] In 2004 , ...") is its own unit.
    for i in range(s, e):
        close = _OPEN.get(toks[i].text)
        if not close:
            continue
        for j in range(i + 1, e):
            if toks[j].text == close:
                if j - i > 1:
                    cuts.setdefault(i, (i, "brackets"))
                    end = j + 1
                    while end < e and toks[end].is_punct and toks[end].text in (",", ";", ":"):
                        end += 1
                    if end < e:
                        closes.add(end)
                break


_QUOTES = frozenset({'"', "“", "”", "``", "''"})


def _quote_cuts(doc: AnalyzedText, s: int, e: int, cuts: dict[int, tuple[int, str]], closes: set[int],
                cfg: SegmenterConfig) -> None:
    toks = doc.tokens
    for i in range(s + 1, e - 1):
        # Speech introduced by "said ," or "were :" starts at its opening quote.
        if toks[i].text in _QUOTES and toks[i - 1].text in (",", ":"):
            if i + 1 in cuts:  # the quoted clause is cut already: its opening quote goes with it
                cuts[i] = cuts.pop(i + 1)
            else:  # a plain boundary: the unit's head is then its highest token
                closes.discard(i + 1)
                closes.add(i)
    if toks[s].text in _QUOTES:
        # '" Not yet , " I say .' : the speech verb after a quoted sentence is a unit of its own.
        for j in range(s + 1, e - 1):
            if toks[j].text in _QUOTES:
                tail = [t for t in toks[j + 1: e] if not t.is_punct]
                if 0 < len(tail) <= 6 and any(t.lemma in cfg.attribution_verbs for t in tail):
                    closes.add(j + 1)
                break


def _segment_head(doc: AnalyzedText, lo: int, hi: int, cuts: dict[int, tuple[int, str]],
                  heads: list[int]) -> tuple[int, str]:
    if lo in cuts and lo <= cuts[lo][0] < hi:
        return cuts[lo]
    # The highest token of the unit: its head lies outside the unit (or it is the root).
    for i in range(lo, hi):
        h = heads[i]
        if h == i:
            return i, "ROOT"
    tops = [i for i in range(lo, hi) if not doc.tokens[i].is_punct and not lo <= heads[i] < hi]
    for i in tops:
        if doc.tokens[i].pos in _VERBAL:
            # An unlabelled (``dep``) verb next to another is a coordinated clause spaCy missed.
            return i, "conj" if doc.tokens[i].dep == "dep" else doc.tokens[i].dep
    return (tops[0] if tops else lo), "frag"
