"""Syntactic generalization: common sub-phrases of same-type phrases, their scores, and sg_score."""

import pytest

from dtdialog.selection.syntactic_generalization import (
    CommonPhrase,
    PhraseChunk,
    SyntacticGeneralizer,
    generalize_phrase_lists,
    generalize_phrases,
    reduce_by_subsumption,
)


def np_(*pairs: str) -> PhraseChunk:
    return PhraseChunk("NP", tuple(p.split("/")[0] for p in pairs), tuple(p.split("/")[1] for p in pairs))


def vp(*pairs: str) -> PhraseChunk:
    return PhraseChunk("VP", tuple(p.split("/")[0] for p in pairs), tuple(p.split("/")[1] for p in pairs))


@pytest.fixture
def rule_parser():
    """The rule parser with its spaCy pipeline loaded (skips when the model is not installed)."""
    from parsers.errors import ModelNotAvailableError
    from parsers.rule_parser import RuleParser

    parser = RuleParser()
    try:
        assert parser.nlp is not None  # loads spaCy
    except ModelNotAvailableError as exc:
        pytest.skip(str(exc))
    return parser


def test_common_words_kept_in_order_and_edge_wildcards_trimmed():
    g = generalize_phrases(np_("the/DET", "fuel/NOUN", "pressure/NOUN"), np_("a/DET", "fuel/NOUN", "pump/NOUN"))
    assert g.lemmas == ("fuel",) and g.score == pytest.approx(1.0)


def test_whole_phrase_match_and_pos_weights():
    g = generalize_phrases(vp("check/VERB", "the/DET", "fuel/NOUN", "pressure/NOUN"),
                           vp("check/VERB", "fuel/NOUN", "pressure/NOUN"))
    assert g.lemmas == ("check", "fuel", "pressure")
    assert g.score == pytest.approx(0.5 + 1.0 + 1.0)


def test_interior_pos_only_match_becomes_a_wildcard():
    g = generalize_phrases(vp("replace/VERB", "two/NUM", "plug/NOUN"), vp("replace/VERB", "four/NUM", "plug/NOUN"))
    assert g.lemmas == ("replace", "*", "plug") and g.pos == ("VERB", "NUM", "NOUN")
    assert g.score == pytest.approx(0.5 + 0.7 + 1.0)


def test_no_generalization_across_types_or_without_a_shared_content_word():
    assert generalize_phrases(np_("the/DET", "car/NOUN"), vp("car/NOUN")) is None
    assert generalize_phrases(np_("the/DET", "car/NOUN"), np_("the/DET", "truck/NOUN")) is None


def test_subsumed_generalizations_are_dropped():
    long = CommonPhrase("NP", ("fuel", "pressure"), ("NOUN", "NOUN"), 2.0)
    short = CommonPhrase("NP", ("fuel",), ("NOUN",), 1.0)
    other_type = CommonPhrase("PP", ("fuel",), ("NOUN",), 1.0)
    assert reduce_by_subsumption([short, long, other_type, long]) == [long, other_type]


def test_phrase_lists_only_pair_phrases_sharing_a_lemma():
    q = [np_("the/DET", "battery/NOUN"), vp("start/VERB", "the/DET", "car/NOUN")]
    a = [np_("a/DET", "new/ADJ", "battery/NOUN"), np_("the/DET", "car/NOUN"), vp("start/VERB", "it/PRON")]
    found = {(c.kind, c.lemmas) for c in generalize_phrase_lists(q, a)}
    assert found == {("NP", ("battery",)), ("VP", ("start",))}


@pytest.fixture(scope="module")
def sg():
    try:
        return SyntacticGeneralizer()
    except Exception as exc:  # noqa: BLE001 - no spaCy model: skip with the reason
        pytest.skip(f"spaCy model unavailable: {exc}")


def test_parsed_pair_gives_the_expected_common_phrases(sg):
    common = {(c.kind, " ".join(c.lemmas)) for c in
              sg.generalize("How do I check the fuel pressure on my Honda?", "Check the fuel pressure with a gauge.")}
    assert ("NP", "the fuel pressure") in common
    assert any(kind == "VP" and text.startswith("check") and "pressure" in text for kind, text in common)
    brakes = {(c.kind, " ".join(c.lemmas)) for c in sg.generalize("My brake pads are worn.", "Replace the worn brake pads.")}
    assert any(kind == "NP" and "brake pad" in text for kind, text in brakes)


def test_sg_score_orders_related_above_unrelated(sg):
    q = "The engine cranks but will not start after I replaced the battery."
    related = "If the engine cranks but does not start, check the fuel pump and the spark plugs."
    unrelated = "Rotate the tires every six months and keep the tire pressure right."
    assert sg.score(q, q) == pytest.approx(1.0)
    assert sg.score(q, related) > sg.score(q, unrelated) >= 0.0
    assert sg.score("", related) == 0.0


def test_parses_are_cached(sg):
    text = "Check the coolant level when the engine is cold."
    first = sg.analyze(text)
    assert sg.analyze(text) is first
    sg.warm([text, "Replace the thermostat."])
    assert sg.analyze("Replace the thermostat.")[0]


def _reference_generalization(p1, p2):
    """The alignment written plainly (one DP cell at a time, the pair weight recomputed where needed)."""
    import math

    from dtdialog.selection.syntactic_generalization import CONTENT_POS, word_weight

    def pair(i, j):
        a, b = p1.pos[i], p2.pos[j]
        if not (a == b or (a in ("NOUN", "PROPN") and b in ("NOUN", "PROPN"))):
            return None
        lemma = p1.lemmas[i] if p1.lemmas[i] == p2.lemmas[j] else "*"
        return lemma, a, word_weight(lemma, a)

    if p1.kind != p2.kind or not (p1.content & p2.content):
        return None
    n, m = len(p1.lemmas), len(p2.lemmas)
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            found = pair(i, j)
            best[i][j] = max(best[i + 1][j], best[i][j + 1])
            if found is not None:
                best[i][j] = max(best[i][j], found[2] + best[i + 1][j + 1])
    kept, i, j = [], 0, 0
    while i < n and j < m:
        found = pair(i, j)
        if found is not None and math.isclose(best[i][j], found[2] + best[i + 1][j + 1]):
            kept.append(found[:2])
            i, j = i + 1, j + 1
        elif math.isclose(best[i][j], best[i + 1][j]):
            i += 1
        else:
            j += 1
    while kept and kept[0][0] == "*":
        kept.pop(0)
    while kept and kept[-1][0] == "*":
        kept.pop()
    if not any(lem != "*" and p in CONTENT_POS for lem, p in kept):
        return None
    return tuple(k[0] for k in kept), tuple(k[1] for k in kept), sum(word_weight(lem, p) for lem, p in kept)


def test_generalize_phrases_equals_the_plain_alignment_on_random_phrases():
    """The optimised alignment gives the plain DP's generalization, to the last bit of its score."""
    import random

    from dtdialog.selection.syntactic_generalization import generalize_phrases
    from parsers.phrase_chunks import PhraseChunk

    rng = random.Random(3)
    words = [("engine", "NOUN"), ("motor", "NOUN"), ("ford", "PROPN"), ("the", "DET"), ("a", "DET"),
             ("check", "VERB"), ("be", "AUX"), ("get", "VERB"), ("new", "ADJ"), ("2", "NUM"), ("4", "NUM"),
             ("quickly", "ADV"), ("of", "ADP"), ("fuse", "NOUN")]

    def phrase():
        picked = [rng.choice(words) for _ in range(rng.randint(1, 10))]
        return PhraseChunk(kind=rng.choice(("NP", "VP")), lemmas=tuple(w for w, _ in picked),
                           pos=tuple(p for _, p in picked))

    found = 0
    for _ in range(3000):
        p1, p2 = phrase(), phrase()
        g, ref = generalize_phrases(p1, p2), _reference_generalization(p1, p2)
        assert (None if g is None else (g.lemmas, g.pos, g.score)) == ref
        found += g is not None
    assert found > 300


def test_seed_reuses_the_rule_parsers_analysis_only_when_it_is_the_same_parse(rule_parser):
    """The engine's RST parse of a question gives the SG feature the phrases its own parse would give; another
    text or another set of skipped pipes is refused (it could give other phrases)."""
    from dtdialog.selection.syntactic_generalization import SyntacticGeneralizer
    from parsers.phrase_chunks import phrases_of_text

    backend = rule_parser.nlp
    text = "My 2009 Ford Focus stalls at idle after I replaced the battery. How do I check the idle air valve?"
    analyzed = backend.analyze(text)
    sg = SyntacticGeneralizer()
    assert not sg.seed(text + " Thanks.", analyzed, nlp=backend.nlp, disabled=backend.disable)
    assert not sg.seed(text, analyzed, nlp=backend.nlp, disabled=())
    assert text not in sg._cache
    assert sg.seed(text, analyzed, nlp=backend.nlp, disabled=backend.disable)
    phrases, self_score = sg._cache[text]
    assert phrases == phrases_of_text(text, nlp=sg.nlp) and len(phrases) > 3
    assert self_score == SyntacticGeneralizer(nlp=sg.nlp).analyze(text)[1]


def test_planning_a_question_seeds_the_sg_cache_with_the_same_tree(rule_parser):
    """With the hook set, the selector builds the rule parser's tree from the analysis it hands on: the same tree."""
    from dtdialog.selection.selector import AnswerSelector

    parser = rule_parser
    seen = []
    selector = AnswerSelector(index=None, parser=parser)
    selector.question_analyzed = (lambda text, analyzed, backend: seen.append((text, analyzed.text)),)
    question = "The car will not start. I replaced the starter, but it still clicks."
    assert selector.plan(question).tree.to_dict() == parser.parse(question).to_dict()
    assert seen == [(question, question)]
    messy = "The car   will not start.\n\nIt clicks."
    assert selector.plan(messy).tree.to_dict() == parser.parse(messy).to_dict()
    # cleaning changed the text: the hook still gets the analysis, of the cleaned text, and tells the two apart
    assert seen[1] == (messy, "The car will not start.\n\nIt clicks.")


def test_a_question_with_markup_is_parsed_for_sg_as_the_parser_and_the_index_clean_it(rule_parser):
    """The SG feature parses a text cleaned as the parser cleans a question and the index an answer (``sg_text``):
    the RST parser's analysis of a question with HTML entities seeds it (no second parse), its phrases are the
    cleaned text's, and the raw and the cleaned question score alike."""
    import dtdialog.selection.syntactic_generalization as sgm
    from dtdialog.ranking.signals import SignalExtractor
    from parsers.phrase_chunks import phrases_of_text

    parser, backend = rule_parser, rule_parser.nlp
    raw = "Why doesn&#39;t my car&#39;s engine start after I replaced the battery &amp; the   starter?"
    analyzed, _ = parser.analyze_and_parse(raw)
    cleaned = "Why doesn't my car's engine start after I replaced the battery & the starter?"
    assert analyzed.text == cleaned == sgm.sg_text(raw)
    shared = sgm.default_generalizer()
    shared._cache.pop(cleaned, None)
    SignalExtractor(use_sg=True).seed_query(raw, analyzed, backend)  # the engine's hook
    assert cleaned in shared._cache and cleaned not in shared._pending
    sg = SyntacticGeneralizer(nlp=shared.nlp)
    assert sg.seed(raw, analyzed, nlp=backend.nlp, disabled=backend.disable)
    phrases, _ = sg.analyze(raw)
    assert phrases == phrases_of_text(cleaned, nlp=sg.nlp) != phrases_of_text(raw, nlp=sg.nlp)
    answer = "Check the starter relay: when the engine doesn't crank, the relay or the battery cable is the usual cause."
    assert sg.score(raw, answer) == sg.score(cleaned, answer) > 0


def test_a_stored_phrase_list_scores_the_same_from_its_remembered_self_similarity() -> None:
    from dtdialog.selection.syntactic_generalization import SyntacticGeneralizer
    from parsers.phrase_chunks import phrases_of_text

    sg = SyntacticGeneralizer()
    q = "The engine cranks but will not start after I replaced the battery."
    stored = tuple(phrases_of_text("Check the fuel pump relay when the engine cranks but does not start.", nlp=sg.nlp))
    first = sg.score_phrases(q, stored)
    assert first > 0
    assert sg.score_phrases(q, stored) == first  # the remembered self-similarity
    assert sg.score_phrases(q, tuple(stored)) == first  # an equal list (or the same one) scores the same
    other = tuple(phrases_of_text("Replace the battery terminals.", nlp=sg.nlp))
    assert sg.score_phrases(q, other) == sg._normalised(*sg.phrases(q), other, sg._self_score(other))


def test_a_later_step_parses_only_the_new_reply(sg, monkeypatch):
    """A step's SG query is its messages, each parsed once: the question's parse serves every later step, and a
    step after a reply parses that reply alone (the joined text was a second parse of the whole story)."""
    import dtdialog.selection.syntactic_generalization as sgm

    parsed = []
    real = sgm.phrases_of_text
    monkeypatch.setattr(sgm, "phrases_of_text", lambda text, *, nlp=None: parsed.append(text) or real(text, nlp=nlp))
    fresh = SyntacticGeneralizer(nlp=sg.nlp)
    question = "My 2011 Focus cranks but will not start. I replaced the battery last week."
    reply = "The fuel pump does not hum when I turn the key."
    q_phrases, _ = fresh.analyze(question)
    both, self_score = fresh.phrases((question, reply))
    assert parsed == [question, reply]
    assert both == q_phrases + fresh.analyze(reply)[0]
    assert self_score == pytest.approx(fresh._self_score(both)) and self_score > fresh.analyze(question)[1]
    assert fresh.phrases((question, reply))[0] is both and len(parsed) == 2  # cached as one query
    answer = "A silent fuel pump at key-on points to its relay or fuse before the pump itself."
    assert fresh.score((question, reply), answer) > fresh.score((question,), answer) >= 0.0
    assert fresh.score((question,), answer) == fresh.score(question, answer)


def test_prefetching_a_steps_messages_parses_each_apart(sg):
    fresh = SyntacticGeneralizer(nlp=sg.nlp)
    messages = ("The brakes squeal when I stop.", "Only in the morning.")
    fresh.prefetch(messages)
    for text in messages:
        pending = fresh._pending.get(text)
        if pending is not None:
            pending.result()
        assert text in fresh._cache
