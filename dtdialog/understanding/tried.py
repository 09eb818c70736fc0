"""What the customer already tried, read from the question's discourse tree, and what an answer mainly recommends.

The paper's point: an answer must address the Contrast in Q ("but I still could not start my car"), not
repeat its satellite ("I have checked the spark plugs, replaced the battery, …"). This module makes that
concrete in two halves:

- ``extract_tried(tree, normalizer)`` reads the actions and checks the customer reports as done or ruled out:
  a done verb of a known class ("replaced", "have checked", "was tested"), "X is fine / tested good", or
  "a new X". Each becomes a ``TriedAction(verb_class, objects, text)`` whose objects are entity terms of
  ``EntityNormalizer`` (synonyms and stems applied), so "ECU" in the question meets "engine computer" in an
  answer. The DT says where the report sits: ``relation`` is the innermost non-default relation whose
  satellite holds it (typically Concession, Contrast or Condition), kept for the explanation.
  Not a report: a modal or question ("should I replace the battery?"), a negation ("I haven't checked the
  fuses"), a bare present ("if I replace it").
- ``main_recommendation(tree, normalizer)`` is the first recommendation (imperative "check the grounds",
  "you should replace …", "have the alternator tested") in the answer's nucleus EDUs: the EDUs reached
  from the root through nuclei only. A tried part mentioned in a satellite ("since you replaced the
  battery, check the starter relay") is not the answer's recommendation.

``repeated_action(recommendation, tried)`` says which tried action an answer's main recommendation repeats.
The verb classes are English grammar, not domain vocabulary: the objects come from the entity terms.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from dtdialog.understanding.entities import EntityNormalizer
from index.vocabulary import stem, words_of
from parsers.relations import is_default
from parsers.tree import EDU, DiscourseTree, Node

REPLACED, CHECKED, CLEANED, RULED_OUT = "replaced", "checked", "cleaned", "ruled-out"
#: work on a part that is neither a replacement nor a check: each is its own class, so "bleed the brakes" does not
#: repeat "I tightened the brake lines"
TIGHTENED, ADJUSTED, BLED, FILLED, CHARGED, RESET = "tightened", "adjusted", "bled", "filled", "charged", "reset"
#: work reported without saying which ("had the alignment done", "did the brakes last month"): it covers any advice on
#: that part; never read as advice ("do" names no action of its own)
DONE = "done"

#: base verb -> verb class (checked ≈ tested ≈ measured; replaced ≈ installed); matched on Porter stems
_VERBS = {
    "replace": REPLACED, "install": REPLACED, "swap": REPLACED, "change": REPLACED, "renew": REPLACED,
    "check": CHECKED, "test": CHECKED, "measure": CHECKED, "inspect": CHECKED, "verify": CHECKED,
    "scan": CHECKED, "examine": CHECKED, "probe": CHECKED,
    "clean": CLEANED, "flush": CLEANED,
    "tighten": TIGHTENED, "retighten": TIGHTENED, "adjust": ADJUSTED, "readjust": ADJUSTED, "bleed": BLED,
    "bled": BLED, "fill": FILLED, "refill": FILLED, "top": FILLED, "charge": CHARGED, "recharge": CHARGED,
    "reset": RESET, "did": DONE, "done": DONE,
}


@lru_cache(maxsize=1)
def _verb_classes() -> dict[str, str]:
    # stemmed on first use, not at import: the stemmer's import (NLTK) costs a second of every start-up
    return {stem(v): c for v, c in _VERBS.items()}


def _verb_class(word: str) -> str | None:
    """Return the verb class of ``word`` (matched on its Porter stem), or None; a hyphenated verb is its last part's
    ("load-tested" is tested, "re-checked" checked)."""
    return _verb_classes().get(stem(word.rsplit("-", 1)[-1]))

#: irregular done forms of the verbs above (the regular ones end in -ed)
_IRREGULAR_DONE = frozenset({"swapped", "swopped", "bled", "reset", "did", "done"})
#: base forms that end like a done form ("bleed the brakes")
_BASE_IN_ED = frozenset({"bleed"})
#: which recommended verb class each tried class covers: a part just replaced need not be tested again
#: (the issue's "have the alternator tested" to someone who had just replaced it), and one the customer
#: ruled out ("the fuses are fine") is settled whatever the answer wants done with it
_COVERS = {REPLACED: {REPLACED, CHECKED}, CHECKED: {CHECKED}, CLEANED: {CLEANED}, RULED_OUT: {REPLACED, CHECKED, CLEANED},
           **{done: {done} for done in (TIGHTENED, ADJUSTED, BLED, FILLED, CHARGED, RESET)},
           DONE: {REPLACED, CHECKED, CLEANED, TIGHTENED, ADJUSTED, BLED, FILLED, CHARGED, RESET}}

_NEGATIONS = frozenset({"not", "never", "no", "nor", "without", "cannot"})
_MODALS = frozenset({"should", "shall", "could", "would", "will", "can", "may", "might", "must", "need", "needs",
                     "want", "wants", "going", "plan", "planning", "if", "whether", "to", "gonna", "ought"})
_QUESTION_OPENERS = frozenset({"should", "shall", "could", "would", "will", "can", "do", "does", "did", "is", "are",
                               "what", "which", "how", "why", "when", "where", "who", "any", "anyone"})
_BE = frozenset({"is", "are", "was", "were", "be", "been", "being", "seems", "seem", "seemed", "looks", "look",
                 "looked", "tested", "tests", "checked", "checks", "came", "comes", "reads", "read", "showed"})
_FINE = frozenset({"fine", "good", "ok", "okay", "normal", "perfect", "clean", "working", "healthy", "new", "full",
                   "correct"})
#: a level told by its mark ("the fluid is at the full mark", "coolant is at the max line"): as fine as "full"
_AT_MARK = frozenset({"full", "max", "maximum", "correct", "proper"})
_MARKS = frozenset({"mark", "line", "level"})
#: a subject that sets the part in question apart ("all the other bulbs are fine")
_OTHERS = frozenset({"other", "others", "rest"})
#: words that end a clause: what follows belongs to another action or to the problem
_BREAKS = frozenset({"but", "because", "so", "then", "since", "although", "though", "while", "which", "when",
                     "after", "before", "until", "and", "or", "yet", "still", "if"})
#: recommendation openers: "you should check …", "try cleaning …", "I would replace …", "have the X tested"
_ADVICE = frozenset({"should", "must", "need", "needs", "try", "recommend", "suggest", "would", "i'd", "you'd",
                     "please", "first", "then", "next", "also", "just", "now", "so", "and", "start", "begin"})
_HAVE_DONE = frozenset({"have", "get"})
#: the causative as a report of work done ("had the alternator tested", "got the tires rotated")
_HAD_DONE = _HAVE_DONE | {"had", "got"}
#: "did" is the work done only before its object's determiner ("did the brakes"); before a pronoun, a negation or a
#: verb it is an auxiliary ("what did I do", "I did not check")
_DETERMINERS = frozenset({"the", "a", "an", "my", "his", "her", "our", "their", "both"})
#: before a done verb, the subject is its object ("the pads were replaced at the shop", "the alignment was done")
_PASSIVE = frozenset({"was", "were", "been", "is", "are", "being", "got"})
#: non-object words a clause often carries ("replaced it myself yesterday")
_NOT_OBJECT_WORDS = ("yesterday", "today", "week", "last", "weekend", "month", "ago", "already", "also", "again",
                     "myself", "twice", "recently", "new", "brand", "everything", "still", "fine", "good", "okay",
                     "normal", "perfect", "working", "first", "next", "then", "later", "now",
                     # a reply's answer words ("yes the battery is new"): no part is called that
                     "yes", "yeah", "yep", "nope", "sure", "actually", *_VERBS)


@lru_cache(maxsize=1)
def _not_objects() -> frozenset[str]:
    """Return the stems of ``_NOT_OBJECT_WORDS`` (stemmed on first use, like ``_verb_classes``)."""
    return frozenset(stem(w) for w in _NOT_OBJECT_WORDS)


#: an object that points back at the part the conversation is about ("had it tested", "replaced them")
_PRONOUN_OBJECTS = frozenset({"it", "them"})
#: words that end an opening's subject besides a verb ("the car won't start", "my battery keeps dying")
_SUBJECT_ENDS = frozenset({"won", "wont", "can", "cant", "will", "would", "does", "doesnt", "did", "didnt", "has",
                           "have", "had", "keeps", "only", "just", "suddenly", "randomly", "sometimes", "always",
                           "when", "after", "since", "while", "if"})
#: what an opening's subject may name that is no part: "my car", "the engine light" is a part of its own
_NON_PARTS = frozenset({"car", "vehicl", "truck"})
#: what a part does after "new ... " or an opening's subject: "the new battery dies overnight" (stems)
_EVENT_VERBS = frozenset(stem(w) for w in "die fail work start run go keep make sound seem feel look come stop need "
                         "cost wear break drain lose".split())
_JOINERS = frozenset({"and", "or", "but"})
#: words ending in "s" that are no plural head of a part: "new brakes" is, "new gas cap" is not cut at "gas"
_NOT_HEADS = frozenset({"gas", "its", "this", "has", "was", "is", "as", "always", "lens", "chassis", "abs", "bus"})
#: prepositions that end an action's object once it has one ("replaced the battery at the parts store")
_PREPOSITIONS = frozenset({"at", "in", "on", "with", "for", "from", "near", "by", "under", "behind", "to", "into",
                           "during", "after", "before", "using"})


class Vocabulary(Protocol):
    """What reading a recommendation needs: ``EntityNormalizer``, or the manager's ``SelectorPort``."""

    def terms_of_text(self, text: str) -> frozenset[str]: ...

    def terms_of_edus(self, edus: Iterable[EDU]) -> frozenset[str]: ...


#: a reply saying the answer on screen was already done: only a pointer back to it ("tried that", "been there"; a done
#: form of a known verb before a pronoun, "did it", is ``_DONE_PRONOUN``); "I already checked the grounds" names its
#: own object and is read by ``extract_tried`` instead
_SAID_TRIED = re.compile(r"\btried (?:that|this|it|those)\b|\bbeen there\b", re.IGNORECASE)


@dataclass(frozen=True)
class TriedAction:
    """One action or check the customer reports as done (or a part they ruled out).

    ``verb_class`` is replaced / checked / cleaned / ruled-out; ``objects`` are entity terms; ``text`` is the
    customer's own clause ("replaced the battery"); ``relation`` is the DT-Q relation whose satellite holds it.
    """

    verb_class: str
    objects: frozenset[str]
    text: str
    relation: str | None = None

    def explain(self) -> str:
        """Return why an answer repeating this is demoted, in the customer's words ("you already replaced …")."""
        words = self.text.split()
        # a report read before its verb is the customer's clause with its subject ("the pads were replaced"): quoted
        if self.verb_class == RULED_OUT or not words or (
                _verb_class(words[0]) is None and words[0].lower() not in _HAD_DONE):
            return f'you said "{self.text}"'
        # "replaced the thermostat already" keeps the customer's word order; the reason says "already" once
        return "you already " + " ".join(words[:-1] if len(words) > 1 and words[-1].lower() == "already" else words)

    def to_dict(self) -> dict[str, Any]:
        return {"verb_class": self.verb_class, "objects": sorted(self.objects), "text": self.text,
                "relation": self.relation}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TriedAction:
        """Return the action in ``data``; ``ValueError`` when it is malformed."""
        if not isinstance(data, dict) or not data.get("verb_class") or not data.get("objects"):
            raise ValueError(f"malformed tried action: {data!r}")
        return cls(verb_class=str(data["verb_class"]), objects=frozenset(map(str, data["objects"])),
                   text=str(data.get("text", "")), relation=data.get("relation"))


@dataclass(frozen=True)
class Recommendation:
    """What an answer tells the customer to do: a verb class on object terms, and the clause saying it."""

    verb_class: str
    objects: frozenset[str]
    text: str


def extract_tried(tree: DiscourseTree, normalizer: EntityNormalizer, *,
                  antecedent: frozenset[str] = frozenset()) -> list[TriedAction]:
    """Return the actions and checks the text reports as done or ruled out, in text order, without repeats.

    ``antecedent``: what "it" names when a report acts on it ("I had it tested"): the part the conversation is about
    (``subject_objects`` of its opening); empty, such a report is read as before."""
    roles = satellite_relations(tree)
    found: list[TriedAction] = []
    previous_objects: frozenset[str] = frozenset()
    for edu in tree.edus:
        actions, objects = _tried_in_edu(edu, normalizer, previous_objects, roles.get(edu.index), antecedent)
        found.extend(actions)
        # a subject-less "and is good" borrows the objects of the EDU before it, within one sentence
        same_sentence = edu.sentence == _sentence_of(tree, edu.index + 1)
        previous_objects = (objects or previous_objects) if same_sentence else frozenset()
    return merge_tried((), found)


def tried_from_dicts(items: object) -> list[TriedAction]:
    """Return the actions of a stored list (a session record's ``tried``); malformed entries are skipped."""
    out = []
    for item in items if isinstance(items, list) else []:
        try:
            out.append(TriedAction.from_dict(item))
        except (TypeError, ValueError):
            continue
    return out


def merge_tried(known: Iterable[TriedAction], new: Iterable[TriedAction]) -> list[TriedAction]:
    """Return ``known`` plus the actions of ``new`` not already there (same class and objects)."""
    out = list(known)
    keys = {(a.verb_class, a.objects) for a in out}
    for action in new:
        if (action.verb_class, action.objects) not in keys:
            out.append(action)
            keys.add((action.verb_class, action.objects))
    return out


def satellite_relations(tree: DiscourseTree) -> dict[int, str]:
    """Return EDU index -> the innermost non-default relation whose satellite side holds that EDU."""
    out: dict[int, str] = {}
    stack: list[tuple[Node, str | None]] = [(tree.root, None)]  # a loop: deep trees must not hit the recursion limit
    while stack:
        node, inherited = stack.pop()
        if node.is_leaf:
            if inherited is not None:
                out[node.edu] = inherited  # type: ignore[index]
            continue
        for child, mark in zip(node.children, node.nuclearity):
            own = node.relation if mark == "S" and node.relation and not is_default(node.relation) else None
            stack.append((child, own or inherited))
    return out


def _sentence_of(tree: DiscourseTree, index: int) -> int | None:
    return tree.edus[index].sentence if 0 <= index < len(tree.edus) else None


@lru_cache(maxsize=1)
def _phrase_ending_verbs() -> frozenset[str]:
    """Return the stems that end a part's noun phrase: the symptom verbs and ``_EVENT_VERBS`` ("squeal", "dies")."""
    from dtdialog.understanding.symptom_conditions import symptom_verbs

    return frozenset(symptom_verbs() | _EVENT_VERBS)


def subject_objects(tree: DiscourseTree, normalizer: EntityNormalizer) -> frozenset[str]:
    """Return the part the opening's first clause is about, named before its first verb ("my battery is dead every
    morning": the battery), or nothing when no part is named there."""
    verbs = _phrase_ending_verbs()
    tokens = words_of(tree.edus[0].text) if tree.edus else []
    end = next((k for k, t in enumerate(tokens) if t in _BE or t in _SUBJECT_ENDS or t.endswith("n't")
                or _verb_class(t) or stem(t) in verbs), len(tokens))
    found = _objects(tokens[:end], normalizer) - _NON_PARTS
    # one part, with its compound ("battery terminal"), or nothing: a long title names no one thing "it" stands for
    return found if len(head_terms(found)) == 1 else frozenset()


def _tried_in_edu(edu: EDU, normalizer: EntityNormalizer, previous_objects: frozenset[str],
                  relation: str | None, antecedent: frozenset[str] = frozenset()
                  ) -> tuple[list[TriedAction], frozenset[str]]:
    """Return the EDU's reported actions, and its object terms (lent to a subject-less "and is good")."""
    tokens = words_of(edu.text)
    pieces = _piece_starts(edu.text)
    if not tokens or (edu.text.rstrip().endswith("?") and tokens[0] in _QUESTION_OPENERS):
        return [], frozenset()
    phrases = normalizer.terms_of_edu(edu)
    actions: list[TriedAction] = []
    for i, token in enumerate(tokens):
        verb_class = _verb_class(token)
        if verb_class is not None and _is_done(token) and not _blocked(tokens, i, pieces) \
                and not (token == "did" and tokens[i + 1:i + 2] and tokens[i + 1] not in _DETERMINERS):
            action = _done_action(tokens, i, verb_class, normalizer, phrases, relation, antecedent)
            if action is not None:
                actions.append(action)
    # "I had it tested ... and it is fine": the "it" that was acted on is what a subject-less report goes on about
    resolved = next((a.objects for a in actions if a.objects == antecedent), None) if antecedent else None
    objects = resolved or _objects(tokens, normalizer, phrases)
    actions.extend(_ruled_out(tokens, normalizer, phrases, resolved or previous_objects, relation))
    actions.extend(_new_parts(tokens, normalizer, phrases, relation, pieces))
    return actions, objects


def done_class(word: str) -> str | None:
    """Return the verb class of a done form ("swapped" and "replaced" are both ``replaced``), else None."""
    return _verb_class(word) if _is_done(word.lower()) else None


def _is_done(token: str) -> bool:
    return (token.endswith("ed") and token not in _BASE_IN_ED) or token in _IRREGULAR_DONE


def _piece_starts(text: str) -> frozenset[int]:
    """Return the positions (in ``words_of(text)``) of the words that begin a comma-, semicolon- or colon-separated
    piece of ``text``: "my car will not start, I replaced the battery" is two clauses, and its "not" is not the
    second one's."""
    starts: set[int] = set()
    count = 0
    for piece in re.split(r"[,;:]", text):
        if count:
            starts.add(count)
        count += len(words_of(piece))
    return frozenset(starts)


def _blocked(tokens: Sequence[str], i: int, pieces: frozenset[int] = frozenset()) -> bool:
    """Return True when a negation or a modal before the verb (in its clause, which a comma also ends) makes it not
    a report."""
    start = max([_clause_start(tokens, i), *(p for p in pieces if p <= i)])
    for token in reversed(tokens[start:i]):
        if token in _NEGATIONS or token.endswith("n't") or token in _MODALS:
            return True
    return False


def _clause_start(tokens: Sequence[str], i: int) -> int:
    for j in range(i - 1, -1, -1):
        if tokens[j] in _BREAKS - {"and"}:
            return j + 1
    return 0


def _clause_end(tokens: Sequence[str], i: int) -> int:
    """Return the end of the clause after position ``i``: a break word, or "and" before another verb."""
    for j in range(i + 1, len(tokens)):
        if tokens[j] in _BREAKS and (tokens[j] not in ("and", "or") or _starts_action(tokens, j + 1)):
            return j
    return len(tokens)


def _starts_action(tokens: Sequence[str], j: int) -> bool:
    window = tokens[j:j + 3]
    return any(_verb_class(t) for t in window) or any(t in _BE or t in ("i", "it", "they") for t in window)


def _object_tokens(tokens: Sequence[str], i: int, normalizer: Vocabulary) -> Sequence[str]:
    """Return the words after the verb at ``i`` up to the clause end or a preposition after the first object word."""
    end = _clause_end(tokens, i)
    for j in range(i + 1, end):
        if tokens[j] in _PREPOSITIONS and _objects(tokens[i + 1:j], normalizer):
            return tokens[i + 1:j]
    return tokens[i + 1:end]


def _objects(tokens: Sequence[str], normalizer: Vocabulary, phrases: frozenset[str] = frozenset()) -> frozenset[str]:
    """Return the entity terms of ``tokens``, plus the EDU's multi-word terms ("spark plug") made of them."""
    singles = normalizer.terms_of_text(" ".join(tokens)) - _not_objects()
    return frozenset(singles | {p for p in phrases if " " in p and set(p.split()) <= singles})


def reported_in_clause(text: str, normalizer: EntityNormalizer) -> list[TriedAction]:
    """Return the actions one clause reports as done or settled ("you replaced the pump", "the battery is new")."""
    edu = EDU(index=0, text=text, start=0, end=len(text), sentence=0)
    return _tried_in_edu(edu, normalizer, frozenset(), None)[0]


def head_terms(objects: frozenset[str]) -> frozenset[str]:
    """Return the terms that name the thing acted on, not a modifier of a longer term.

    "spark" and "plug" of "spark plug", or "ignit coil" of "ignit coil connector", are modifiers: checking the
    coil connectors does not repeat replacing the coils, nor does checking for a spark repeat checking the plugs.
    """
    modifiers: set[str] = set()
    for term in objects:
        words = term.split()
        modifiers.update(words[:-1])
        modifiers.update(" ".join(words[:k]) for k in range(2, len(words)))
    return frozenset(t for t in objects if t not in modifiers)


def _done_action(tokens: Sequence[str], i: int, verb_class: str, normalizer: EntityNormalizer,
                 phrases: frozenset[str], relation: str | None,
                 antecedent: frozenset[str] = frozenset()) -> TriedAction | None:
    """Return "replaced the battery" (object after the verb), "had the alternator tested" (between) or "the battery
    was tested" (before it); "had it tested" or "tested it" acts on ``antecedent``."""
    start = _clause_start(tokens, i)
    have = next((k for k in range(i - 2, start - 1, -1) if tokens[k] in _HAD_DONE), None)
    if have is not None:
        between = _objects(tokens[have + 1:i], normalizer, phrases)
        if between:
            return TriedAction(verb_class, between, " ".join(tokens[have:i + 1]), relation)
        if antecedent and have + 2 == i and tokens[have + 1] in _PRONOUN_OBJECTS:
            return TriedAction(verb_class, antecedent, " ".join(tokens[have:i + 1]), relation)
    if antecedent and tokens[i + 1:i + 2] and tokens[i + 1] in _PRONOUN_OBJECTS and tokens[i] != "done":
        return TriedAction(verb_class, antecedent, " ".join(tokens[i:i + 2]), relation)
    before = [t for t in tokens[start:i] if t not in ("and",)]
    passive = i > start and tokens[i - 1] in _PASSIVE and _objects(before, normalizer, phrases)
    if tokens[i] == "done" and not passive:
        return None  # "I've done some research", "done it countless times": only "had X done" and "X was done" say which
    after = [] if passive else _object_tokens(tokens, i, normalizer)
    objects = _objects(after, normalizer, phrases)
    if objects:
        return TriedAction(verb_class, objects, " ".join([tokens[i], *after]), relation)
    objects = _objects(before, normalizer, phrases)
    if not objects:
        return None
    first = next((k for k in range(start, i) if tokens[k] != "and"), i)  # "and the tires rotated": no "and" quoted
    return TriedAction(verb_class, objects, " ".join(tokens[first:i + 1]), relation)  # the customer's words, whole


def _ruled_out(tokens: Sequence[str], normalizer: EntityNormalizer, phrases: frozenset[str],
               previous_objects: frozenset[str], relation: str | None) -> list[TriedAction]:
    """Return "the fuses are fine", "the battery tested good", "and is good" (subject from the previous EDU)."""
    out = []
    for i, token in enumerate(tokens[:-1]):
        if token not in _BE:
            continue
        j = i + 1
        while j < len(tokens) - 1 and tokens[j] in ("out", "back", "all", "perfectly", "totally", "completely"):
            j += 1
        at_mark = tokens[j:j + 2] == ["at", "the"] and tokens[j + 2:j + 3] and tokens[j + 2] in _AT_MARK \
            and tokens[j + 3:j + 4] and tokens[j + 3] in _MARKS
        if at_mark:
            j += 3  # "is at the full mark": the report ends at its mark word
        elif tokens[j] not in _FINE or (tokens[j] == "full" and tokens[j + 1:j + 2] == ["of"]):
            continue  # "the pan is full of sludge" is a finding, not a level that is fine
        start = _clause_start(tokens, i)
        if any(t in _NEGATIONS or t.endswith("n't") or t in _MODALS for t in tokens[start:j]):
            continue
        subject = [t for t in tokens[start:i] if t != "and"]
        if _OTHERS & set(subject):
            continue  # "all the other bulbs are fine" rules out the others, not the one in question
        objects = _objects(subject, normalizer, phrases) or previous_objects
        if objects:
            verb_class = REPLACED if tokens[j] == "new" else RULED_OUT
            out.append(TriedAction(verb_class, frozenset(objects), " ".join(tokens[start:j + 1]), relation))
    return out


def _new_parts(tokens: Sequence[str], normalizer: EntityNormalizer, phrases: frozenset[str],
               relation: str | None, pieces: frozenset[int] = frozenset()) -> list[TriedAction]:
    """Return "new battery" reported as fitted ("put in a new battery", "with a new alternator")."""
    out = []
    for i, token in enumerate(tokens[:-1]):
        if token != "new" or _blocked(tokens, i, pieces) or (i > 0 and tokens[i - 1] in _BE):
            continue
        if _verb_class(tokens[max(i - 2, 0)]) or _verb_class(tokens[max(i - 1, 0)]):
            continue  # "replaced it with a new one" is the verb's own report
        end = _part_end(tokens, i + 1, _clause_end(tokens, i))
        objects = _objects(tokens[i + 1:end], normalizer, phrases)
        if objects:
            plural = _plural(tokens[end - 1])
            out.append(TriedAction(REPLACED, objects, ("fitted " if plural else "fitted a ") + " ".join(tokens[i:end]),
                                   relation))
    return out


def _plural(token: str) -> bool:
    return token.endswith("s") and not token.endswith(("ss", "us"))


def _part_end(tokens: Sequence[str], start: int, end: int) -> int:
    """Return where the part named after "new" ends: after a plural head ("new brake pads", "new plugs and coils"),
    or before a symptom verb ("new battery dies"); "new brake pads squeal every time" fitted the pads, not a squeal
    or a time."""
    verbs = _phrase_ending_verbs()
    last_head = None
    for j in range(start, end):
        if j > start and (stem(tokens[j]) in verbs or tokens[j] in _JOINERS and j + 1 == end):
            return last_head or j
        if _plural(tokens[j]) and tokens[j] not in _NOT_HEADS:
            last_head = j + 1
            if not (j + 2 < end and tokens[j + 1] in _JOINERS):
                return last_head  # "new plugs and coils": the parts joined to a plural head are fitted too
    return end


# --- the answer side ----------------------------------------------------------------------------------------
def main_recommendation(tree: DiscourseTree, normalizer: EntityNormalizer) -> Recommendation | None:
    """Return the first recommendation in the answer's nucleus EDUs (its main clause), or None."""
    for edu in tree.nucleus_chain_edus():
        found = recommendation_in(with_split_verb(tree, edu), normalizer)
        if found is not None:
            return found
    return None


def with_split_verb(tree: DiscourseTree, edu: EDU) -> EDU:
    """Return ``edu`` joined to the EDU before it when that one ends in the bare verb whose object clause ``edu`` is:
    the segmenter splits "and check | whether the belt is still on the pulleys", and the check is of the belt."""
    if not 0 < edu.index <= len(tree.edus):
        return edu
    before = tree.edus[edu.index - 1]
    tokens = words_of(before.text)
    if not tokens or before.sentence != edu.sentence or _verb_class(tokens[-1]) in (None, DONE) \
            or not _is_base(tokens[-1]):
        return edu
    return EDU(index=edu.index, text=f"{before.text} {edu.text}", start=before.start, end=edu.end,
               sentence=edu.sentence, lemmas=before.lemmas + edu.lemmas, entities=before.entities + edu.entities)


def recommendation_in(edu: EDU, normalizer: Vocabulary) -> Recommendation | None:
    """Return the first recommended action of an EDU ("check the grounds", "have the alternator tested")."""
    tokens = words_of(edu.text)
    phrases = normalizer.terms_of_edus([edu])
    for i, token in enumerate(tokens):
        verb_class = _verb_class(token)
        if verb_class is None or verb_class == DONE:
            continue
        start = _advice_start(tokens, i)
        if _is_base(token) and _is_advice(tokens[start:i]):
            after = _object_tokens(tokens, i, normalizer)
            objects = _objects(after, normalizer, phrases)
            if objects:
                return Recommendation(verb_class, objects, " ".join([token, *after]))
        have = next((k for k in range(i - 2, start - 1, -1) if tokens[k] in _HAVE_DONE), None)
        if _is_done(token) and have is not None and _is_advice(tokens[start:have]):
            objects = _objects(tokens[have + 1:i], normalizer, phrases)
            if objects:
                return Recommendation(verb_class, objects, " ".join(tokens[have:i + 1]))
    return None


def _advice_start(tokens: Sequence[str], i: int) -> int:
    """Return where the clause of the verb at ``i`` starts ("pull the coil and check …": after "and")."""
    for j in range(i - 1, -1, -1):
        if tokens[j] in _BREAKS:
            return j + 1
    return 0


def _is_advice(head: Sequence[str]) -> bool:
    """Return True when the words before a verb make it advice: nothing, "you should", "first", "try to"."""
    return all(t in _ADVICE or t in ("you", "to", "i", "we") for t in head)


def _is_base(token: str) -> bool:
    return token in _BASE_IN_ED or not token.endswith(("ed", "ing", "s"))


def first_recommendation(edus: Sequence[EDU], vocabulary: Vocabulary) -> Recommendation | None:
    """Return the first recommendation among ``edus`` (an answer's EDUs, when its tree is not at hand)."""
    for edu in edus:
        found = recommendation_in(edu, vocabulary)
        if found is not None:
            return found
    return None


def says_tried(text: str) -> bool:
    """Return True when a reply says the advice was already followed ("I already did that", "tried it", "swapped it
    but still smells": any done form of a known verb before a pronoun)."""
    return bool(_SAID_TRIED.search(text)) or any(done_class(m.group(1)) for m in _DONE_PRONOUN.finditer(text))


#: a word before a pronoun object: a done form of a known verb there says the advice was followed ("swapped it")
_DONE_PRONOUN = re.compile(r"\b([a-z]+)\s+(?:that|this|it|those|them)\b", re.IGNORECASE)


#: work a shop did, told with the causative ("Had the tires balanced twice", "got my car scanned at the parts store"):
#: the verb closes its noun phrase, so "got a used car" is no report
_CAUSATIVE_REPORT = re.compile(
    r"\b(?:had|got|gotten)\s+(?:" + "|".join(sorted(_DETERMINERS | {"all", "it", "them"})) + r")\b(?:\s+[a-z'-]+){0,3}?"
    r"\s+(?:[a-z]+ed|" + "|".join(sorted(_IRREGULAR_DONE | {"read", "rebuilt", "redone"})) + r")"
    r"(?=\s*(?:[.,;:!?)]|$)|\s+(?:twice|again|once|already|recently|yesterday|today|last|at|by|and|but|in|on|from|"
    r"two|three|several|a|before|after|with|for|because|so)\b)",
    re.IGNORECASE)


def says_work_done(text: str) -> bool:
    """Return True when the customer's words report work already done, read or not as a ``TriedAction``: the detail
    question must not ask what they already checked or replaced ("Had the tires balanced twice")."""
    return says_tried(text) or bool(_CAUSATIVE_REPORT.search(text))


def tried_from_reply(text: str, answer_edus: Sequence[EDU], vocabulary: Vocabulary) -> TriedAction | None:
    """Return the answer's recommendation as tried when the reply says it was already done ("tried that")."""
    if not says_tried(text):
        return None
    rec = first_recommendation(answer_edus, vocabulary)
    if rec is None:
        return None
    return TriedAction(rec.verb_class, rec.objects, f'tried "{rec.text}"')


def repeated_action(recommendation: Recommendation | None, tried: Sequence[TriedAction]) -> TriedAction | None:
    """Return the tried action the recommendation repeats: a covering verb class on a shared object term."""
    if recommendation is None:
        return None
    for action in tried:
        if recommendation.verb_class in _COVERS.get(action.verb_class, ()) and head_terms(recommendation.objects) & head_terms(action.objects):
            return action
    return None
