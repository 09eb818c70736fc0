"""Dialogue position of an answer: where it sat in its source dialogue and whether it can stand alone.

``role`` is known from the source: ``opening`` when the answer replied to the dialogue's first question (no
answer turn before it), else ``followup``. ``stands_alone`` is decided from the answer itself, so it also holds
for an index whose answers have no dialogue around them: an answer cannot stand alone when its opening points
back to earlier turns ("Then focus on the range switch", "That confirms ...", "Good, both ...", "If that did not
work ..."). ``detect_position`` reads the answer's first EDU and its place in the discourse tree:

1. a back-pointing formula from ``resources/backpointing_openers.json`` ("in that case", "as I said", "good");
2. a discourse cue that the cue lexicon (GUM) shows continuing the preceding discourse - across sentences the
   unit it opens is mostly a satellite of what came before, or the next step of a sequence ("then", "okay") -
   while the first EDU is *not* itself a satellite: a satellite's nucleus is inside the answer ("After a starter
   job, ..."), so the cue is resolved there; a nucleus' cue can only attach to an earlier turn;
3. an anaphor ("that", "this", "it") at the start followed by a verb of evaluation ("That confirms ..."); with a form
   of *be* only a distal one ("That's lower than ..."), since "This is a myth" opens first answers;
4. a first EDU that is a satellite (Condition, Background, ...) whose subject is an anaphor: "If that did not
   work, ...", "Since both read fine, ..." - the condition is about a result reported in an earlier turn (not when
   the EDU ends in a colon: "Set these test conditions:" points forward).

Old indexes without the fields get them computed on load (``position_of``), so no rebuild is needed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from index.base import AnswerDocument
from index.vocabulary import stem, words_of
from parsers.cue_lexicon import INTER_SENTENCE_MARKERS, CueLexicon
from parsers.errors import InputError
from parsers.tree import SATELLITE, DiscourseTree, Node

OPENING, FOLLOWUP = "opening", "followup"
OPENERS_PATH = Path(__file__).resolve().parent / "resources" / "backpointing_openers.json"
#: A discourse marker continues the preceding discourse when at least this share of its GUM cross-sentence joins
#: make the unit it opens a satellite of the left unit (any relation but the generic Elaboration/Attribution) or
#: the next step of a Temporal sequence; with at least ``CUE_MIN_COUNT`` joins seen. 0.6 keeps then/okay/thank/
#: right/mhm (and because/after, excluded in the data file) and leaves out so (0.36), but (below) and the anaphors, which rule 3 handles.
CUE_SHARE = 0.6
CUE_MIN_COUNT = 10
#: enough leading characters of an answer to hold its longest back-pointing formula
_PHRASE_CHARS = 80
#: How many leading words of the first EDU may hold the anaphor of rule 3 and 4 ("If that ...", "Since both ...").
ANAPHOR_WINDOW = 2
_BE = frozenset({"s", "is", "was", "are", "were", "be", "been"})
#: proximal demonstratives (stemmed): with a form of *be* they open first answers too ("This is a myth")
_PROXIMAL = frozenset({"thi", "these"})


@dataclass(frozen=True)
class Position:
    """An answer's dialogue position: its ``role`` in the source and whether it ``stands_alone`` (and why not)."""

    role: str
    stands_alone: bool
    reason: str = ""

    def to_meta(self) -> dict[str, Any]:
        return {"role": self.role, "stands_alone": self.stands_alone, "position_reason": self.reason}


@dataclass(frozen=True)
class _Cues:
    phrases: tuple[tuple[str, ...], ...]
    courtesy: tuple[tuple[str, ...], ...]
    anaphors: frozenset[str]
    evaluation_lemmas: frozenset[str]
    interjections: frozenset[str]
    continuing_markers: frozenset[str]


@lru_cache(maxsize=1)
def _cues() -> _Cues:
    try:
        data = json.loads(OPENERS_PATH.read_text(encoding="utf-8"))
        phrases = tuple(sorted({tuple(words_of(p)) for p in data["phrases"] if words_of(p)}, key=len, reverse=True))
        courtesy = tuple(tuple(words_of(p)) for p in data.get("courtesy", ()) if words_of(p))
        return _Cues(phrases=phrases, courtesy=courtesy, anaphors=frozenset(stem(w) for w in data["anaphors"]),
                     evaluation_lemmas=frozenset(stem(w) for w in data["evaluation_lemmas"]), interjections=frozenset(stem(w) for w in data["interjections"]),
                     continuing_markers=_continuing_markers(CueLexicon.from_disk()) - set(data["not_continuing"]))
    except (OSError, KeyError, TypeError, json.JSONDecodeError) as exc:
        raise InputError(f"malformed back-pointing openers file {OPENERS_PATH}: {exc}") from None


def _continuing_markers(lexicon: CueLexicon) -> frozenset[str]:
    """Return the discourse markers whose GUM cross-sentence joins mostly continue the preceding discourse."""
    out = set()
    for word in INTER_SENTENCE_MARKERS:
        dist = lexicon.features.get(f"d|R1={word}", {})
        total = sum(dist.values())
        back = sum(n for label, n in dist.items() if _continues(label))
        if total >= CUE_MIN_COUNT and back / total >= CUE_SHARE:
            out.add(word)
    return frozenset(out)


def _continues(label: str) -> bool:
    relation, _, nuclearity = label.partition("|")
    return label == "Temporal|NN" or (nuclearity == "NS" and relation not in ("Elaboration", "Attribution"))


def first_edu_place(tree: DiscourseTree) -> tuple[str | None, str]:
    """Return ``(relation, mark)`` of the lowest node joining EDU 0 as a child: ``(None, "N")`` for a one-EDU tree."""
    node: Node = tree.root
    while not node.is_leaf:
        child = node.children[0]
        if child.is_leaf:
            return node.relation, node.nuclearity[0]
        node = child
    return None, "N"


def _stems(words: list[str]) -> list[str]:
    """Return the stems of ``words`` with clitics split off and the forms of *be* as ``be`` ("that's" -> that, be).

    EDU lemmas hold content words only, so the anaphor and its verb are read from the words.
    """
    parts = [p for w in words for p in w.split("'") if p]
    return ["be" if p in _BE else stem(p) for p in parts]


def detect_position(tree: DiscourseTree, *, role: str = OPENING) -> Position:
    """Return the ``Position`` of an answer with discourse tree ``tree`` and source role ``role``."""
    cues, first = _cues(), tree.edus[0]
    words = words_of(first.text)
    if not words or _courteous(words):
        return Position(role, True)
    lemmas = _stems(words)
    relation, mark = first_edu_place(tree)
    phrase = _opening_phrase(words)
    if phrase is not None:
        return Position(role, False, f"back-pointing opener: {' '.join(phrase)}")
    if mark != SATELLITE and words[0] in cues.continuing_markers:
        return Position(role, False, f"discourse cue continuing an earlier turn: {words[0]}")
    if _anaphoric_evaluation(lemmas, cues):
        return Position(role, False, f"anaphor + evaluation: {' '.join(words[:3])}")
    # "Set these test conditions:" points forward, to what follows the colon
    if mark == SATELLITE and cues.anaphors.intersection(lemmas[1:1 + ANAPHOR_WINDOW]) \
            and not first.text.rstrip().endswith(":"):
        return Position(role, False, f"{relation} satellite about an earlier result: {' '.join(words[:3])}")
    return Position(role, True)


@lru_cache(maxsize=50_000)
def _text_opening_phrase(prefix: str) -> tuple[str, ...] | None:
    """``_opening_phrase`` of a stored answer's first characters: every turn reads the same candidates again."""
    return _opening_phrase(words_of(prefix))


def _opening_phrase(words: list[str]) -> tuple[str, ...] | None:
    """Return the back-pointing formula ``words`` open with ("in that case", "since you already"), or None."""
    if _courteous(words):
        return None
    return next((p for p in _cues().phrases if tuple(words[:len(p)]) == p), None)


def _courteous(words: list[str]) -> bool:
    """Return True for a greeting or praise of the question ("Good question!"): first replies open with them."""
    return any(tuple(words[:len(c)]) == c for c in _cues().courtesy)


def _anaphoric_evaluation(lemmas: list[str], cues: _Cues) -> bool:
    """Return True for an anaphor directly followed by a verb of evaluation ("That confirms", "This rules out").

    After a reply word the anaphor may be the question's own subject ("Yes, that's limp mode" answers "Is that
    limp mode?"), so there *be* does not count; the other verbs still evaluate a reported result.
    """
    skip = 1 if lemmas[0] in cues.interjections and len(lemmas) > 2 else 0
    if lemmas[skip] not in cues.anaphors or len(lemmas) <= skip + 1:
        return False
    verb = lemmas[skip + 1]
    if verb == "be" and (skip or lemmas[skip] in _PROXIMAL):
        return False  # "This is a myth" presents what follows or the question's own claim, not an earlier turn's result
    return verb in cues.evaluation_lemmas


def source_role(position: int, first_answer_position: int) -> str:
    """Return ``opening`` for the first answer turn of its dialogue, else ``followup``."""
    return OPENING if position <= first_answer_position else FOLLOWUP


def position_of(doc: AnswerDocument) -> Position:
    """Return the stored position of ``doc``, computed from its DT when the index predates the fields.

    An old document's role is inferred from its turn index (the first answer of a dialogue that opens with
    one question sits at turn 1), the best an index without its dialogues can do.
    """
    meta = doc.meta
    if "role" in meta and "stands_alone" in meta:
        stored = Position(str(meta["role"]), bool(meta["stands_alone"]), str(meta.get("position_reason", "")))
        # the formulas are read from the text again: an index built before one was listed still sees it
        phrase = _text_opening_phrase(doc.text[:_PHRASE_CHARS]) if stored.stands_alone else None
        return replace(stored, stands_alone=False, reason=f"back-pointing opener: {' '.join(phrase)}") \
            if phrase else stored
    return _computed(doc.id, doc.position, json.dumps(doc.tree, sort_keys=True) if doc.tree else "", doc.text)


@lru_cache(maxsize=4096)
def _computed(doc_id: str, position: int, tree_json: str, text: str) -> Position:
    role = source_role(position, 1)
    if not tree_json:
        words = words_of(text)
        return Position(role, not words or words[0] not in _cues().continuing_markers)
    return detect_position(DiscourseTree.from_dict(json.loads(tree_json)), role=role)
