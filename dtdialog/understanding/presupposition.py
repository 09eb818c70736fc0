"""Facts an answer's opening takes for granted, and whether the customer ever stated them.

"After a starter job, the most common mistakes are ..." answers someone who just replaced a starter; to a customer
who never mentioned one it reads as an answer to another person. ``presupposed_facts(opening, normalizer)`` reads
the answer's opening sentence for six kinds of presupposition trigger (past a bare yes or no: "No. A sidewall bulge means ..."
is read at its second sentence):

* **a prior event**: a subordinator that states its clause as given ("after", "since", "now that", ...) followed by
  a job on a part ("a starter job", "the timing belt change") or a done action ("you replaced the pump", "the
  battery is new", read by ``dtdialog.understanding.tried``'s report reader);
* **a reported observation**: a demonstrative or "your" before a kind of evidence only the customer can report
  ("that P0420 code", "that clicking noise", "your check engine light"), or "the X you got / heard / mentioned";
* **a diagnosed symptom**: the subject of an opening diagnosis ("Rapid clicking with dim lights is the classic sign
  of ...", "A single click usually means ...");
* **a reading**: a number and its unit heading the opening ("14.3 volts is a good charging voltage"), stated only
  when that number was said;
* **a vehicle**: a make or model named in the opening ("Nissan has issued bulletins for CVT shudder on that
  generation") when the conversation named another one (a model names its make);
* **a second one**: "Both fluids can be red ..." refers back to two things, stated only when the conversation
  named two of them (``dtdialog.understanding.pairs``).

``unstated(fact, ground)`` says which of a fact's terms the conversation never stated. ``CommonGround`` holds what
was said (the customer's messages and the answers already given), in the selector's entity terms (stems, car
synonyms). A part named only inside a longer term is not stated by it: "the solenoid" (canonical "starter
solenoid") does not state a starter job. A state given as a premise ("Since the engine cranks, ...") is not a
trigger: a customer's "could not start" often stands for it, and judging it needs knowledge of symptoms.
The trigger words are English grammar and kinds of evidence (``resources/presupposition_triggers.json``); what a
fact is about always comes from the entity vocabulary, so an index of another domain is read the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from dtdialog.understanding.entities import EntityNormalizer
from dtdialog.understanding.opposites import opposed
from dtdialog.understanding.pairs import pair_phrase, paired_nouns
from dtdialog.understanding.tried import head_terms, reported_in_clause
from dtdialog.understanding.unasked_response import is_bare_response
from dtdialog.understanding.vehicles import names_in, vehicles_named
from index.vocabulary import entity_words, is_content_word, is_entity_word, words_of
from parsers.tree import DiscourseTree

TRIGGERS_PATH = Path(__file__).resolve().parent.parent / "resources" / "presupposition_triggers.json"
PRIOR_JOB, PRIOR_ACTION, OBSERVATION, SYMPTOM = "a prior job", "a prior action", "an observation", "a symptom"
READING = "a reading"
VEHICLE = "a vehicle"
#: "Both fluids can be red ..." refers back to two things: a customer who named one never mentioned the second
PAIR = "a second one"
#: an answer about a trouble code ("P0442 means a very small leak") to a customer who gave another one (P0420)
OTHER_CODE = "another code"
#: a trouble code as written, which names one fault: a letter and four digits or hex digits ("P0420", "U0100");
#: ``_CODE_TOKEN`` below is looser, as it only says that a code was reported
_TROUBLE_CODE = re.compile(r"\b[A-Za-z][0-9][0-9A-Fa-f]{3}\b")
#: a number as said: "14.3", "14,3" and "14.3V" are one reading
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
PREMISE = "a premise"
#: a premise about the customer's own thing says "your" ("since your coolant isn't dropping"); "because you aren't
#: waiting" is advice, not a claim about their case
_POSSESSIVE = frozenset({"your", "yours"})
_PREMISE = re.compile(r"\b(since|because|given that|now that)\s+(.+?)(?=[.!?;]|$)")
#: how many words may stand between a determiner and the kind of evidence ("that P0420 code", "your check engine light")
NOUN_WINDOW = 3
#: a diagnosis' subject longer than this is not one noun phrase ("The first thing to know when ... means")
SUBJECT_WORDS = 12
#: how far a diagnostic verb is looked for: a longer subject is read only for the work it states as done
LONG_SUBJECT_WORDS = 24
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_CLAUSE_END = re.compile(r"[,;:.!?()]|\s(?:but|so|and then|because|which|while|when|if)\s")
#: a clause that supposes instead of stating: its evidence is a question to the customer, not a claim about them
_HYPOTHESIS = re.compile(r"\b(?:if|unless|whether|in case|when|once)\b[^,;:.!?]*")
_SUBJECT_END = re.compile(r"[,;:.!?()]|\s(?:but|so|and then|because|which|if)\s")
#: a trouble code as written ("P0174", "E-404"): it states that a code was read, though the word "code" is not said
_CODE_TOKEN = re.compile(r"\b[A-Za-z]{1,2}-?\d{3,5}\b")
_PRONOUNS = frozenset({"it", "this", "that", "these", "those", "which", "what", "there", "they", "you", "i", "we"})
_DEFINITE = _PRONOUNS | {"the", "your", "my", "our"}
#: words that deny what follows them within ``NEG_WINDOW`` words of their clause (and every "...n't")
_NEGATORS = frozenset({"not", "no", "never", "without", "nor", "neither", "none"})
NEG_WINDOW = 3
_NEGATION_SCOPE_END = re.compile(r"[,;:.!?()]|\s(?:but|and|so|because|which|while|when|if|though|although)\s")


@dataclass(frozen=True)
class Fact:
    """A fact an answer takes as given: its ``kind``, the answer's words, the terms that name it.

    ``key`` says which terms must have been said for it to count as stated: ``heads`` (a part's head term: "starter"
    of "a starter job"), ``modifiers`` (what sets an observation apart: "clicking" of "that clicking noise"; the noun
    itself when nothing modifies it) or ``any`` (any term of a diagnosed symptom).
    """

    kind: str
    phrase: str
    terms: frozenset[str]
    key: str
    #: terms the fact itself states under a negation ("a car that won't start"): a customer's denial agrees with them
    negated: frozenset[str] = frozenset()
    #: the kind of evidence a diagnosed subject names ("light" of "bright dash lights"): what to ask the customer
    evidence: str = ""


@dataclass(frozen=True)
class Presupposition:
    """An answer's opening fact that the conversation never stated (or denied), and the terms missing from it."""

    fact: Fact
    missing: frozenset[str]
    #: the conversation said the opposite ("not flashing" against "a flashing check engine light")
    contradicted: bool = False

    def explain(self) -> str:
        """Return why the answer was demoted, quoting its words ('it presupposes a prior job you never mentioned ...')."""
        if self.contradicted and self.fact.kind == PREMISE:
            return f'it assumes the opposite of what you said: "{self.fact.phrase}"'
        if self.fact.kind == OTHER_CODE:
            return f'it is about another code than the one you gave: "{self.fact.phrase}"'
        if self.contradicted:
            return f'it presupposes {self.fact.kind} you said is not the case: "{self.fact.phrase}"'
        return f'it presupposes {self.fact.kind} you never mentioned: "{self.fact.phrase}"'


@dataclass(frozen=True)
class CommonGround:
    """What the conversation stated: every entity term (``terms``), the head terms of each phrase (``heads``), and
    the terms the customer only ever said under a negation (``denied``: "it's steady, not flashing")."""

    terms: frozenset[str]
    heads: frozenset[str]
    denied: frozenset[str] = frozenset()
    #: the terms the customer only ever said outside a negation ("the coolant keeps dropping")
    affirmed: frozenset[str] = frozenset()
    #: every number said ("14.3" of "I measured 14.3V"): what states a reading
    numbers: frozenset[str] = frozenset()
    #: every make and model named, lowercased, with the make of each model: what states a vehicle
    vehicles: frozenset[str] = frozenset()
    #: the stems of the nouns named two of ("front and rear tires"): what states "both tires" (``pairs``)
    pairs: frozenset[str] = frozenset()
    #: the words the customer wrote outside a negation, as written: what an opposite value is read against
    said_words: frozenset[str] = frozenset()
    #: the trouble codes the customer gave, upper-cased ("P0420")
    codes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class _Triggers:
    events: tuple[tuple[str, ...], ...]
    jobs: frozenset[str]
    observations: frozenset[str]
    kinds: dict[str, tuple[str, ...]]
    determiners: frozenset[str]
    report_verbs: frozenset[str]
    diagnoses: tuple[tuple[str, ...], ...]
    hedges: frozenset[str]
    units: frozenset[str]


@lru_cache(maxsize=1)
def _triggers() -> _Triggers:
    data = json.loads(TRIGGERS_PATH.read_text(encoding="utf-8"))
    longest_first = lambda items: tuple(sorted((tuple(i.split()) for i in items), key=len, reverse=True))  # noqa: E731
    kinds = {word: tuple(group) for group in data["observation_kinds"] for word in group}
    return _Triggers(events=longest_first(data["event_triggers"]), jobs=frozenset(data["job_nouns"]),
                     observations=frozenset(data["observation_nouns"]), kinds=kinds, determiners=frozenset(data["determiners"]),
                     report_verbs=frozenset(data["report_verbs"]), diagnoses=longest_first(data["diagnostic_verbs"]),
                     hedges=frozenset(data["hedges"]), units=frozenset(data["reading_units"]))


def common_ground(texts: Iterable[str], normalizer: EntityNormalizer, *,
                  customer: Iterable[str] | None = None) -> CommonGround:
    """Return what ``texts`` (the customer's messages, the answers given) state, in the normaliser's terms.

    ``customer``: the customer's own messages, whose negations deny (default: every text); the bot's "if it doesn't
    start, ..." denies nothing."""
    texts = [t for t in texts if t]
    terms: set[str] = set()
    heads: set[str] = set()
    for text in texts:
        stated, named = _ground_of(text, normalizer)
        terms |= stated
        heads |= named
    negated: set[str] = set()
    affirmed: set[str] = set()
    said_words: set[str] = set()
    codes: set[str] = set()
    for text in texts if customer is None else [t for t in customer if t]:
        no, yes = _polarity_of(text, normalizer)
        negated |= no
        affirmed |= yes
        said_words.update(_negated_split(text)[1])
        codes.update(code.upper() for code in _TROUBLE_CODE.findall(text))
    numbers = frozenset(_numbers(t) for text in texts for t in _NUMBER.findall(text))
    vehicles = frozenset(v for text in texts for v in vehicles_named(text))
    return CommonGround(terms=frozenset(terms), heads=frozenset(heads), denied=frozenset(negated - affirmed),
                        affirmed=frozenset(affirmed - negated), numbers=numbers, vehicles=vehicles,
                        pairs=paired_nouns(texts), said_words=frozenset(said_words), codes=frozenset(codes))


def _numbers(token: str) -> str:
    return token.replace(",", ".")


@lru_cache(maxsize=4096)
def _ground_of(text: str, normalizer: EntityNormalizer) -> tuple[frozenset[str], frozenset[str]]:
    """Return the terms and phrase heads one text states: every later turn of a session reads the same texts again."""
    heads: set[str] = set()
    for phrase in _phrases(text):
        heads |= head_terms(normalizer.terms_of_text(phrase))
    terms = normalizer.terms_of_text(text)
    if _CODE_TOKEN.search(text):
        terms |= normalizer.terms_of_text("code")
    # a word made on a kind of evidence reports that kind: "headlights" a light, "taillight" too
    kinds = _kind_stems(normalizer)
    terms |= {kind for term in terms if " " not in term for kind in kinds if term != kind and term.endswith(kind)}
    return terms, frozenset(heads)


@lru_cache(maxsize=8)
def _kind_stems(normalizer: EntityNormalizer) -> frozenset[str]:
    """Return the stems of the words that name a kind of evidence ("light", "nois", "smoke"), four letters or more."""
    return frozenset(t for word in _triggers().kinds for t in normalizer.terms_of_text(word) if len(t) >= 4)


@lru_cache(maxsize=4096)
def _polarity_of(text: str, normalizer: EntityNormalizer) -> tuple[frozenset[str], frozenset[str]]:
    """Return (the terms ``text`` says only under a negation, the terms it says outside one)."""
    negated, affirmed = _negated_split(text)
    return normalizer.terms_of_text(" ".join(negated)), normalizer.terms_of_text(" ".join(affirmed))


def _negated_split(text: str, window: int = 0) -> tuple[list[str], list[str]]:
    """Return (the words within ``window`` (default ``NEG_WINDOW``) after a negator in their clause, the other words)
    of ``text``.

    A negator alone in its clause ("no, it's steady") answers a question and negates nothing after it."""
    negated: list[str] = []
    affirmed: list[str] = []
    for words, states in _clause_polarity(text, window):
        for word, state in zip(words, states):
            if state is not None:
                (negated if state else affirmed).append(word)
    return negated, affirmed


def _clause_polarity(text: str, window: int = 0) -> Iterator[tuple[list[str], list[bool | None]]]:
    """Yield each clause's words of ``text`` (lower-cased) and, per word, None for a negator, True for a word within
    ``window`` (default ``NEG_WINDOW``) after one, False for any other."""
    window = window or NEG_WINDOW
    for clause in _NEGATION_SCOPE_END.split(text.lower()):
        words, states, left = words_of(clause or ""), [], 0
        for word in words:
            if word in _NEGATORS or word.endswith("n't"):
                left = window
                states.append(None)
            else:
                states.append(left > 0)
                left = max(0, left - 1)
        yield words, states


def _phrases(text: str) -> list[str]:
    """Return the runs of content words of ``text`` between punctuation and function words ("ignition coils")."""
    out: list[str] = []
    for piece in re.split(r"[^\w'\- ]+", text):
        run: list[str] = []
        for word in entity_words(piece) + [""]:
            if word and is_entity_word(word):
                run.append(word)
            elif run:
                out.append(" ".join(run))
                run = []
    return out


def opening_sentence(tree: DiscourseTree | None, text: str) -> str:
    """Return the answer's opening sentence: the EDUs of its first sentence, else the text up to the first stop.

    A bare yes or no ("No. A sidewall bulge means ...") is no opening: the claim is the sentence after it."""
    if tree is not None and tree.edus:
        sentences: dict[int, list[str]] = {}
        for edu in tree.edus:
            sentences.setdefault(edu.sentence, []).append(edu.text.strip())
        texts = [" ".join(parts) for parts in sentences.values()]
    else:
        texts = _SENTENCE_END.split(text.strip(), maxsplit=2)[:2]
    return next((t for t in texts if not is_bare_response(t)), texts[0] if texts else "")


def misfit(text: str, ground: CommonGround, normalizer: EntityNormalizer, *,
           tree: DiscourseTree | None = None) -> Presupposition | None:
    """Return why the answer ``text`` is not for this conversation, or None: a fact its opening takes for granted,
    evidence its opening states that the customer said is absent, a diagnosed value whose opposite the customer said
    ("dim lights" to "the lights stay bright"), a premise anywhere that says the opposite, or trouble codes anywhere
    that are none of the customer's ("P0442" to "P0420").
    ``tree``: the answer's discourse tree, whose first EDUs give the opening sentence (None: split the text)."""
    opening = opening_sentence(tree, text)
    return (find_presupposition(opening, ground, normalizer) or denied_evidence(opening, ground, normalizer)
            or opposite_value(opening, ground, normalizer) or premise_clash(text, ground, normalizer)
            or other_code(text, ground))


def other_code(text: str, ground: CommonGround) -> Presupposition | None:
    """Return the trouble code the answer is about when the customer gave codes and none of the answer's, or None.

    "P0442 means a very small leak ..." to a customer whose code is P0420: a code is an identifier, so an answer
    naming only other codes (anywhere in it) is about another fault."""
    if not ground.codes:
        return None
    named = dict.fromkeys(code.upper() for code in _TROUBLE_CODE.findall(text))
    if not named or set(named) & ground.codes:
        return None
    first = next(iter(named))
    return Presupposition(fact=Fact(OTHER_CODE, first, frozenset({first.lower()}), "code"),
                          missing=frozenset({first.lower()}), contradicted=True)


def opposite_value(opening: str, ground: CommonGround, normalizer: EntityNormalizer) -> Presupposition | None:
    """Return the diagnosed subject of ``opening`` when it says a value whose opposite the customer said, or None.

    "Rapid clicking with dim lights is the classic sign of a weak battery" to a customer whose car "clicks once" and
    whose "dash lights stay bright" (``dtdialog.understanding.opposites``)."""
    found = _opening_subject(opening.lower())
    if found is None or found[2] > SUBJECT_WORDS:
        return None
    subject, verb, _ = found
    word = opposed(subject, ground.said_words)
    if word is None:
        return None
    phrase = " ".join([*subject, *verb])
    return Presupposition(fact=Fact(SYMPTOM, phrase, normalizer.terms_of_text(" ".join(subject)), "any"),
                          missing=frozenset({word}), contradicted=True)


def find_presupposition(opening: str, ground: CommonGround, normalizer: EntityNormalizer) -> Presupposition | None:
    """Return the first fact of ``opening`` that ``ground`` never stated or denied, or None."""
    for fact in presupposed_facts(opening, normalizer):
        against = denied(fact, ground)
        if against:
            return Presupposition(fact=fact, missing=against, contradicted=True)
        missing = unstated(fact, ground)
        if missing:
            return Presupposition(fact=fact, missing=missing)
    return None


def denied_evidence(opening: str, ground: CommonGround, normalizer: EntityNormalizer) -> Presupposition | None:
    """Return the evidence an answer's opening states as present that the customer said is absent, or None.

    "Losing coolant with no external leak, sweet-smelling white smoke and overheating under load are all consistent
    with a head gasket leak" to a customer who wrote "no white smoke". Only kinds of evidence count (a noise, a
    light, a code, a smell or smoke, a vibration), outside a negation and outside a hypothesis ("if you see white
    smoke"); the word before it must have been denied too, when it sets it apart ("blue smoke" to "no white
    smoke" is another observation)."""
    kinds = _triggers().kinds
    for words, states in _clause_polarity(_HYPOTHESIS.sub(" , ", opening.lower())):
        for k, word in enumerate(words):
            if states[k] is not False or word not in kinds or not normalizer.terms_of_text(word) <= ground.denied:
                continue
            modifier = normalizer.terms_of_text(words[k - 1]) if k and is_content_word(words[k - 1]) else frozenset()
            if not modifier - ground.denied:
                phrase = " ".join(words[max(0, k - 1):k + 1])
                return Presupposition(fact=Fact(SYMPTOM, phrase, normalizer.terms_of_text(phrase), "any"),
                                      missing=normalizer.terms_of_text(word), contradicted=True)
    return None


def premise_clash(text: str, ground: CommonGround, normalizer: EntityNormalizer) -> Presupposition | None:
    """Return the first premise of ``text`` (anywhere in the answer) that says the opposite of the customer, or None.

    "Since your coolant isn't dropping, ..." to a customer whose coolant keeps dropping: a premise ("since", "because",
    "given that", "now that") about the customer's own thing (it says "your") that denies what the customer affirmed,
    about something they named. The other way
    round is not judged: stems collide ("because starting fluid only proves ..." against "could not start")."""
    customer = ground.affirmed | ground.denied
    for premise in _premises(text.lower(), normalizer):
        clash = premise.negated & ground.affirmed
        if clash and (premise.terms - premise.negated) & customer:
            return Presupposition(fact=premise, missing=frozenset(clash), contradicted=True)
    return None


@lru_cache(maxsize=50_000)
def _premises(text: str, normalizer: EntityNormalizer) -> tuple[Fact, ...]:
    out = []
    for match in _PREMISE.finditer(text):
        clause = _CLAUSE_END.split(match.group(2), maxsplit=1)[0].strip()
        if not _POSSESSIVE & set(words_of(clause)):
            continue  # a general fact ("because cars with run-flats usually don't have a spare"), not the customer's case
        # the premise's own negation reaches its predicate only: "you aren't getting the noise" denies no noise
        negated_words, _ = _negated_split(clause, window=1)
        terms = normalizer.terms_of_text(clause)
        if terms:
            out.append(Fact(PREMISE, f"{match.group(1)} {clause}", terms, "any",
                            normalizer.terms_of_text(" ".join(negated_words))))
    return tuple(out)


def unstated(fact: Fact, ground: CommonGround) -> frozenset[str]:
    """Return the terms of ``fact`` that show it was never stated (empty: it was).

    A vehicle counts only against another one named: a make told as general knowledge ("The W12 engine produced by
    VW uses ...") answers a customer who named no car."""
    if fact.key == "vehicle" and not ground.vehicles:
        return frozenset()
    said = {"heads": ground.heads, "number": ground.numbers, "vehicle": ground.vehicles,
            "pair": ground.pairs}.get(fact.key, ground.terms)
    return frozenset() if fact.terms & said else fact.terms


def denied(fact: Fact, ground: CommonGround) -> frozenset[str]:
    """Return the terms ``fact`` asserts that the conversation only ever said under a negation (empty: none)."""
    return (fact.terms - fact.negated) & ground.denied


@lru_cache(maxsize=50_000)
def presupposed_facts(opening: str, normalizer: EntityNormalizer) -> tuple[Fact, ...]:
    """Return the facts ``opening`` (an answer's first sentence) takes as given, in the order met."""
    lowered = opening.lower()
    return (*_event_facts(lowered, normalizer), *_observation_facts(lowered, normalizer),
            *_symptom_facts(lowered, normalizer), *_reading_facts(lowered), *_vehicle_facts(opening),
            *_pair_facts(lowered))


def _pair_facts(opening: str) -> list[Fact]:
    """Return "both fluids" of an opening that refers back to two things (``dtdialog.understanding.pairs``)."""
    found = pair_phrase(opening)
    return [Fact(PAIR, found[0], frozenset({found[1]}), "pair")] if found else []


def _vehicle_facts(opening: str) -> list[Fact]:
    """Return the makes and models an opening names ("Nissan has issued bulletins ... on that generation")."""
    return [Fact(VEHICLE, name, frozenset({name}), "vehicle") for name in dict.fromkeys(names_in(opening, as_names=True))]


def _reading_facts(sentence: str) -> list[Fact]:
    """Return the reading an opening is about: a number and its unit at the head of its subject ("14.3 volts is a
    good charging voltage", "A 200 rpm change at steady speed is typical"), stated only by that number."""
    words = sentence.split()
    start = 1 if words and words[0] in ("a", "an", "the", "that", "this", "your") else 0
    number = _NUMBER.fullmatch(words[start]) if len(words) > start else None
    unit = words[start + 1].strip(",;:.") if number and len(words) > start + 1 else ""
    if number is None or unit not in _triggers().units:
        return []
    value = _numbers(number.group())
    return [Fact(READING, f"{words[start]} {unit}", frozenset({value}), "number")]


def _event_facts(sentence: str, normalizer: EntityNormalizer) -> list[Fact]:
    """Return "after a starter job" (a job on a part) and "since you replaced the pump" (a done action)."""
    out = []
    for match in _event_pattern().finditer(sentence):
        clause = " ".join(words_of(_CLAUSE_END.split(match.group(2), maxsplit=1)[0]))
        out.extend(_given_facts(match.group(1), clause, normalizer))
    return out


def _given_facts(trigger: str, clause: str, normalizer: EntityNormalizer) -> list[Fact]:
    """Return what the clause after a trigger states as done: a job on a part, else each done action's object."""
    job = _job_fact(clause, normalizer)
    if job is not None:
        return [job]
    actions = (head_terms(action.objects) for action in reported_in_clause(clause, normalizer))
    return [Fact(PRIOR_ACTION, f"{trigger} {clause}", terms, "heads") for terms in actions if terms]


@lru_cache(maxsize=1)
def _event_pattern() -> re.Pattern[str]:
    """Return the pattern of a trigger and the rest of its sentence ("since" + "you replaced the pump, check ...")."""
    alternatives = "|".join(r"\s+".join(map(re.escape, t)) for t in _triggers().events)
    # only where a clause starts: "a vibration after new tires are installed is common" states nothing as given
    return re.compile(rf"(?:^|[,;:]\s*|\b(?:and|but|so)\s+)({alternatives})\s+(?=(.*))")


def _job_fact(clause: str, normalizer: EntityNormalizer) -> Fact | None:
    """Return "a starter job": a job noun and the part named before it, or None."""
    words = clause.split()
    for k, word in enumerate(words[:NOUN_WINDOW + 2]):
        if word in _triggers().jobs and k:
            terms = head_terms(normalizer.terms_of_text(" ".join(words[:k])))
            if terms:
                return Fact(PRIOR_JOB, " ".join(words[:k + 1]), terms, "heads")
    return None


def _observation_facts(sentence: str, normalizer: EntityNormalizer) -> list[Fact]:
    """Return "that clicking noise", "your code" and "the code you got": evidence only the customer can report."""
    words, triggers, out = words_of(sentence), _triggers(), []
    for i, word in enumerate(words):
        if word in triggers.determiners:
            noun = _last_observation(words, i + 1)
            if noun is not None and not (word in ("that", "this") and _plural(words[noun])):
                out.extend(_noun_fact(words[i:noun + 1], words[i + 1:noun], words[noun], normalizer))
        elif word == "the":
            you = next((j for j in range(i + 2, min(i + 2 + NOUN_WINDOW, len(words))) if words[j] == "you"), None)
            if you is not None and words[you - 1] in triggers.observations and _reports(words[you + 1:you + 3]):
                out.extend(_noun_fact(words[i:you + 2], words[i + 1:you - 1], words[you - 1], normalizer))
    return out


def _last_observation(words: list[str], start: int) -> int | None:
    """Return where the noun phrase from ``start`` ends in a kind of evidence ("clicking noise": at noise), or None."""
    found = None
    for j in range(start, min(start + NOUN_WINDOW, len(words))):
        if not is_entity_word(words[j]):
            break
        if words[j] in _triggers().observations:
            found = j
    return found


def _plural(noun: str) -> bool:
    return noun.endswith("s") and not noun.endswith("ss")


def _reports(after_you: list[str]) -> bool:
    """Return True for "got", "'ve got", "are hearing" after "the X you": the customer has or reported X."""
    verbs = [w for w in after_you if w not in ("are", "were", "have", "'ve", "had", "'re")] or after_you[:1]
    return bool(verbs) and verbs[0] in _triggers().report_verbs


def _noun_fact(phrase: list[str], modifiers: list[str], noun: str, normalizer: EntityNormalizer) -> list[Fact]:
    """Return the fact of an observation phrase: its modifiers' terms set it apart, else any word of the noun's kind."""
    kind = " ".join(_triggers().kinds.get(noun, (noun,)))
    terms = normalizer.terms_of_text(" ".join(modifiers)) or normalizer.terms_of_text(kind)
    return [Fact(OBSERVATION, " ".join(phrase), terms, "modifiers")] if terms else []


def _symptom_facts(sentence: str, normalizer: EntityNormalizer) -> list[Fact]:
    """Return the subject of an opening diagnosis ("Rapid clicking with dim lights is the classic sign of ...").

    A subject longer than ``SUBJECT_WORDS`` is too long to name one symptom; only the work it states as done is read
    ("A shake that appears in a narrow speed range and starts after new tires is usually an imbalance")."""
    found = _opening_subject(sentence)
    if found is None:
        return []
    subject, verb, at = found
    if subject[0] in _DEFINITE or (len(subject) > 1 and subject[1] in _PRONOUNS):
        return []  # a definite subject ("the supplied values") is the customer's own report, in other words
    jobs = _subject_jobs(subject, normalizer)
    terms = normalizer.terms_of_text(" ".join(subject))
    if at > SUBJECT_WORDS or not terms:
        return jobs
    negated = normalizer.terms_of_text(" ".join(_negated_split(" ".join(subject))[0]))
    phrase = " ".join([*subject, *verb])
    return [Fact(SYMPTOM, phrase, terms, "any", negated), *_restrictions(subject, phrase, negated, normalizer), *jobs]


@lru_cache(maxsize=50_000)
def _opening_subject(sentence: str) -> tuple[tuple[str, ...], tuple[str, ...], int] | None:
    """Return the diagnosed subject of a lower-cased opening sentence (``_diagnosed_subject``): every turn reads the
    same candidates' openings again."""
    return _diagnosed_subject(words_of(_subject_text(sentence)))


def _diagnosed_subject(words: list[str]) -> tuple[tuple[str, ...], tuple[str, ...], int] | None:
    """Return (the subject without its hedges, the diagnostic verb, where the verb starts), or None."""
    triggers = _triggers()
    for i in range(1, min(len(words), LONG_SUBJECT_WORDS + 1)):
        verb = next((v for v in triggers.diagnoses if tuple(words[i:i + len(v)]) == v), None)
        if verb is None:
            continue
        subject = words[:i]
        while subject and subject[-1] in triggers.hedges:
            subject = subject[:-1]
        return (tuple(subject), verb, i) if subject else None
    return None


def _subject_text(sentence: str) -> str:
    """Return the words that may hold an opening diagnosis' subject: up to the first clause end, past a comma
    between the adjectives of its noun phrase ("A spongy, low pedal after caliper work means ...").

    "when" and "while" may sit inside the subject: "A battery light while driving means ..."."""
    first = _SUBJECT_END.search(sentence)
    if first is None:
        return sentence
    head = words_of(sentence[:first.start()])
    if first.group() == "," and head and head[0] in ("a", "an") and len(head) <= 2:
        rest = _SUBJECT_END.search(sentence, first.end())
        return sentence[:rest.start()] if rest else sentence
    return sentence[:first.start()]


def _subject_jobs(subject: Sequence[str], normalizer: EntityNormalizer) -> list[Fact]:
    """Return the work an "after" inside a diagnosed subject states as done ("A spongy, low pedal after caliper work
    means ...", "A shake that starts after new tires is usually ..."): a job on a part or a done action, never an
    event the customer may tell in other words ("after hitting something")."""
    return [fact for k, word in enumerate(subject[:-1]) if word == "after"
            for fact in _given_facts(word, " ".join(subject[k + 1:]), normalizer)]




def _evidence(subject: Sequence[str], phrase: str, negated: frozenset[str], normalizer: EntityNormalizer) -> list[Fact]:
    """Return one fact per kind of evidence the diagnosed subject names: "A battery light while driving means ..." to
    "How do I test my battery?" takes a warning light for granted, though "battery" was said. Any word of the kind
    states it ("a click" for "clicking"), but a named kind of it only itself ("A flickering oil light" is not the
    customer's flickering headlights); the subject's other words need only one of them said, as before."""
    kinds = _triggers().kinds
    groups = dict.fromkeys(kinds[w] for w in subject if w in kinds)
    facts = [Fact(SYMPTOM, phrase, normalizer.terms_of_text(" ".join(group)), "any", negated, group[0])
             for group in groups]
    # a named kind of it ("oil light": canonical "oil pressure light") is that one: a headlight does not state it;
    # no evidence to ask for, though: the customer who reported their headlights did report a light
    for fact in list(facts):
        for term in normalizer.terms_of_text(" ".join(subject)):
            if " " in term and term.split()[-1] in fact.terms:
                facts.append(Fact(SYMPTOM, phrase, frozenset({term}), "any", negated))
    return [fact for fact in facts if fact.terms]


def _restrictions(subject: Sequence[str], phrase: str, negated: frozenset[str],
                  normalizer: EntityNormalizer) -> list[Fact]:
    """Return the facts that set a diagnosed symptom apart, each of which must have been said too: what follows
    "only" ("A grinding noise only with the AC on"), and a participle before the symptom ("A flashing check engine
    light means a severe misfire" is not about a light that is on). An "after" clause is not one: "after hitting
    something" for "after I scraped over a high curb" is a paraphrase, and "Grinding after a long period of
    squealing" still fits a customer who only heard the grinding."""
    out = _evidence(subject, phrase, negated, normalizer)
    if "only" in subject:
        terms = normalizer.terms_of_text(" ".join(subject[subject.index("only") + 1:]))
        if terms:
            out.append(Fact(SYMPTOM, phrase, terms, "any", negated))
    head = subject[1:] if subject[0] in ("a", "an") else subject
    # a participle before a noun ("flashing check engine light"), not a gerund that is the symptom itself
    # ("Grinding after a long period of squealing")
    if len(head) > 1 and head[0].endswith("ing") and is_content_word(head[1]):
        terms = normalizer.terms_of_text(head[0])
        if terms:
            out.append(Fact(SYMPTOM, phrase, terms, "any", negated))
    return out
