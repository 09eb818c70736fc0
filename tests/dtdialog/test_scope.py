"""The out-of-scope gate's signals, and that its domain is learned from the index it guards."""

from __future__ import annotations

import pytest

from dtdialog.setup.engine_config import EngineConfig
from dtdialog.understanding.scope import (
    DOMAIN,
    GIBBERISH,
    GREETING,
    LANGUAGE,
    VAGUE,
    DomainProfile,
    ScopeGate,
    message_stems,
)
from parsers.errors import ConfigError

COOKING = [
    ("How long should I rest a steak after grilling?", ["Rest a grilled steak for five to ten minutes so the juices "
                                                        "settle before you slice it against the grain."]),
    ("Why is my bread dough not rising?", ["Dough that will not rise usually has old yeast or water that was too "
                                           "hot. Proof the yeast in warm water with a pinch of sugar first."]),
    ("How do I keep pasta from sticking together?", ["Use plenty of boiling salted water and stir the pasta during "
                                                     "the first two minutes of cooking."]),
    ("Can I freeze cooked rice?", ["Yes. Cool cooked rice quickly, freeze it flat in bags and reheat it until "
                                   "steaming hot."]),
    ("What oil is best for deep frying?", ["Pick an oil with a high smoke point such as peanut or sunflower oil "
                                           "and keep the frying temperature steady."]),
    ("Why did my cake sink in the middle?", ["A cake sinks when the oven door was opened too early or the batter "
                                             "had too much baking powder. Bake it until a skewer comes out clean."]),
]
CARS = [
    ("My brakes squeal when I stop", ["Squealing brakes usually mean worn brake pads; check the pad wear indicator "
                                      "and the rotors."]),
    ("The engine cranks but will not start", ["If the engine cranks but will not start, check the fuel pump, the "
                                              "spark plugs and the ignition coil."]),
    ("My battery keeps dying overnight", ["A battery that dies overnight points to a parasitic drain or a failing "
                                          "alternator; test the charging voltage."]),
]


def _gate(dialogues, **kw) -> ScopeGate:
    return ScopeGate(profile=DomainProfile.of(dialogues), **kw)


def test_stems_come_from_the_retrieval_vocabulary():
    assert message_stems("The brakes are squealing!") == ["brake", "squeal"]


def test_greetings_and_small_talk():
    gate = _gate(CARS)
    for text in ("hello?", "hi there", "how are you", "thanks", "who are you"):
        assert gate.check(text).reason == GREETING, text


def test_a_long_off_domain_question_with_a_thanks_is_off_domain_not_a_greeting():
    gate = _gate(CARS, threshold=0.5)
    assert gate.check("Thanks in advance: how do I roll my 401k over into a Roth IRA this year?").reason == DOMAIN
    assert gate.check("hi, thanks, how are you doing today").reason == GREETING


def test_keyboard_mash_is_gibberish():
    gate = _gate(CARS)
    for text in ("asdfghjkl", "qwerty qwerty", "xkcdvbnm zzqpt", "!!!???"):
        assert gate.check(text).reason == GIBBERISH, text


def test_non_english_text_is_recognised_and_short_english_is_not():
    gate = _gate(CARS)
    assert gate.check("Mein Auto springt nicht an, was kann ich tun?").reason == LANGUAGE
    assert gate.check("Ma voiture ne démarre plus depuis hier matin.").reason == LANGUAGE
    chinese = gate.check("我的车启动不了，怎么办？")
    assert chinese.reason == LANGUAGE and chinese.signals["non_latin_share"] == 1.0
    for text in ("brakes squeal", "battery dying", "engine will not start"):
        assert gate.check(text).in_scope, text


def test_the_domain_is_learned_from_the_index_not_a_car_list():
    cooking, cars = _gate(COOKING, quantile=0.0, threshold=0.5), _gate(CARS, quantile=0.0, threshold=0.5)
    assert cooking.check("Why is my steak dough not rising in the oven?").in_scope
    assert cooking.check("My brakes squeal when I stop").reason == DOMAIN
    assert cars.check("My brakes squeal when I stop").in_scope
    assert cars.check("Why did my cake sink in the oven?").reason == DOMAIN


def test_a_faq_index_refuses_a_car_question_end_to_end(tmp_path):
    """An index built from a small FAQ of its own: the gate reads the index, not a corpus list."""
    from index.documents import build_document
    from index.sqlite_index import SqliteIndex
    from parsers.base import get_parser

    parser = get_parser("rules")
    index = SqliteIndex(tmp_path / "faq.sqlite", readonly=False)
    docs = []
    for i, (_question, answers) in enumerate(COOKING * 2):
        for j, text in enumerate(answers, start=1):
            doc = build_document(doc_id=f"d{i}#{j}", dialogue_id=f"d{i}", position=j, text=text, tree=parser.parse(text))
            docs.append(doc)
    index.add(docs)
    gate = ScopeGate(index, quantile=0.0, threshold=0.5)
    assert gate.profile().n == len(COOKING) * 2
    assert gate.check("The engine cranks but the car will not start").reason == DOMAIN
    assert gate.check("Should I rest a grilled steak before I slice it?").in_scope
    index.close()


def test_the_threshold_is_derived_from_the_index_own_questions():
    profile = DomainProfile.of(COOKING + CARS)
    assert len(profile.own_scores) == len(COOKING) + len(CARS)
    assert profile.own_scores == sorted(profile.own_scores)
    assert profile.threshold(0.0) == 0.0  # quantile 0 turns the domain check off
    assert profile.threshold(0.5) == profile.own_scores[len(profile.own_scores) // 2]


def test_a_long_post_with_many_domain_words_is_in_scope_by_its_mass():
    gate = _gate(CARS, threshold=0.99, mass=2.0)
    verdict = gate.check("Folks, my Fooblatz wagon's brakes squeal and the battery keeps dying, the engine cranks")
    assert verdict.in_scope and verdict.signals["domain_mass"] >= 2.0
    assert _gate(CARS, threshold=0.99, mass=None).check(
        "Folks, my Fooblatz wagon's brakes squeal and the battery keeps dying, the engine cranks").reason == DOMAIN


def test_the_dense_cosine_rescues_a_close_message_and_refuses_a_far_one():
    """An unseen word sinks the vocabulary's share ("weird"); the encoder's cosine to the answers decides then."""
    calls: list[str] = []

    def cosine(value: float):
        def nearest(text: str) -> float:
            calls.append(text)
            return value
        return nearest

    strict = {"threshold": 0.99, "mass": None, "dense_floor": 0.3, "dense_sure": 0.4}
    text = "It makes a weird noise when the battery cranks"
    assert _gate(CARS, **strict).check(text).reason == DOMAIN  # the vocabulary alone refuses it
    verdict = _gate(CARS, **strict, dense=cosine(0.45)).check(text)
    assert verdict.in_scope and verdict.signals["dense"] == 0.45
    loose = {"threshold": 0.0, "mass": None, "dense_floor": 0.3, "dense_sure": 0.4}
    assert _gate(CARS, **loose, dense=cosine(0.1)).check("My brakes squeal when I stop").reason == DOMAIN
    assert _gate(CARS, **loose, dense=cosine(0.35)).check("My brakes squeal when I stop").in_scope  # vocabulary yes
    assert _gate(CARS, **strict, dense=cosine(0.35)).check(text).reason == DOMAIN  # ... and no
    calls.clear()
    for other in ("asdfghjkl", "hello?", "Mein Auto springt nicht an, was kann ich tun?"):
        assert not _gate(CARS, **loose, dense=cosine(0.9)).check(other).in_scope
    assert calls == []  # greetings, mash and other languages are refused before the encoder is asked


#: "my car shakes": a word most dialogues use ("car") does not make a symptom alone searchable
VAGUE_OPENINGS = ("my car", "brakes", "it makes a noise", "engine problem", "hi, my brakes", "my car shakes",
                  "engine overheats")
REAL_QUESTIONS = ("Is idling bad for your engine?", "How do I apply dielectric grease to my battery?",
                  "My brakes squeal when I stop at a light", "How do I test my car battery?", "battery dead",
                  "brakes squeal")


def _builtin_gate(index_path, **kw) -> tuple[ScopeGate, object]:
    """Return the gate the engine builds over the built-in index (default settings), and the index to close."""
    from index.sqlite_index import SqliteIndex

    config = EngineConfig().scope
    index = SqliteIndex(index_path, readonly=True)
    gate = ScopeGate(index, quantile=config.scope_quantile, threshold=config.scope_threshold, mass=config.scope_mass,
                     dense_floor=config.scope_dense_floor, dense_sure=config.scope_dense_sure, **kw)
    return gate, index


def test_vague_in_domain_openings_get_a_detail_question_not_a_refusal(builtin_rules_index):
    gate, index = _builtin_gate(builtin_rules_index)
    try:
        for text in VAGUE_OPENINGS:
            verdict = gate.check(text)
            assert verdict.reason == VAGUE and not verdict.in_scope, (text, verdict.signals)
        for text in REAL_QUESTIONS:
            assert gate.check(text).in_scope, text
        assert gate.check("what is the best mortgage rate").reason == DOMAIN
        for text in ("hello?", "hi there", "how are you"):
            assert gate.check(text).reason == GREETING, text
    finally:
        index.close()


def test_what_is_vague_is_learned_from_the_index():
    """One known word, or a few that many dialogues share, is vague; a word the index never saw is not."""
    cooking, cars = _gate(COOKING, threshold=0.5), _gate(CARS, threshold=0.5)
    assert cooking.check("my cake").reason == VAGUE and cars.check("my cake").reason == DOMAIN
    assert cars.check("my brakes").reason == VAGUE and cooking.check("my brakes").reason == DOMAIN
    assert cars.check("brakes squeal").in_scope  # a symptom few dialogues share: searchable
    assert cars.profile().matches(["brake", "squeal"]) == 1 and cars.profile().matches(["brake", "rice"]) == 0
    assert _gate(CARS * 3).check("brakes squeal").reason == VAGUE  # ... unless every third one does


@pytest.mark.slow
@pytest.mark.dense
def test_the_learned_engine_gate_reads_the_cosine(builtin_learned_index, tmp_path):
    """End to end with the default (learned) engine on the built-in corpus: a car question with words the index
    never saw is answered; an English question about a router is not."""
    from dtdialog.setup.assembly import EngineSpec, build_engine

    path, parser = builtin_learned_index
    engine = build_engine(EngineSpec(index_path=str(path), ranker="learned", sessions_path=str(tmp_path / "s.sqlite")),
                          parser=parser, progress=False)
    try:
        gate = engine.manager.scope
        noise = gate.check("It makes a weird noise when I turn.")
        assert noise.in_scope and noise.signals["dense"] >= EngineConfig().scope.scope_dense_sure
        printer = gate.check("How do I reset the password of my wifi router?")
        assert printer.reason == DOMAIN and printer.signals["dense"] < EngineConfig().scope.scope_dense_sure
        for text in VAGUE_OPENINGS:  # before the encoder: "my car" is far from every answer, yet in the domain
            assert gate.check(text).reason == VAGUE, text
        for text in REAL_QUESTIONS:
            assert gate.check(text).in_scope, text
    finally:
        engine.close()


@pytest.mark.parametrize("bad", [{"scope_quantile": 0.9}, {"scope_threshold": 2}, {"scope_mass": -1},
                                 {"scope_quantile": True}, {"scope_dense_floor": 2.0}, {"scope_dense_sure": "high"}])
def test_scope_settings_are_validated(bad):
    with pytest.raises(ConfigError):
        EngineConfig.from_dict(bad)


def test_meanwhile_runs_just_before_the_encoding_and_only_then():
    """The manager starts planning a question when the gate is about to encode it: never for a message refused
    on the cheap checks (greeting, mash, another language), once for one the encoder decides."""
    events: list[str] = []

    def nearest(text: str) -> float:
        events.append("encode")
        return 0.9

    gate = _gate(CARS, threshold=0.0, mass=None, dense_floor=0.3, dense_sure=0.4, dense=nearest,
                 prefetch=lambda text: events.append("prefetch"))
    for refused in ("asdfghjkl", "hello?", "Mein Auto springt nicht an, was kann ich tun?"):
        assert not gate.check(refused, meanwhile=lambda: events.append("meanwhile")).in_scope
    assert events == []
    # the encoding starts on a worker first, so the caller's work runs beside it
    assert gate.check("My brakes squeal when I stop", meanwhile=lambda: events.append("meanwhile")).in_scope
    assert events == ["prefetch", "meanwhile", "encode"]
    events.clear()  # without a caller's work there is nothing to overlap: the gate encodes on its own thread
    assert gate.check("My brakes squeal when I stop").in_scope
    assert events == ["encode"]
