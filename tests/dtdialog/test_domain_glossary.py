"""A profile's glossary tells the out-of-scope gate what the domain holds beyond the stored answers.

Before it, the gate knew only the answers' words and vectors, so a real car question no answer covers (the
difference between DOHC and SOHC, a motorcycle's valve train) was refused as off-topic.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from test_scope import COOKING

from dtdialog.setup.engine_config import EngineConfig
from dtdialog.setup.profile import Profile, builtin_profile, load_profile, stored_profile
from dtdialog.understanding.glossary_vectors import GlossaryVectors
from dtdialog.understanding.scope import DOMAIN, DomainProfile, ScopeGate
from parsers.errors import ConfigError

GLOSSARY = (
    "sous vide: cooking food sealed in a bag in a water bath held at an exact low temperature for hours.",
    "brisket: a tough beef cut from the chest that needs long slow cooking, smoking or braising to turn tender.",
    "braising: browning meat, then simmering it covered in a little liquid until it falls apart.",
    "smoker: a cooker that holds meat in wood smoke at a low temperature for many hours.",
)
QUESTION = "Should I sous vide or braise a brisket?"


def test_a_question_only_the_glossary_covers_is_in_the_domain():
    without = ScopeGate(profile=DomainProfile.of(COOKING), threshold=0.5)
    with_glossary = ScopeGate(profile=DomainProfile.of(COOKING, glossary=GLOSSARY), threshold=0.5)
    assert without.check(QUESTION).reason == DOMAIN
    assert with_glossary.check(QUESTION).in_scope
    # what no document of the domain mentions is still refused
    assert with_glossary.check("How do I roll my 401k over into a Roth IRA this year?").reason == DOMAIN


def test_glossary_entries_are_documents_not_dialogues():
    profile = DomainProfile.of(COOKING, glossary=GLOSSARY)
    assert profile.n == len(COOKING) and profile.glossary_entries == len(GLOSSARY)
    assert profile.df["brisket"] == 1 and "brisket" not in profile.postings  # never a dialogue a message matches
    assert profile.own_scores  # the threshold still comes from the dialogues' own questions


def test_the_gate_learns_the_glossary_beside_its_index(tmp_path):
    from index.documents import build_document
    from index.sqlite_index import SqliteIndex
    from parsers.base import get_parser

    parser = get_parser("rules")
    index = SqliteIndex(tmp_path / "faq.sqlite", readonly=False)
    index.add([build_document(doc_id=f"d{i}#1", dialogue_id=f"d{i}", position=1, text=answers[0],
                              tree=parser.parse(answers[0])) for i, (_q, answers) in enumerate(COOKING)])
    try:
        assert ScopeGate(index, threshold=0.5).check(QUESTION).reason == DOMAIN
        assert ScopeGate(index, threshold=0.5, glossary=GLOSSARY).check(QUESTION).in_scope
    finally:
        index.close()


def test_a_profile_reads_its_glossary_file_and_stores_it_inline(tmp_path):
    (tmp_path / "words.txt").write_text("# cuts\n\n" + "\n".join(GLOSSARY) + "\n", encoding="utf-8")
    (tmp_path / "profile.yaml").write_text("name: kitchen helper\ndomain: cooking\nglossary: words.txt\n",
                                           encoding="utf-8")
    profile = load_profile(tmp_path / "profile.yaml")
    assert profile.glossary == GLOSSARY
    stored = stored_profile({"profile": profile.to_dict()})
    assert stored is not None and stored.glossary == GLOSSARY
    assert Profile().glossary == ()


@pytest.mark.parametrize("value, words", [("missing.txt", "does not exist"), (42, "list of text entries"),
                                          ("folder", "is a folder")])
def test_a_bad_glossary_is_one_line(tmp_path, value, words):
    (tmp_path / "folder").mkdir()
    (tmp_path / "profile.yaml").write_text(f"glossary: {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_profile(tmp_path / "profile.yaml")
    assert words in str(err.value) and "\n" not in str(err.value)


class _BagOfWords:
    """A deterministic encoder: hashed word counts, unit length; ``calls`` counts the texts it encoded."""

    model_id = "bag-of-words-test"

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts):
        self.calls += len(texts)
        rows = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in zip(rows, texts):
            for word in text.lower().replace(":", " ").split():
                row[int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)


def test_glossary_vectors_find_the_nearest_entry_and_are_cached(tmp_path):
    encoder = _BagOfWords()
    vectors = GlossaryVectors(GLOSSARY, encoder=encoder, cache_dir=tmp_path)
    query = encoder.encode(["a tough beef cut from the chest"])[0]
    assert vectors.nearest(query) == pytest.approx(float(np.max(encoder.encode(GLOSSARY) @ query)))
    assert vectors.nearest(query) > 0.5
    assert vectors.cache_path().is_file()
    encoder.calls = 0
    again = GlossaryVectors(GLOSSARY, encoder=encoder, cache_dir=tmp_path)
    assert again.nearest(query) == pytest.approx(vectors.nearest(query)) and encoder.calls == 0
    # a damaged cache is encoded again, not trusted
    again.cache_path().write_bytes(b"not a numpy file")
    third = GlossaryVectors(GLOSSARY, encoder=encoder, cache_dir=tmp_path)
    assert third.nearest(query) == pytest.approx(vectors.nearest(query)) and encoder.calls == len(GLOSSARY)
    assert GlossaryVectors((), encoder=encoder).nearest(query) == 0.0


def test_another_encoder_gets_its_own_cache(tmp_path):
    first = GlossaryVectors(GLOSSARY, encoder=_BagOfWords(), cache_dir=tmp_path)
    other = _BagOfWords()
    other.model_id = "another-encoder"
    assert first.cache_path() != GlossaryVectors(GLOSSARY, encoder=other, cache_dir=tmp_path).cache_path()


def test_the_builtin_car_profile_ships_a_glossary():
    glossary = builtin_profile().glossary
    assert len(glossary) >= 500
    assert any(entry.lower().startswith("dohc") for entry in glossary)


def test_the_builtin_corpus_speaks_the_shipped_profile_not_an_older_stored_copy():
    from dtdialog.setup.profile import resolve_profile

    older = {"profile": {"name": "car-repair assistant", "domain": "car-repair"}}  # stored before the glossary
    assert resolve_profile(path=None, info=older, builtin=True).glossary == builtin_profile().glossary
    assert resolve_profile(path=None, info=older, builtin=False).glossary == ()


@pytest.mark.slow
@pytest.mark.dense
def test_the_car_bot_asks_about_engine_design_and_the_rule_scorer_keeps_to_its_index(builtin_learned_index, tmp_path):
    """Before: "what is the difference between DOHC and SOHC?" was refused as off-topic (no answer covers engine
    design). With an encoder the gate reads the car glossary; without one it does not (design choices)."""
    from dtdialog.setup.assembly import EngineSpec, build_engine

    path, parser = builtin_learned_index
    question = "What is the difference between a DOHC and a SOHC engine?"
    gates = {}
    for ranker in ("learned", "rules"):
        engine = build_engine(EngineSpec(index_path=str(path), ranker=ranker, sessions_path=str(tmp_path / f"{ranker}.db")),
                              parser=parser, progress=False)
        try:
            gates[ranker] = (engine.manager.scope.glossary, engine.manager.scope.check(question))
        finally:
            engine.close()
    glossary, verdict = gates["learned"]
    assert len(glossary) >= 500 and verdict.in_scope, verdict.signals
    assert verdict.signals["dense"] >= EngineConfig().scope.scope_dense_sure  # near the glossary's entry, not an answer
    assert gates["rules"][0] == ()
