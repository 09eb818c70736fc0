"""The discourse-tree ablation: ``EngineSpec.use_tree=False`` (``--no-dt``) runs the same engine without the tree.

On the paper's question the engine with the tree plans a Concession part, checks agreement, reads what the customer
already did and ranks with the ``hybrid+dt`` model; without it the question is one flat part, no agreement or tried
action is recorded, and the learned ranker is the ``hybrid`` model.
"""

from __future__ import annotations

import json

import pytest

from dtdialog.cli import build_parser
from dtdialog.setup.assembly import EngineSpec
from dtdialog.setup.engine_args import spec_from_args
from parsers.errors import ConfigError

PAPER_Q = ("I have checked the spark plugs, replaced the battery, also replaced ignition coils and the solenoid, "
           "but I still could not start my car.")


def test_use_tree_must_be_a_boolean_in_one_line():
    with pytest.raises(ConfigError, match=r"^engine spec: use_tree must be true or false, got 'no'$"):
        EngineSpec(use_tree="no")


def test_use_tree_survives_the_dict_and_json_round_trip(tmp_path):
    spec = EngineSpec(ranker="rules", use_tree=False)
    assert spec.to_dict()["use_tree"] is False
    assert EngineSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    saved = EngineSpec.load(spec.save(tmp_path / "engine.json"))
    assert saved.use_tree is False
    assert EngineSpec.from_dict({"format": 1}).use_tree is True


@pytest.mark.parametrize("command", ["chat", "test", "serve"])
def test_no_dt_reaches_the_spec(tmp_path, monkeypatch, command):
    from dtdialog.commands import chat, serve

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DTDIALOG_HOME", str(tmp_path / "home"))
    args = build_parser().parse_args([command, "--no-dt", "--ranker", "rules"])
    spec = {"chat": chat.engine_spec, "test": spec_from_args,
            "serve": lambda a: serve.settings_from_args(a).engine}[command](args)
    assert spec.use_tree is False
    assert spec_from_args(build_parser().parse_args([command])).use_tree is True


def test_no_dt_with_a_saved_engine_is_refused(tmp_path):
    path = EngineSpec(ranker="rules").save(tmp_path / "engine.json")
    with pytest.raises(Exception, match="drop --no-dt"):
        spec_from_args(build_parser().parse_args(["test", "--engine", str(path), "--no-dt"]))


def test_without_the_tree_the_model_path_is_the_hybrid_one():
    assert EngineSpec().model_path() is None
    assert EngineSpec(use_tree=False).model_path().endswith("ranker-v1-hybrid.joblib")
    assert EngineSpec(use_tree=False, ranker_model="mine.joblib").model_path() == "mine.joblib"


@pytest.fixture(scope="module")
def rules_engines(builtin_rules_index, tmp_path_factory):
    from dtdialog.setup.assembly import build_engine
    from parsers.base import get_parser

    parser, home = get_parser("rules"), tmp_path_factory.mktemp("ablation")
    built = {tree: build_engine(EngineSpec(index_path=str(builtin_rules_index), ranker="rules", use_tree=tree,
                                           sessions_path=str(home / f"{tree}.sqlite")),
                                parser=parser, progress=False) for tree in (True, False)}
    yield built
    for engine in built.values():
        engine.close()


def test_the_paper_question_has_its_concession_part_only_with_the_tree(rules_engines):
    with_tree = rules_engines[True].selector.plan(PAPER_Q)
    assert any(r.relation == "Concession" for p in with_tree.parts for r in p.relations)
    flat = rules_engines[False].selector.plan(PAPER_Q)
    assert len(flat.parts) == 1 and flat.parts[0].relations == () and flat.kind == "factual"
    assert flat.parts[0].text == " ".join(e.text for e in with_tree.tree.edus)  # the whole question, one part


def test_without_the_tree_no_rr_term_agreement_or_tried_action_is_recorded(rules_engines):
    with_tree = rules_engines[True].selector.rank_outcome(question=PAPER_Q, size=5).to_dict()
    assert with_tree["query"]["rr_terms"] and with_tree["requirements"] and with_tree["tried"]
    assert with_tree["agreeing"] > 0
    flat = rules_engines[False].selector.rank_outcome(question=PAPER_Q, size=5)
    trace = flat.to_dict()
    assert not trace["query"]["rr_terms"] and not trace["requirements"]
    assert trace["tried"] == [] and trace["already_tried"] == {} and flat.tried == []
    assert trace["agreeing"] == 0
    assert all(c.agreement.score == 0.0 and c.agreement.required == 0 for c in flat.candidates)
    assert rules_engines[False].selector.config.rules.agreement_weight == 0.0
    assert rules_engines[True].selector.config.rules.agreement_weight > 0.0


def test_without_the_tree_a_reply_brings_no_relation_and_memory_is_not_read(rules_engines):
    from dtdialog.understanding.tried import REPLACED, TriedAction

    selector = rules_engines[False].selector
    remembered = [TriedAction(verb_class=REPLACED, objects=frozenset({"battery"}), text="replaced the battery")]
    outcome = selector.rank_outcome(question=PAPER_Q, step=1, followups=["It cranks, but it will not start."],
                                    size=5, tried=remembered)
    trace = outcome.to_dict()
    assert not trace["query"]["rr_terms"] and not trace["requirements"] and trace["tried"] == []
    assert outcome.followup_tree is not None and not outcome.followup_tree.non_default_nodes()


def test_the_customer_why_says_what_was_left_out_only_with_the_tree(rules_engines):
    from dtdialog.dialogue.customer_why import customer_why

    whys = {}
    for tree, engine in rules_engines.items():
        result = engine.manager.handle(session_id=engine.manager.start_session(), text=PAPER_Q)
        assert result.answer_id, result.reply
        whys[tree] = customer_why(result.trace or {}) or ""
    assert "leaves out what you already did" in whys[True]
    assert "leaves out" not in whys[False] and whys[False].startswith("This is about")


@pytest.mark.slow
@pytest.mark.dense
def test_the_learned_ranker_without_the_tree_uses_the_hybrid_model(builtin_learned_index):
    from dtdialog.ranking.features import DT_FEATURES
    from dtdialog.setup.assembly import build_engine

    path, parser = builtin_learned_index
    engines = {tree: build_engine(EngineSpec(index_path=str(path), ranker="learned", use_tree=tree), parser=parser,
                                  progress=False) for tree in (True, False)}
    try:
        flat = engines[False]
        assert flat.scorer.model.manifest["name"] == "ranker-v1-hybrid"
        assert flat.scorer.model.manifest["feature_set"] == "hybrid"
        assert not set(flat.scorer.model.feature_names) & set(DT_FEATURES)
        assert engines[True].scorer.model.manifest["feature_set"] == "hybrid+dt"
        # its confidence is calibrated for its own model, so it abstains as the engine with the tree does
        assert flat.selector.calibrator is not None and flat.selector.calibrator.model_name == "ranker-v1-hybrid"
        outcome = flat.selector.rank_outcome(question=PAPER_Q, size=5)
        assert len(outcome.plan.parts) == 1 and outcome.tried == [] and outcome.to_dict()["agreeing"] == 0
        top = outcome.candidates[0].features
        assert not any(name in top for name in ("agreement_verdict", "addressed", "sg"))
    finally:
        for engine in engines.values():
            engine.close()


def test_a_tree_feature_model_without_the_tree_is_refused_in_one_line(builtin_learned_index):
    from dtdialog.ranking.learned_scorer import DEFAULT_MODEL
    from dtdialog.setup.assembly import build_engine

    path, parser = builtin_learned_index
    spec = EngineSpec(index_path=str(path), ranker="learned", ranker_model=str(DEFAULT_MODEL), use_tree=False)
    with pytest.raises(ConfigError, match="reads discourse-tree features.*use a 'hybrid' feature-set model"):
        build_engine(spec, parser=parser, progress=False)


def test_without_the_tree_the_session_keeps_no_memory_of_what_was_tried(rules_engines):
    kept = {}
    for tree, engine in rules_engines.items():
        manager = engine.manager
        session = manager.start_session()
        assert manager.handle(session_id=session, text=PAPER_Q).answer_id
        manager.handle(session_id=session, text="I already did that")
        kept[tree] = [t["text"] for t in engine.store.load(session).tried]
    assert any("battery" in t for t in kept[True])
    assert kept[False] == []
