"""Clarification (paper section 3.5): let the user pick among close, agreeing candidates.

Each option is labelled by one *readable clause* of its answer: the EDU of the answer's discourse
tree - a nucleus first - whose terms the other offered answers do not contain, shortened only at a
clause boundary (an EDU's end, ``;``, or a comma before a clause opener), never mid-phrase. The user chooses between "Test the fuel pressure at the rail" and "Test the crankshaft
position sensor", never between keyword lists, relation labels or ids. The last option is always
"none of these".
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from dtdialog.dialogue.replies import DEFAULT_REPLIES, Replies
from index.vocabulary import FUNCTION_WORDS
from parsers.tree import EDU, SATELLITE, DiscourseTree, Node

NONE_LABEL = "none of these"


class TermSource(Protocol):
    """Where option and reply terms come from: an ``EntityNormalizer``, or the ``AnswerSelector`` (its vocabulary)."""

    def terms_of_text(self, text: str) -> frozenset[str]: ...

    def terms_of_edus(self, edus: Sequence[EDU]) -> frozenset[str]: ...


@dataclass(frozen=True)
class ClarifyOption:
    """One numbered choice. ``answer_id`` is empty for the "none of these" option."""

    number: int
    label: str
    answer_id: str

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "label": self.label, "answer_id": self.answer_id}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClarifyOption:
        return cls(number=int(data["number"]), label=str(data["label"]), answer_id=str(data.get("answer_id", "")))


@dataclass
class PendingChoice:
    """The options on offer plus the terms each was built from (for matching free-text replies)."""

    options: list[ClarifyOption]
    terms: dict[str, list[str]] = field(default_factory=dict)
    reprompts: int = 0
    #: terms of the question (and the step's replies): a reply repeating them picks no option
    ignore_terms: list[str] = field(default_factory=list)
    #: no option fitted and the bot asked for one missing detail (no options then): if the detail leads
    #: nowhere either, the next step is the hand-off, not another guess
    asked_detail: bool = False
    #: the first options of this run of "none of these" (ids): the bar every later alternative must reach,
    #: so repeated "none of these" cannot lower it round by round (empty: these options are the first)
    yardstick: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"options": [o.to_dict() for o in self.options], "terms": self.terms, "reprompts": self.reprompts,
                "ignore_terms": self.ignore_terms, "asked_detail": self.asked_detail, "yardstick": self.yardstick}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PendingChoice:
        return cls(options=[ClarifyOption.from_dict(o) for o in data.get("options", [])],
                   terms={k: list(v) for k, v in (data.get("terms") or {}).items()},
                   reprompts=int(data.get("reprompts", 0)),
                   ignore_terms=[str(t) for t in data.get("ignore_terms") or ()],
                   asked_detail=bool(data.get("asked_detail", False)),
                   yardstick=[str(i) for i in data.get("yardstick") or ()])


#: A label is one clause: at most this many characters when a clause boundary allows (a longer clause stays whole).
MAX_LABEL_CHARS = 72
#: A clause whose label stays longer than ``MAX_LABEL_CHARS`` (no boundary to cut at) has its worth multiplied by this.
LONG_LABEL_FACTOR = 0.1
#: A clause shorter than this many words ("Is the fluid") is read together with the next EDU of its sentence.
MIN_CLAUSE_WORDS = 4
#: Each satellite edge between the root and an EDU divides its worth by (1 + this): the nucleus carries the
#: answer's point ("test the fuel pressure"), a satellite its circumstance ("if the engine cranks").
SATELLITE_DISCOUNT = 1.0
#: Coordinators that join a clause to the one before it: a label starting with them reads as a fragment.
_JOINERS = frozenset({"and", "but", "or", "so", "then", "also", "yet", "plus"})
#: Words that open a new clause after a comma ("..., so one bad signal disables both"): a label may end before them.
_CLAUSE_OPENERS = frozenset({"so", "but", "because", "which", "while", "since", "although", "though", "whereas",
                             "when", "where", "if", "unless", "then", "otherwise", "as", "yet"})
#: The first words of a subordinator that a segmenter may cut off from its last ("as long | as", "rather than | ...").
_CUT_SUBORDINATORS = frozenset({("as", "long"), ("as", "soon"), ("so", "long"), ("as", "far"), ("rather", "than"),
                                ("in", "case"), ("so", "that"), ("even", "though"), ("even", "if")})
#: Words that open a subordinate clause: such a clause alone ("Since a corroded ground limits current") names no fix.
_SUBORDINATORS = frozenset({"since", "because", "although", "though", "while", "whereas", "if", "when", "unless",
                            "once", "after", "before"})
#: Words that open a sentence with a comma, a reply ("Yes, fluid on the wheel") or a link to the sentence before
#: ("Still, new tires are a good time ..."): no part of what the option says.
_INTERJECTIONS = frozenset({"yes,", "no,", "well,", "ok,", "okay,", "right,", "sure,", "good,", "great,", "fine,",
                            "still,", "however,", "also,", "otherwise,", "besides,", "instead,", "again,"})
#: A clause that continues a sentence on a function word ("are the high-pressure hose", "of starting fluid")
#: is a fragment, not a name for a fix; its worth is multiplied by this.
CONTINUATION_FACTOR = 0.6
#: A clause that starts inside the phrase of the EDU before it (``mid_phrase``: "closed or the ECM is running the fan"
#: after "the fan relay is stuck"), or whose phrase the EDU after it goes on with ("The usual causes are a cooling
#: fan" | "that isn't running"), is a cut, not a clause: its worth is multiplied by this.
MID_PHRASE_FACTOR = 0.25
#: A subordinate clause alone ("Since a corroded ground limits current") names a circumstance, as a question back
#: names none: its worth is multiplied by this.
SUBORDINATE_FACTOR = 0.25
#: An aside names no fix: a clause in parentheses, a footnote ("¹ - The handbook explains …", "[2] see …") or a
#: forum's meta line ("Related posts: …", "Edit: …"); its worth is multiplied by this.
ASIDE_FACTOR = 0.1
_ASIDE = re.compile(r"^\s*(?:[(\[]|[\u00b9\u00b2\u00b3\u2070-\u2079*\u2020]|(?:related(?: posts?)?|edit|update|source|"
                    r"sources|see also|ps|p\.s\.)\s*:)", re.IGNORECASE)


def satellite_depths(tree: DiscourseTree) -> dict[int, int]:
    """Return, per EDU index, how many satellite edges lie between the root and the EDU (0: a nucleus of the root)."""
    depths: dict[int, int] = {}
    stack: list[tuple[Node, int]] = [(tree.root, 0)]
    while stack:
        node, depth = stack.pop()
        if node.is_leaf:
            for edu in tree.edus_of(node):
                depths[edu.index] = depth
            continue
        for child, mark in zip(node.children, node.nuclearity):
            stack.append((child, depth + (mark == SATELLITE)))
    return depths


def _clauses(edus: Sequence[EDU], depths: Mapping[int, int] | None = None) -> list[tuple[EDU, ...]]:
    """Return the label candidates of an answer: each EDU, joined with the next EDU of its sentence when short (unless
    it ends the phrase before it); an
    EDU with the EDUs after it that go on its phrase, while they fit in a label ("That uneven temperature means" +
    "many tubes are blocked", "the fan relay is stuck" + "closed"); and an EDU with the rest of its sentence when they
    fit in a label and the rest is no more central than it ("Still, new tires are a good time" reads whole only with
    its satellite "to have the alignment checked"; a condition before its nucleus is never the head; without a tree
    nothing is joined so)."""
    depth = (depths or {}).get
    out: list[tuple[EDU, ...]] = []
    for k, edu in enumerate(edus):
        span: tuple[EDU, ...] = (edu,)
        nxt = edus[k + 1] if k + 1 < len(edus) else None
        same = nxt is not None and nxt.sentence == edu.sentence
        # a short piece that ends the phrase before it ("stuck | closed") is no head for the clause after it
        if len(edu.text.split()) < MIN_CLAUSE_WORDS and same and not (k and mid_phrase(edus[k - 1], edu)):
            span = (edu, nxt)
        out.append(span)
        phrase = [edu]
        for later in edus[k + 1:]:
            if not mid_phrase(phrase[-1], later):
                break
            phrase.append(later)
        # only a phrase read to its end: cut short by the label's length it is no whole clause either
        if len(span) < len(phrase) and len(" ".join(e.text for e in phrase)) <= MAX_LABEL_CHARS:
            out.append(tuple(phrase))
        rest = [e for e in edus[k + 1:] if e.sentence == edu.sentence]
        if same and depths and len(span) == 1 and len(" ".join(e.text for e in (edu, *rest))) <= MAX_LABEL_CHARS \
                and all(depth(e.index, 0) >= depth(edu.index, 0) for e in rest):
            out.append((edu, *rest))
    return out


def mid_phrase(prev: EDU | None, edu: EDU | None) -> bool:
    """Return True when ``edu`` begins inside a phrase the EDU before it opened: same sentence, nothing ends that
    EDU (no comma, colon, dash), and ``edu`` opens on a lower-case word that starts no clause ("stuck | closed or
    the ECM", "a vacuum hose | left disconnected, a gasket"): a cut by the segmenter, not a clause of its own. A
    subordinate clause that opens its sentence ends where the main clause starts ("If the engine cranks | test the
    fuel pressure")."""
    if prev is None or edu is None or prev.sentence != edu.sentence or prev.text.rstrip().endswith(
            (",", ";", ":", "-", "\u2013", "\u2014")):
        return False
    if prev.text[:1].isupper() and _subordinate(prev.text):
        return False
    first = edu.text.split()[0] if edu.text.split() else ""
    return first[:1].islower() and first.lower().strip(",;:") not in _JOINERS | _CLAUSE_OPENERS | _SUBORDINATORS


def readable(text: str, *, max_chars: int = MAX_LABEL_CHARS, edu_ends: Sequence[int] = ()) -> str:
    """Return ``text`` as a label: leading coordinators and trailing punctuation dropped, whole clauses only.

    The words kept are the text's own, in order, so a label is always a piece of its answer. A text longer than
    ``max_chars`` is cut at its last clause boundary that fits (``clause_ends``; ``edu_ends`` are the word counts
    at which its EDUs end), else at its first one; a text with no boundary is kept whole, never cut mid-phrase.
    """
    words = text.split()
    dropped = 0
    # a segmenter may leave the comma that closed the clause before on this one (", it's worn, so replace ...")
    while words and not words[0].lstrip(",;:"):
        words, dropped = words[1:], dropped + 1
    if words:
        words[0] = words[0].lstrip(",;:")
    while len(words) > 1 and (words[0].lower().strip(",") in _JOINERS or words[0].lower() in _INTERJECTIONS):
        words, dropped = words[1:], dropped + 1
    if len(" ".join(words)) > max_chars:
        ends = clause_ends(words, [e - dropped for e in edu_ends])
        fitting = [k for k in ends if len(" ".join(words[:k])) <= max_chars]
        if fitting or ends:
            words = words[:max(fitting) if fitting else min(ends)]
    # a coordinator left after the last comma ("Test the main relay and the ECM fuse, then") opens nothing here
    if len(words) > 2 and words[-2].endswith(",") and words[-1].lower() in _JOINERS | _CLAUSE_OPENERS:
        words = words[:-1]
    # the segmenter cut a subordinator of two words before its last ("works, as long | as air did not get in")
    if len(words) > 3 and words[-3].endswith(",") and (words[-2].lower(), words[-1].lower()) in _CUT_SUBORDINATORS:
        words = words[:-2]
    label = " ".join(words).rstrip(",;:.?! -")
    return label[:1].upper() + label[1:]


def clause_ends(words: Sequence[str], edu_ends: Iterable[int] = ()) -> list[int]:
    """Return the word counts at which a whole clause of ``words`` ends, short of the last word, sorted.

    A clause ends at an EDU's end, after ``;``, ``:`` or a sentence's end, and at a comma before a word that opens
    a clause ("..., so one bad signal"); a comma in a list ("a jack, jack stands") is no boundary. The clause kept
    has at least ``MIN_CLAUSE_WORDS`` words (a shorter head is the fragment the next EDU completes).
    """
    ends = {k for k in edu_ends if MIN_CLAUSE_WORDS <= k < len(words)}
    for k in range(MIN_CLAUSE_WORDS, len(words)):
        last, nxt = words[k - 1], words[k].lower()
        if last.endswith((";", ":", ".", "?", "!")) or nxt in ("-", "--", "\u2013", "\u2014") or (
                last.endswith(",") and nxt in _CLAUSE_OPENERS):
            ends.add(k)
    return sorted(ends)


def _fragment(text: str) -> bool:
    """Return True when ``text`` continues a sentence on a function word (after any coordinators)."""
    words = [w.lower().strip(",;:") for w in text.split()]
    while len(words) > 1 and words[0] in _JOINERS:
        words = words[1:]
    return text[:1].islower() and bool(words) and words[0] in FUNCTION_WORDS


def _subordinate(text: str) -> bool:
    """Return True for a clause opened by a subordinator with no main clause after it ("Since a corroded ground
    limits current"): it names a circumstance, not a fix."""
    words = [w.lower().strip(",;:") for w in text.split()]
    return bool(words) and words[0] in _SUBORDINATORS and not re.search(r"[,;:]\s+\S", text.strip().rstrip(",;:."))


def _clause_worth(terms: frozenset[str], *, others: set[str], ignored: frozenset[str], depth: int,
                  question_mark: bool, continues: bool) -> float:
    """Return how well a clause with ``terms`` tells its option apart: its distinctive terms, nuclei first.

    A term the other options lack counts 1 (half when the question said it: the user's words describe the
    problem, not the fix); shared terms count nothing. A question back to the user ("Do you have a code?")
    is a poor name for a fix, so it counts a quarter; a clause continuing a sentence counts ``CONTINUATION_FACTOR``.
    """
    value = sum(0.5 if t in ignored else 1.0 for t in terms - others)
    value /= 1.0 + SATELLITE_DISCOUNT * depth
    return value * (0.25 if question_mark else 1.0) * (CONTINUATION_FACTOR if continues else 1.0)


def option_label(edus: Sequence[EDU], *, normalizer: TermSource, others: set[str], ignored: frozenset[str],
                 depths: Mapping[int, int] | None = None) -> str:
    """Return the clause of an answer that best tells it apart from ``others`` (the other options' terms).

    The clause is an EDU of the answer's DT (with the next one when it is a fragment), chosen by
    ``_clause_worth``; ties go to the earlier clause, where an answer states its point. ``depths`` are the
    EDUs' satellite depths (``satellite_depths``); without a tree every EDU counts as a nucleus.
    """
    best: tuple[tuple[bool, float], int, str] | None = None
    before = {b.index: a for a, b in zip(edus, edus[1:])}
    after = {a.index: b for a, b in zip(edus, edus[1:])}
    # a question back to the customer is one whatever EDU of its sentence holds the "?" ("What does your battery
    # read in the morning | before you crank?")
    asks = {e.sentence for e in edus if e.text.rstrip().endswith("?")}
    for order, span in enumerate(_clauses(edus, depths)):
        text = " ".join(e.text for e in span)
        label = readable(text, edu_ends=_edu_ends(span))
        depth = min((depths or {}).get(e.index, 0) for e in span)
        worth = _clause_worth(normalizer.terms_of_edus(span), others=others, ignored=ignored, depth=depth,
                              question_mark=span[-1].sentence in asks, continues=_fragment(text))
        # a cut at either end: it starts inside the EDU before's phrase, or the EDU after it goes on with its phrase
        # ("The usual causes are a cooling fan" | "that isn't running with the AC on")
        cut = mid_phrase(before.get(span[0].index), span[0]) or mid_phrase(span[-1], after.get(span[-1].index))
        worth *= MID_PHRASE_FACTOR if cut else 1.0
        worth *= LONG_LABEL_FACTOR if len(label) > MAX_LABEL_CHARS else 1.0
        worth *= ASIDE_FACTOR if _ASIDE.match(text) else 1.0
        subordinate = _subordinate(text)
        worth *= SUBORDINATE_FACTOR if subordinate else 1.0
        # a circumstance alone ("Since a corroded ground limits current") goes after every main clause that tells the
        # option apart at all
        rank = (worth > 0 and not subordinate, worth)
        if label and (best is None or rank > best[0]):
            best = (rank, order, label)
    return best[2] if best else ""


def _edu_ends(span: Sequence[EDU]) -> list[int]:
    """Return the word counts of ``span``'s joined text at which each of its EDUs ends."""
    ends, count = [], 0
    for edu in span:
        count += len(edu.text.split())
        ends.append(count)
    return ends


def build_options(candidates: Sequence[tuple[str, Sequence[EDU]] | tuple[str, Sequence[EDU], DiscourseTree]], *,
                  normalizer: TermSource, max_options: int = 3, ignore_terms: Iterable[str] = ()) -> PendingChoice:
    """Return numbered options for ``candidates`` ((answer id, EDUs[, DT]) best first) plus "none of these".

    Each label is one readable clause of its answer (``option_label``): the nucleus EDU whose terms the
    other options lack, never a list of keywords. ``ignore_terms`` (the question's terms) count half
    when labels are chosen and never distinguish an option when a reply is matched.
    """
    chosen = list(candidates)[:max_options]
    ignored = frozenset(ignore_terms)
    term_sets = [normalizer.terms_of_edus(c[1]) for c in chosen]
    options: list[ClarifyOption] = []
    terms: dict[str, list[str]] = {}
    labels: set[str] = set()
    for k, cand in enumerate(chosen):
        answer_id, edus = cand[0], cand[1]
        depths = satellite_depths(cand[2]) if len(cand) > 2 else None
        others: set[str] = set().union(*(t for j, t in enumerate(term_sets) if j != k)) if len(chosen) > 1 else set()
        label = option_label(edus, normalizer=normalizer, others=others, ignored=ignored, depths=depths)
        label = label or answer_id.split("#")[0].replace("_", " ")
        if label in labels:  # two options must never read the same
            label = f"{label} ({k + 1})"
        labels.add(label)
        options.append(ClarifyOption(number=k + 1, label=label, answer_id=answer_id))
        terms[answer_id] = sorted(term_sets[k])
    options.append(ClarifyOption(number=len(options) + 1, label=NONE_LABEL, answer_id=""))
    return PendingChoice(options=options, terms=terms, ignore_terms=sorted(ignored))


def distinctive_terms(pending: PendingChoice, *, normalizer: TermSource) -> dict[str, frozenset[str]]:
    """Return, per offered answer id, the terms only that option has (label or answer text).

    Terms another option shares, and the question's terms (``pending.ignore_terms``), cannot tell
    the options apart, so a reply made of them ("I can't remove the *engine*") picks nothing.
    """
    own = {o.answer_id: normalizer.terms_of_text(o.label) | frozenset(pending.terms.get(o.answer_id, ()))
           for o in pending.options if o.answer_id}
    ignored = frozenset(pending.ignore_terms)
    out: dict[str, frozenset[str]] = {}
    for answer_id, terms in own.items():
        others: set[str] = set().union(*(t for k, t in own.items() if k != answer_id))
        out[answer_id] = frozenset(terms - others - ignored)
    return out


def match_reply(text: str, pending: PendingChoice, *, normalizer: TermSource,
                number: int | None = None) -> ClarifyOption | None:
    """Return the option a reply picks (by number, "none of these", or phrase), or None when it matches none.

    A phrase picks an option only through *distinctive* terms (``distinctive_terms``): each one in
    the option's label counts 1, in the rest of its answer text 1/2. The option with the highest
    count wins; no distinctive term, or a tie, matches nothing (the caller lists the options again). The customer
    sees the labels only, so a winner none of whose label terms the reply names is no pick either ("is it safe to
    keep driving?" named "drive" from one answer's text).
    """
    if number is not None:
        return next((o for o in pending.options if o.number == number), None)
    lowered = text.lower().strip()
    if difflib.SequenceMatcher(None, lowered, NONE_LABEL).ratio() > 0.85:
        return pending.options[-1]
    reply_terms = normalizer.terms_of_text(text)
    if not reply_terms:
        return None
    distinctive = distinctive_terms(pending, normalizer=normalizer)
    scored: list[tuple[float, int, ClarifyOption]] = []
    for option in pending.options[:-1]:
        hits = reply_terms & distinctive.get(option.answer_id, frozenset())
        label_hits = hits & normalizer.terms_of_text(option.label)
        scored.append((len(label_hits) + 0.5 * len(hits - label_hits), len(label_hits), option))
    scored.sort(key=lambda s: s[0], reverse=True)
    if not scored or scored[0][0] <= 0 or not scored[0][1]:
        return None
    if len(scored) > 1 and scored[1][0] == scored[0][0]:
        return None
    return scored[0][2]


def prompt_text(pending: PendingChoice, *, again: bool = False, replies: Replies = DEFAULT_REPLIES) -> str:
    """Return the question that lists the options (``again`` for a reply that matched none)."""
    return replies.options_text(pending.options, again=again)
