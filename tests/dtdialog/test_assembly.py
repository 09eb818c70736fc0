"""``dtdialog.setup.assembly``: the engine spec as data, and ``build_engine`` (a corpus is indexed once, then reused)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from data.model import Dialogue, Turn
from dtdialog.setup.assembly import SPEC_FORMAT, EngineSpec, build_engine
from dtdialog.setup.engine_config import (
    RULE_SCORER_ONLY,
    ClarifyConfig,
    EngineConfig,
    RetrievalConfig,
    RuleScoringConfig,
)
from dtdialog.setup.spec_resolution import resolve_spec
from parsers.errors import ConfigError, InputError


@pytest.fixture()
def rules_parser():
    from parsers.base import get_parser
    from parsers.errors import DTDialogError

    try:
        parser = get_parser("rules")
        parser.parse("The car starts.")
    except DTDialogError as exc:
        pytest.skip(f"rule parser unavailable: {exc}")
    return parser


@pytest.fixture()
def mini_corpus(tmp_path):
    corpus = tmp_path / "mini.jsonl"
    dialogues = [Dialogue(id="d1", turns=(Turn("Q", "My brakes squeal when I stop."),
                                          Turn("A", "If the pads are new, the squeal usually comes from glazed rotors."))),
                 Dialogue(id="d2", turns=(Turn("Q", "The battery dies overnight."),
                                          Turn("A", "Because something drains it, test the parasitic draw.")))]
    corpus.write_text("\n".join(json.dumps(d.to_dict()) for d in dialogues) + "\n")
    return corpus


# --- the spec ---------------------------------------------------------------------------------------------
def test_spec_round_trips_through_json(tmp_path):
    spec = EngineSpec(parser="rules", index_path=tmp_path / "a.sqlite", ranker="learned", candidate_depth=40,
                      config=EngineConfig(retrieval=RetrievalConfig(candidates=7),
                                          clarify=ClarifyConfig(clarify_margin=0.1)),
                      sessions_path=tmp_path / "s.sqlite")
    assert spec.index_path == str(tmp_path / "a.sqlite")  # paths are kept as JSON strings
    saved = spec.save(tmp_path / "engine.json")
    data = json.loads(saved.read_text())
    assert data["format"] == SPEC_FORMAT and data["config"]["retrieval"]["candidates"] == 7
    again = EngineSpec.load(saved)
    assert "sessions_path" not in data  # the loading machine's state, not the engine's
    assert again == replace(resolve_spec(spec), sessions_path=None) and again.config.clarify.clarify_margin == 0.1
    assert (again.parser, again.ranker, again.candidate_depth) == ("rules", "learned", 40)
    assert EngineSpec.from_dict(EngineSpec().to_dict()) == EngineSpec()


@pytest.mark.parametrize(("data", "message"), [
    ({"rankr": "rules"}, "unknown key.*rankr"),
    ({"format": SPEC_FORMAT + 1}, "format"),
    ({"ranker": "neural"}, "unknown ranker 'neural'"),
    ({"backend": "solr"}, "unknown backend 'solr'"),
    ({"corpus_format": "xml"}, "unknown corpus_format"),
    ({"candidate_depth": 0}, "candidate_depth"),
    ({"learned_require_agreement": "yes"}, "learned_require_agreement"),
    ({"config": {"candidates": 0}}, "candidates must be an integer"),
    ({"config": {"bogus": 1}}, "unknown option"),
    ({"corpus": "x.csv"}, "--corpus needs --format"),
    ({"index_path": 3}, "index_path must be a path"),
])
def test_bad_specs_are_one_line_config_errors(data, message):
    with pytest.raises(ConfigError, match=message) as info:
        EngineSpec.from_dict(data)
    assert "\n" not in str(info.value)


def test_unreadable_spec_file_is_a_config_error(tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ConfigError, match="cannot read engine spec"):
        EngineSpec.load(tmp_path / "bad.json")


def test_only_rule_scorer_options_are_refused_under_the_learned_ranker():
    for name in RULE_SCORER_ONLY:
        value = {"require_agreement": False, "soft_first_step": False}.get(name, 0.25)
        with pytest.raises(ConfigError, match=f"{name} has no effect under the learned ranker"):
            EngineConfig(rules=RuleScoringConfig(**{name: value})).check_ranker("learned")
        EngineConfig(rules=RuleScoringConfig(**{name: value})).check_ranker("rules")
    EngineConfig.from_dict({"clarify_margin": 0.2, "continuation_weight": 0.3, "candidates": 5}).check_ranker("learned")


# --- build_engine --------------------------------------------------------------------------------------
def test_corpus_is_built_once_then_reused(tmp_path, monkeypatch, rules_parser, mini_corpus):
    monkeypatch.setenv("DTDIALOG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DTDIALOG_RANKER", "rules")
    spec = EngineSpec(corpus=mini_corpus, corpus_format="jsonl")
    first = build_engine(spec, parser=rules_parser, progress=False)
    try:
        assert first.built and first.index.count() == 2 and first.ranker == "rules"
        assert first.index_location.startswith(str(tmp_path / "home")) and first.manager is None
        hits = first.selector.rank(question="My brakes squeal even though the pads are new.")
        assert hits and all(h.document.id in ("d1#1", "d2#1") for h in hits)
    finally:
        first.close()
    again = build_engine(spec, parser=rules_parser, progress=False)
    try:
        assert not again.built and again.index_location == first.index_location
    finally:
        again.close()


def test_engine_with_a_session_store_has_a_manager(tmp_path, rules_parser, mini_corpus):
    spec = EngineSpec(index_path=tmp_path / "a.sqlite", corpus=mini_corpus, corpus_format="jsonl", ranker="rules",
                      sessions_path=tmp_path / "sessions" / "s.sqlite",
                      config=EngineConfig(clarify=ClarifyConfig(max_options=2)))
    engine = build_engine(spec, parser=rules_parser, progress=False)
    try:
        assert engine.built and engine.manager.selector is engine.selector
        assert engine.manager.config.clarify.max_options == 2
        sid = engine.manager.start_session()
        result = engine.manager.handle(session_id=sid, text="The battery dies overnight, what drains it?")
        assert result.kind == "answer" and result.answer_id == "d2#1"
        old = engine.selector
        engine.refresh()  # new selector (empty caches), same parts, the manager follows
        assert engine.selector is not old and engine.manager.selector is engine.selector
        assert engine.selector.index is engine.index and engine.selector.config is spec.config
    finally:
        engine.close()


def test_an_open_index_is_used_as_given(tmp_path, rules_parser, mini_corpus):
    from index.registry import open_index

    built = build_engine(EngineSpec(index_path=tmp_path / "a.sqlite", corpus=mini_corpus, corpus_format="jsonl",
                                    ranker="rules"), parser=rules_parser, progress=False)
    built.close()
    index = open_index(backend="sqlite", path=tmp_path / "a.sqlite")
    engine = build_engine(EngineSpec(ranker="rules"), parser=rules_parser, index=index, progress=False)
    assert engine.index is index and not engine.built
    engine.close()
    with pytest.raises(ConfigError, match="not both"):
        build_engine(EngineSpec(index_path=tmp_path / "a.sqlite"), parser=rules_parser, index=index, progress=False)


def test_learned_options_are_refused_under_the_rules(tmp_path, rules_parser, mini_corpus):
    spec = EngineSpec(index_path=tmp_path / "a.sqlite", corpus=mini_corpus, corpus_format="jsonl", ranker="rules",
                      learned_require_agreement=True)
    with pytest.raises(ConfigError, match="learned_require_agreement has no effect under the rule scorer"):
        build_engine(spec, parser=rules_parser, progress=False)


def test_bad_locations_are_errors(tmp_path):
    with pytest.raises(ConfigError):
        build_engine(EngineSpec(backend="solr"), progress=False)
    with pytest.raises(InputError):
        build_engine(EngineSpec(index_path=tmp_path), progress=False)  # a directory is not an index file
