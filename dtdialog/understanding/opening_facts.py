"""What an answer's opening sentence takes for granted: the facts ``presupposed_facts`` reads, one reader per kind.

The kinds, their trigger words (``resources/presupposition_triggers.json``: English grammar and kinds of evidence)
and the negation window the readers share live here; ``dtdialog.understanding.presupposition`` holds the common
ground and the checks that judge these facts against it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from dtdialog.understanding.entities import EntityNormalizer
from dtdialog.understanding.pairs import pair_phrase
from dtdialog.understanding.tried import head_terms, reported_in_clause
from dtdialog.understanding.vehicles import names_in
from index.vocabulary import is_content_word, is_entity_word, words_of

TRIGGERS_PATH = Path(__file__).resolve().parent.parent / "resources" / "presupposition_triggers.json"
PRIOR_JOB, PRIOR_ACTION, OBSERVATION, SYMPTOM = "a prior job", "a prior action", "an observation", "a symptom"
READING = "a reading"
VEHICLE = "a vehicle"
#: "Both fluids can be red ..." refers back to two things: a customer who named one never mentioned the second
PAIR = "a second one"
#: a number as said: "14.3", "14,3" and "14.3V" are one reading
NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
#: how many words may stand between a determiner and the kind of evidence ("that P0420 code", "your check engine light")
NOUN_WINDOW = 3
#: a diagnosis' subject longer than this is not one noun phrase ("The first thing to know when ... means")
SUBJECT_WORDS = 12
#: how far a diagnostic verb is looked for: a longer subject is read only for the work it states as done
LONG_SUBJECT_WORDS = 24
CLAUSE_END = re.compile(r"[,;:.!?()]|\s(?:but|so|and then|because|which|while|when|if)\s")
_SUBJECT_END = re.compile(r"[,;:.!?()]|\s(?:but|so|and then|because|which|if)\s")
#: a trouble code as written, which names one fault: a letter and four digits or hex digits ("P0420", "U0100")
TROUBLE_CODE = re.compile(r"\b[A-Za-z][0-9][0-9A-Fa-f]{3}\b")
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
    #: "some", "a little": a subject that opens with one states a generality ("Some corrosion is normal")
    generic: tuple[tuple[str, ...], ...] = ()
    #: heads of noun compounds that name no part ("highway speed"): ``dtdialog.understanding.sibling_parts``
    non_part_heads: frozenset[str] = frozenset()
    #: pairs of word groups that exclude each other ("dim" / "bright"): ``dtdialog.understanding.opposites``
    opposites: tuple[tuple[frozenset[str], frozenset[str]], ...] = ()
    #: more such pairs, read only between two replies to the same answer ("low" / "full")
    reply_opposites: tuple[tuple[frozenset[str], frozenset[str]], ...] = ()


@lru_cache(maxsize=1)
def trigger_words() -> _Triggers:
    data = json.loads(TRIGGERS_PATH.read_text(encoding="utf-8"))
    longest_first = lambda items: tuple(sorted((tuple(i.split()) for i in items), key=len, reverse=True))  # noqa: E731
    kinds = {word: tuple(group) for group in data["observation_kinds"] for word in group}
    return _Triggers(events=longest_first(data["event_triggers"]), jobs=frozenset(data["job_nouns"]),
                     observations=frozenset(data["observation_nouns"]), kinds=kinds, determiners=frozenset(data["determiners"]),
                     report_verbs=frozenset(data["report_verbs"]), diagnoses=longest_first(data["diagnostic_verbs"]),
                     hedges=frozenset(data["hedges"]), units=frozenset(data["reading_units"]),
                     opposites=_pairs(data.get("opposite_values", ())),
                     reply_opposites=_pairs(data.get("reply_opposite_values", ())),
                     generic=longest_first(data.get("generic_quantifiers", ())),
                     non_part_heads=frozenset(data.get("non_part_heads", ())))


def _pairs(items) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    return tuple((frozenset(a), frozenset(b)) for a, b in items)


def number_key(token: str) -> str:
    return token.replace(",", ".")


def negated_split(text: str, window: int = 0) -> tuple[list[str], list[str]]:
    """Return (the words within ``window`` (default ``NEG_WINDOW``) after a negator in their clause, the other words)
    of ``text``.

    A negator alone in its clause ("no, it's steady") answers a question and negates nothing after it."""
    negated: list[str] = []
    affirmed: list[str] = []
    for words, states in clause_polarity(text, window):
        for word, state in zip(words, states):
            if state is not None:
                (negated if state else affirmed).append(word)
    return negated, affirmed


def clause_polarity(text: str, window: int = 0) -> Iterator[tuple[list[str], list[bool | None]]]:
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
    number = NUMBER.fullmatch(words[start]) if len(words) > start else None
    unit = words[start + 1].strip(",;:.") if number and len(words) > start + 1 else ""
    if number is None or unit not in trigger_words().units:
        return []
    value = number_key(number.group())
    return [Fact(READING, f"{words[start]} {unit}", frozenset({value}), "number")]


def _event_facts(sentence: str, normalizer: EntityNormalizer) -> list[Fact]:
    """Return "after a starter job" (a job on a part) and "since you replaced the pump" (a done action)."""
    out = []
    for match in _event_pattern().finditer(sentence):
        clause = " ".join(words_of(CLAUSE_END.split(match.group(2), maxsplit=1)[0]))
        out.extend(_given_facts(match.group(1), clause, normalizer))
    return out


def _given_facts(trigger: str, clause: str, normalizer: EntityNormalizer) -> list[Fact]:
    """Return what the clause after a trigger states as done: a job on a part, else each done action's object."""
    job = _job_fact(clause, normalizer)
    if job is not None:
        return [job]
    # "new plugs and coils didn't help and the engine runs smoothly": the done action is the first clause; a clause
    # with its own subject after "and" is another statement (read whole when the first holds no action of its own)
    parts = _COORDINATED.split(clause)
    if len(parts) > 1 and not reported_in_clause(parts[0], normalizer):
        parts = [clause]
    actions = (head_terms(action.objects) for part in parts for action in reported_in_clause(part, normalizer))
    return [Fact(PRIOR_ACTION, f"{trigger} {clause}", terms, "heads") for terms in actions if terms]


#: "and" before a determiner or pronoun: where a coordinated clause with its own subject may begin
_COORDINATED = re.compile(r"\s+and\s+(?=(?:the|my|your|its|it|this|that|these|those|there)\b)")


@lru_cache(maxsize=1)
def _event_pattern() -> re.Pattern[str]:
    """Return the pattern of a trigger and the rest of its sentence ("since" + "you replaced the pump, check ...")."""
    alternatives = "|".join(r"\s+".join(map(re.escape, t)) for t in trigger_words().events)
    # only where a clause starts: "a vibration after new tires are installed is common" states nothing as given
    return re.compile(rf"(?:^|[,;:]\s*|\b(?:and|but|so)\s+)({alternatives})\s+(?=(.*))")


def _job_fact(clause: str, normalizer: EntityNormalizer) -> Fact | None:
    """Return "a starter job": a job noun and the part named before it, or None."""
    words = clause.split()
    for k, word in enumerate(words[:NOUN_WINDOW + 2]):
        if word in trigger_words().jobs and k:
            terms = head_terms(normalizer.terms_of_text(" ".join(words[:k])))
            if terms:
                return Fact(PRIOR_JOB, " ".join(words[:k + 1]), terms, "heads")
    return None


def _observation_facts(sentence: str, normalizer: EntityNormalizer) -> list[Fact]:
    """Return "that clicking noise", "your code" and "the code you got": evidence only the customer can report."""
    words, triggers, out = words_of(sentence), trigger_words(), []
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
        if words[j] in trigger_words().observations:
            found = j
    return found


def _plural(noun: str) -> bool:
    return noun.endswith("s") and not noun.endswith("ss")


def _reports(after_you: list[str]) -> bool:
    """Return True for "got", "'ve got", "are hearing" after "the X you": the customer has or reported X."""
    verbs = [w for w in after_you if w not in ("are", "were", "have", "'ve", "had", "'re")] or after_you[:1]
    return bool(verbs) and verbs[0] in trigger_words().report_verbs


def _noun_fact(phrase: list[str], modifiers: list[str], noun: str, normalizer: EntityNormalizer) -> list[Fact]:
    """Return the fact of an observation phrase: its modifiers' terms set it apart, else any word of the noun's kind."""
    kind = " ".join(trigger_words().kinds.get(noun, (noun,)))
    # a trouble code ("that P0420 code") is an identifier: read as itself, not as the fault the synonyms give it
    codes = [m for m in modifiers if TROUBLE_CODE.fullmatch(m)]
    words = [m for m in modifiers if m not in codes]
    terms = frozenset(codes) | (normalizer.terms_of_text(" ".join(words)) if words else frozenset())
    terms = terms or normalizer.terms_of_text(kind)
    return [Fact(OBSERVATION, " ".join(phrase), terms, "modifiers")] if terms else []


def _symptom_facts(sentence: str, normalizer: EntityNormalizer) -> list[Fact]:
    """Return the subject of an opening diagnosis ("Rapid clicking with dim lights is the classic sign of ...").

    A subject longer than ``SUBJECT_WORDS`` is too long to name one symptom; only the work it states as done is read
    ("A shake that appears in a narrow speed range and starts after new tires is usually an imbalance")."""
    found = opening_subject(sentence)
    if found is None:
        # "A little softness after a caliper change can come from ...": a generality, yet about the time after a job
        general = opening_subject(sentence, general=True)
        return _subject_jobs(general[0], normalizer) if general is not None else []
    subject, verb, at = found
    if subject[0] in _DEFINITE or (len(subject) > 1 and subject[1] in _PRONOUNS):
        return []  # a definite subject ("the supplied values") is the customer's own report, in other words
    jobs = _subject_jobs(subject, normalizer)
    terms = normalizer.terms_of_text(" ".join(subject))
    if at > SUBJECT_WORDS or not terms:
        return jobs
    negated = normalizer.terms_of_text(" ".join(negated_split(" ".join(subject))[0]))
    phrase = " ".join([*subject, *verb])
    return [Fact(SYMPTOM, phrase, terms, "any", negated), *_restrictions(subject, phrase, negated, normalizer), *jobs]


@lru_cache(maxsize=50_000)
def opening_subject(sentence: str, *, general: bool = False) -> tuple[tuple[str, ...], tuple[str, ...], int] | None:
    """Return the diagnosed subject of a lower-cased opening sentence (``_diagnosed_subject``): every turn reads the
    same candidates' openings again. ``general``: only a subject that states a generality ("Some noise after a brake
    job is normal"): no symptom of the customer's, though the work it comes after is taken as done."""
    return _diagnosed_subject(words_of(_subject_text(sentence)), general=general)


def _diagnosed_subject(words: list[str], *, general: bool = False) -> tuple[tuple[str, ...], tuple[str, ...], int] | None:
    """Return (the subject without its hedges, the diagnostic verb, where the verb starts), or None; only a subject
    that opens with a generic quantifier when ``general``, only one that does not otherwise."""
    triggers = trigger_words()
    for i in range(1, min(len(words), LONG_SUBJECT_WORDS + 1)):
        verb = next((v for v in triggers.diagnoses if tuple(words[i:i + len(v)]) == v), None)
        if verb is None:
            continue
        subject = words[:i]
        while subject and subject[-1] in triggers.hedges:
            subject = subject[:-1]
        if any(tuple(subject[:len(q)]) == q for q in triggers.generic) is not general:
            return None  # "Some corrosion is normal over time": a generality, no symptom of this customer's
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
    adjectives = head and (head[0] in ("a", "an") and len(head) <= 2 or len(head) == 1 and _adjective_next(sentence,
                                                                                                            first.end()))
    if first.group() == "," and adjectives:
        rest = _SUBJECT_END.search(sentence, first.end())
        return sentence[:rest.start()] if rest else sentence
    return sentence[:first.start()]


def _adjective_next(sentence: str, at: int) -> bool:
    """Return True when the word after a one-word head's comma goes on its noun phrase ("Clear, odorless water"),
    not a clause ("Yes, the starter ...", "Usually, a click ...")."""
    after = words_of(sentence[at:at + 40])
    return bool(after) and after[0] not in _DEFINITE | {"a", "an", "if", "when", "as"} and is_entity_word(after[0])


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
    kinds = trigger_words().kinds
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
    out.extend(_head_fact(head, phrase, negated, normalizer))
    return out


#: Words after which a diagnosed subject's head noun phrase has ended ("Grinding | after a long period of squealing",
#: "Rapid clicking | with dim lights"): what follows qualifies the symptom, the head names it.
_HEAD_END = frozenset({"after", "with", "at", "in", "on", "during", "while", "when", "from", "of", "that", "which",
                       "under", "over", "only", "before", "near", "and", "or", "but", "if", "without", "whenever"})


def _head_fact(head: Sequence[str], phrase: str, negated: frozenset[str], normalizer: EntityNormalizer) -> list[Fact]:
    """Return the one kind of evidence the subject's head names by its own word ("grinding", "squeal", "click"), which
    must have been said itself: "Grinding after a long period of squealing means ..." to a customer who reported a
    squeal, and no grinding, takes the grinding for granted, though the squeal is one of its words. Only such a word:
    other heads are often the answer's words for what the customer told in theirs ("Excessive body roll" for "leans
    a lot more in corners"), and a bare kind ("Noise that started ...") is stated by any word of its kind
    (``_evidence``)."""
    kinds = trigger_words().kinds
    named = []
    for word in head:
        if word in _HEAD_END:
            break
        if word in kinds and word.rstrip("s") not in (kinds[word][0], "sound"):
            named.append(word)
    terms = normalizer.terms_of_text(" ".join(named)) if named else frozenset()
    return [Fact(SYMPTOM, phrase, terms, "any", negated)] if terms else []
