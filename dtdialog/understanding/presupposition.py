"""Facts an answer's opening takes for granted, and whether the customer ever stated them.

"After a starter job, the most common mistakes are ..." answers someone who just replaced a starter; to a customer
who never mentioned one it reads as an answer to another person. ``presupposed_facts(opening, normalizer)``
(``dtdialog.understanding.opening_facts``, one reader per kind) reads the answer's opening sentence for six kinds of
presupposition trigger (past a bare yes or no: "No. A sidewall bulge means ..."
is read at its second sentence):

* **a prior event**: a subordinator that states its clause as given ("after", "since", "now that", ...) or as the
  situation the answer is for ("when") followed by a job on a part ("a starter job", "the timing belt change") or a
  done action ("you replaced the pump", "the battery is new", "new plugs and coils didn't help", read by
  ``dtdialog.understanding.tried``'s report reader);
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

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from dtdialog.understanding.entities import EntityNormalizer
from dtdialog.understanding.opening_facts import (
    CLAUSE_END,
    LONG_SUBJECT_WORDS,
    NUMBER,
    OBSERVATION,
    PAIR,
    PRIOR_ACTION,
    PRIOR_JOB,
    READING,
    SUBJECT_WORDS,
    SYMPTOM,
    TROUBLE_CODE,
    VEHICLE,
    Fact,
    clause_polarity,
    negated_split,
    number_key,
    opening_subject,
    presupposed_facts,
    trigger_words,
)
from dtdialog.understanding.opposites import opposed
from dtdialog.understanding.pairs import paired_nouns
from dtdialog.understanding.reply_branch import is_negator
from dtdialog.understanding.sibling_parts import customer_compounds, other_part
from dtdialog.understanding.tried import CHECKED, head_terms, recommendation_in
from dtdialog.understanding.unasked_response import is_bare_response
from dtdialog.understanding.vehicles import vehicles_named
from index.vocabulary import entity_words, is_content_word, is_entity_word, words_of
from parsers.tree import EDU, DiscourseTree

#: the kinds of fact and the reader are ``opening_facts``'s; they are named here too, where the checks are
__all__ = ["OBSERVATION", "OTHER_CODE", "OTHER_PART", "PAIR", "PREMISE", "PRIOR_ACTION", "PRIOR_JOB", "READING", "SYMPTOM", "VEHICLE",
           "CommonGround", "Fact", "Presupposition", "common_ground", "denied", "denied_evidence", "find_presupposition",
           "misfit", "opening_sentence", "opposite_value", "other_code", "premise_clash", "presupposed_facts",
           "unstated"]

#: an answer about a trouble code ("P0442 means a very small leak") to a customer who gave another one (P0420)
OTHER_CODE = "another code"
PREMISE = "a premise"
#: an answer logged for a sibling part ("clutch pedal") to a customer who named another of its kind ("brake pedal")
OTHER_PART = "another part"
#: a premise about the customer's own thing says "your" ("since your coolant isn't dropping"); "because you aren't
#: waiting" is advice, not a claim about their case
_POSSESSIVE = frozenset({"your", "yours"})
_PREMISE = re.compile(r"\b(since|because|given that|now that)\s+(.+?)(?=[.!?;]|$)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
#: a clause that supposes instead of stating: its evidence is a question to the customer, not a claim about them
_HYPOTHESIS = re.compile(r"\b(?:if|unless|whether|in case|when|once)\b[^,;:.!?]*")
#: a trouble code as written ("P0174", "E-404"): it states that a code was read, though the word "code" is not said
_CODE_TOKEN = re.compile(r"\b[A-Za-z]{1,2}-?\d{3,5}\b")




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
        if self.fact.kind == OTHER_PART:
            return f'it was written for another part than the one you named: "{self.fact.phrase}"'
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
    #: the customer's noun compounds as (modifier, head) lemmas ("brake", "pedal"): what names their part
    compounds: frozenset[tuple[str, str]] = frozenset()
    #: the terms the customer said in a clause with no negator at all ("my check engine light is on"): what a symptom
    #: an answer states under a negation contradicts ("the light never comes on" is not one)
    plain: frozenset[str] = frozenset()






def common_ground(texts: Iterable[str], normalizer: EntityNormalizer, *,
                  customer: Iterable[str] | None = None) -> CommonGround:
    """Return what ``texts`` (the customer's messages, the answers given) state, in the normaliser's terms.

    ``customer``: the customer's own messages, whose negations deny (default: every text); the bot's "if it doesn't
    start, ..." denies nothing."""
    texts = [t for t in texts if t]
    own_texts = None if customer is None else frozenset(t for t in customer if t)
    terms: set[str] = set()
    heads: set[str] = set()
    for text in texts:
        stated, named = _ground_of(text, normalizer)
        terms |= stated
        # a job or an action is the customer's history: the bot naming a part states it only by advising work on it
        # ("Replace the thermostat", then "Now that the thermostat is new"), not by mentioning it ("Check the coolant
        # level" is no coolant change)
        heads |= named if own_texts is None or text in own_texts else _advised_heads(text, normalizer)
    negated: set[str] = set()
    affirmed: set[str] = set()
    said_words: set[str] = set()
    codes: set[str] = set()
    for text in texts if customer is None else [t for t in customer if t]:
        no, yes = _polarity_of(text, normalizer)
        negated |= no
        affirmed |= yes
        said_words.update(negated_split(text)[1])
        codes.update(code.upper() for code in TROUBLE_CODE.findall(text))
    numbers = frozenset(number_key(t) for text in texts for t in NUMBER.findall(text))
    vehicles = frozenset(v for text in texts for v in vehicles_named(text))
    own = texts if customer is None else [t for t in customer if t]
    plain = frozenset().union(*(_plain_terms(t, normalizer) for t in own))
    # "no check engine light" denies that light, not every engine: a word negated only inside a longer term is left out
    denied = {t for t in negated - affirmed if " " in t or not any(t in c.split() for c in negated if " " in c)}
    return CommonGround(terms=frozenset(terms), heads=frozenset(heads), denied=frozenset(denied),
                        affirmed=frozenset(affirmed - negated), numbers=numbers, vehicles=vehicles,
                        pairs=paired_nouns(texts), said_words=frozenset(said_words), codes=frozenset(codes),
                        compounds=customer_compounds(own), plain=plain - negated)




#: where a bot's answer parts into clauses that may each advise: sentence ends, semicolons, commas, "and then"
_ADVICE_CLAUSE = re.compile(r"(?<=[.!?;,])\s+|\s+(?:and then|then|and)\s+")


@lru_cache(maxsize=4096)
def _advised_heads(text: str, normalizer: EntityNormalizer) -> frozenset[str]:
    """Return the head terms of the parts a bot's answer advises work on (a replacement, a flush, a top-up, ...; not
    a check), clause by clause."""
    heads: set[str] = set()
    for k, clause in enumerate(_ADVICE_CLAUSE.split(text)):
        advice = recommendation_in(EDU(index=k, text=clause, start=0, end=len(clause), sentence=k), normalizer)
        if advice is not None and advice.verb_class != CHECKED:  # a check does no job on the part
            heads |= head_terms(advice.objects)
    return frozenset(heads)


@lru_cache(maxsize=4096)
def _ground_of(text: str, normalizer: EntityNormalizer) -> tuple[frozenset[str], frozenset[str]]:
    """Return the terms and phrase heads one text states: every later turn of a session reads the same texts again."""
    heads: set[str] = set()
    for phrase in _phrases(text):
        heads |= head_terms(normalizer.terms_of_text(phrase))
    terms = normalizer.terms_of_text(text)
    if _CODE_TOKEN.search(text):
        # a trouble code is its own identifier too, whatever fault the synonym list reads it as ("P0420")
        terms |= normalizer.terms_of_text("code") | {code.lower() for code in TROUBLE_CODE.findall(text)}
    # a word made on a kind of evidence reports that kind: "headlights" a light, "taillight" too
    kinds = _kind_stems(normalizer)
    terms |= {kind for term in terms if " " not in term for kind in kinds if term != kind and term.endswith(kind)}
    return terms, frozenset(heads)


@lru_cache(maxsize=8)
def _kind_stems(normalizer: EntityNormalizer) -> frozenset[str]:
    """Return the stems of the words that name a kind of evidence ("light", "nois", "smoke"), four letters or more."""
    return frozenset(t for word in trigger_words().kinds for t in normalizer.terms_of_text(word) if len(t) >= 4)


@lru_cache(maxsize=4096)
def _polarity_of(text: str, normalizer: EntityNormalizer) -> tuple[frozenset[str], frozenset[str]]:
    """Return (the terms ``text`` says only under a negation, the terms it says outside one)."""
    negated, affirmed = negated_split(text)
    return normalizer.terms_of_text(" ".join(negated)), normalizer.terms_of_text(" ".join(affirmed))






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
           tree: DiscourseTree | None = None, logged_question: str = "") -> Presupposition | None:
    """Return why the answer ``text`` is not for this conversation, or None: a fact its opening takes for granted,
    evidence its opening states that the customer said is absent, a diagnosed value whose opposite the customer said
    ("dim lights" to "the lights stay bright"), a premise anywhere that says the opposite, trouble codes anywhere
    that are none of the customer's ("P0442" to "P0420"), or a sibling of the customer's part in the question it was
    logged for ("clutch pedal" to "brake pedal", ``sibling_parts``).
    ``tree``: the answer's discourse tree, whose first EDUs give the opening sentence (None: split the text);
    ``logged_question``: the question the answer was logged for ("": not checked)."""
    opening = opening_sentence(tree, text)
    return (find_presupposition(opening, ground, normalizer) or denied_evidence(opening, ground, normalizer)
            or opposite_value(opening, ground, normalizer) or premise_clash(text, ground, normalizer)
            or other_code(text, ground) or sibling_part(logged_question, ground))


def sibling_part(logged_question: str, ground: CommonGround) -> Presupposition | None:
    """Return the part the answer's logged question names when it is a sibling of the customer's, or None."""
    found = other_part(ground.compounds, ground.said_words, logged_question) if logged_question else None
    if found is None:
        return None
    return Presupposition(fact=Fact(OTHER_PART, found[0], frozenset({found[1]}), "part"), missing=frozenset({found[1]}))


def other_code(text: str, ground: CommonGround) -> Presupposition | None:
    """Return the trouble code the answer is about when the customer gave codes and none of the answer's, or None.

    "P0442 means a very small leak ..." to a customer whose code is P0420: a code is an identifier, so an answer
    naming only other codes (anywhere in it) is about another fault."""
    if not ground.codes:
        return None
    named = dict.fromkeys(code.upper() for code in TROUBLE_CODE.findall(text))
    if not named or set(named) & ground.codes:
        return None
    first = next(iter(named))
    return Presupposition(fact=Fact(OTHER_CODE, first, frozenset({first.lower()}), "code"),
                          missing=frozenset({first.lower()}), contradicted=True)


def opposite_value(opening: str, ground: CommonGround, normalizer: EntityNormalizer) -> Presupposition | None:
    """Return the diagnosed subject of ``opening`` when it says a value whose opposite the customer said, or None.

    "Rapid clicking with dim lights is the classic sign of a weak battery" to a customer whose car "clicks once" and
    whose "dash lights stay bright" (``dtdialog.understanding.opposites``)."""
    found = opening_subject(opening.lower())
    if found is None or found[2] > LONG_SUBJECT_WORDS:
        return None
    subject, verb, _ = found
    # a long subject's values sit at its head ("Clear, odorless water dripping under ... after using the AC")
    word = opposed(subject[:SUBJECT_WORDS], ground.said_words)
    if word is None:
        return None
    phrase = " ".join([*subject, *verb])
    return Presupposition(fact=Fact(SYMPTOM, phrase, normalizer.terms_of_text(" ".join(subject)), "any"),
                          missing=frozenset({word}), contradicted=True)


def find_presupposition(opening: str, ground: CommonGround, normalizer: EntityNormalizer) -> Presupposition | None:
    """Return the first fact of ``opening`` that ``ground`` never stated or denied, or None."""
    for fact in presupposed_facts(opening, normalizer):
        against = denied(fact, ground) or affirmed_against(fact, ground, normalizer)
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
    for word, before in stated_evidence(opening):
        if not normalizer.terms_of_text(word) <= ground.denied:
            continue
        modifier = normalizer.terms_of_text(before) if before and is_content_word(before) else frozenset()
        if not modifier - ground.denied:
            phrase = f"{before} {word}" if before else word
            return Presupposition(fact=Fact(SYMPTOM, phrase, normalizer.terms_of_text(phrase), "any"),
                                  missing=normalizer.terms_of_text(word), contradicted=True)
    return None


@lru_cache(maxsize=50_000)
def stated_evidence(opening: str) -> tuple[tuple[str, str], ...]:
    """Return each kind of evidence ``opening`` states as present (outside a negation and a hypothesis), with the word
    before it in its clause ("" at the clause's start): read once per answer, not once per turn."""
    kinds = trigger_words().kinds
    return tuple((word, words[k - 1] if k else "")
                 for words, states in clause_polarity(_HYPOTHESIS.sub(" , ", opening.lower()))
                 for k, word in enumerate(words) if states[k] is False and word in kinds)


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
        clause = CLAUSE_END.split(match.group(2), maxsplit=1)[0].strip()
        if not _POSSESSIVE & set(words_of(clause)):
            continue  # a general fact ("because cars with run-flats usually don't have a spare"), not the customer's case
        # the premise's own negation reaches its predicate only: "you aren't getting the noise" denies no noise
        negated_words, _ = negated_split(clause, window=1)
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


def affirmed_against(fact: Fact, ground: CommonGround, normalizer: EntityNormalizer) -> frozenset[str]:
    """Return the terms ``fact`` states under a negation that the customer said in a plain clause ("No spark and
    no check engine light at key-on suggests ..." to "My check engine light is on"). A bare kind of evidence ("light")
    is left out: "no check engine light" says nothing of the headlights."""
    kinds = _kind_stems(normalizer)
    return frozenset(t for t in head_terms(fact.negated) & ground.plain if " " in t or t not in kinds)


@lru_cache(maxsize=4096)
def _plain_terms(text: str, normalizer: EntityNormalizer) -> frozenset[str]:
    """Return the terms of the clauses of ``text`` that hold no negator anywhere ("my check engine light is on")."""
    clauses = (c for c in CLAUSE_END.split(text.lower()) if c and not any(map(is_negator, words_of(c))))
    return frozenset().union(*(normalizer.terms_of_text(c) for c in clauses))
