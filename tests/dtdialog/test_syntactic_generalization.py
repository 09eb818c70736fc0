"""Syntactic generalization: common sub-phrases of same-type phrases, their scores, and sg_score."""

import pytest

from dtdialog.syntactic_generalization import (
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
