"""The learned ranker inside the engine: factory choices, one warning without the extra, contributions in the trace."""

from __future__ import annotations

import logging

import pytest

import dtdialog.ranking.factory as factory
from dtdialog.ranking.factory import resolve_ranker
from dtdialog.ranking.learned_scorer import DEFAULT_MODEL, LearnedScorer
from dtdialog.setup.assembly import EngineSpec, build_engine
from parsers.errors import ConfigError, ModelNotAvailableError


def test_resolve_ranker(monkeypatch):
    monkeypatch.delenv(factory.RANKER_ENV, raising=False)
    assert resolve_ranker(None) == "auto"
    monkeypatch.setenv(factory.RANKER_ENV, "Rules")
    assert resolve_ranker(None) == "rules"
    assert resolve_ranker("learned") == "learned"
    with pytest.raises(ConfigError, match="unknown ranker"):
        resolve_ranker("neural")


class _NoIndex:
    """Stands in for an index the ranking never reads (the rules, or a fallback before any search); the engine
    reads only its build information, where no profile is stored."""

    backend = "sqlite"

    def info(self) -> dict:
        return {}

    def close(self) -> None:
        pass


def _engine(ranker: str, **spec):
    from parsers.base import get_parser

    return build_engine(EngineSpec(ranker=ranker, **spec), progress=False, parser=get_parser("rules"),
                        index=_NoIndex(), index_path="x.sqlite")


def test_rules_ranker_keeps_the_defaults():
    from dtdialog.selection.scoring import RuleScorer

    engine = _engine("rules")
    assert engine.ranker == "rules" and isinstance(engine.scorer, RuleScorer)


def test_auto_falls_back_once_without_the_extra(monkeypatch, caplog):
    import index.dense

    monkeypatch.setattr(index.dense, "dense_available", lambda: False)
    monkeypatch.setattr(factory, "_warned", False)
    with caplog.at_level(logging.WARNING, logger="dtdialog.ranking"):
        assert _engine("auto").ranker == "rules"
        assert _engine("auto").ranker == "rules"
    warnings = [r for r in caplog.records if "lexically" in r.getMessage()]
    assert len(warnings) == 1
    with pytest.raises(ModelNotAvailableError, match="dense"):
        _engine("learned")


@pytest.mark.dense
def test_missing_model_auto_vs_learned(dense_index, tmp_path, monkeypatch):
    from index.registry import open_index

    monkeypatch.setattr(factory, "_warned", False)
    spec = EngineSpec(ranker="auto", ranker_model=str(tmp_path / "none.joblib"))
    with pytest.raises(ConfigError, match="ranker_model has no effect under the rule scorer"):
        build_engine(spec, progress=False, index=open_index(backend="sqlite", path=dense_index),
                     index_path=dense_index)  # auto fell back to the rules, where a model file means nothing
    with pytest.raises(ModelNotAvailableError):
        build_engine(EngineSpec(ranker="learned", ranker_model=str(tmp_path / "none.joblib")), progress=False,
                     index=open_index(backend="sqlite", path=dense_index), index_path=dense_index)


@pytest.mark.dense
def test_rule_scorer_options_are_refused_under_the_learned_ranker(dense_index):
    from dtdialog.setup.engine_config import EngineConfig, RuleScoringConfig
    from index.registry import open_index

    spec = EngineSpec(ranker="learned", config=EngineConfig(rules=RuleScoringConfig(agreement_weight=0.7)))
    with pytest.raises(ConfigError, match="agreement_weight has no effect under the learned ranker"):
        build_engine(spec, progress=False, index=open_index(backend="sqlite", path=dense_index),
                     index_path=dense_index)


@pytest.mark.dense
def test_engine_trace_shows_feature_contributions(dense_index):
    if not DEFAULT_MODEL.is_file():
        pytest.skip("no shipped ranker model (python -m eval.train_ranker)")
    runtime = build_engine(EngineSpec(index_path=str(dense_index), ranker="learned"), progress=False)
    try:
        assert isinstance(runtime.selector.scorer, LearnedScorer) and runtime.ranker == "learned"
        outcome = runtime.selector.rank_outcome(question="My car will not start although the battery is new.",
                                                size=5)
        assert outcome.candidates
        top = outcome.candidates[0]
        names = runtime.selector.scorer.model.feature_names
        contributions = {k.split(".", 1)[1]: v for k, v in top.features.items() if k.startswith("contribution.")}
        assert set(names) <= set(contributions)
        total = sum(contributions[n] for n in names) + contributions["intercept"]
        assert total == pytest.approx(top.features["model_logit"], abs=1e-6)
        assert top.features["dense"] > 0
        assert outcome.to_dict()["candidates"][0]["features"]["contribution.dense"] == pytest.approx(
            contributions["dense"], abs=1e-5)
        assert [c.score for c in outcome.candidates] == sorted((c.score for c in outcome.candidates), reverse=True)
    finally:
        runtime.close()


@pytest.mark.dense
def test_stale_vectors_are_refreshed_not_rebuilt(dense_index, tmp_path):
    """Replacing one answer under its old id marks the vectors out of step; only that answer is encoded again."""
    import shutil
    from dataclasses import replace

    import numpy as np

    from index.dense import DenseEncoder
    from index.dense_store import dense_paths
    from index.sqlite_index import SqliteIndex

    path = tmp_path / "answers.sqlite"
    shutil.copy(dense_index, path)
    for p in dense_paths(dense_index):
        shutil.copy(p, tmp_path / p.name)

    class Recording(DenseEncoder):
        seen: list[str] = []

        def encode(self, texts, **kw):
            Recording.seen.extend(texts)
            return super().encode(texts, **kw)

    encoder = Recording()
    with SqliteIndex(path, readonly=False) as index:
        fresh = factory._store_for(index, path, encoder=encoder, progress=False)
        assert Recording.seen == [] and fresh.generation == index.generation()  # in step: nothing encoded
        doc = index.get(index.ids()[0])
        index.add([replace(doc, text="The alternator belt squeals on cold mornings until the engine warms up.")])
        refreshed = factory._store_for(index, path, encoder=encoder, progress=False)
        assert Recording.seen == ["The alternator belt squeals on cold mornings until the engine warms up."]
        assert refreshed.generation == index.generation() and len(refreshed) == index.count()
        row = refreshed.ids.index(doc.id)
        np.testing.assert_allclose(np.asarray(refreshed.vectors)[row], encoder.encode([Recording.seen[0]])[0], atol=1e-5)


@pytest.mark.dense
def test_chat_explain_prints_the_learned_contributions(dense_index, tmp_path):
    if not DEFAULT_MODEL.is_file():
        pytest.skip("no shipped ranker model (python -m eval.train_ranker)")
    from dtdialog.dialogue.trace import format_trace

    runtime = build_engine(EngineSpec(index_path=str(dense_index), ranker="learned",
                                      sessions_path=str(tmp_path / "s.sqlite")), progress=False)
    try:
        manager = runtime.manager
        # the index holds 12 brake dialogues: a question about brakes (a starting question is out of its domain)
        result = manager.handle(session_id=manager.start_session(),
                                text="My brakes squeal although the pads are new.")
        text = format_trace(result.trace, details=True)
        assert "learned ranker logit" in text and "(dense" in text.split("learned ranker logit", 1)[1]
        assert "learned ranker logit" not in format_trace(result.trace)  # the per-feature view is a detail
        # the retrieval numbers are the learned ranker's own features (it writes no "retrieval": all read 0.00)
        for cand in result.trace["steps"][-1]["candidates"][:5]:
            feats = cand["features"]
            line = next(x for x in text.splitlines() if x.startswith(f"  + {cand['id']}  "))
            assert f"lexical={feats['lexical']:.2f} dense={feats['dense']:.2f}" in line, line
        assert any(c["features"]["dense"] > 0 for c in result.trace["steps"][-1]["candidates"])
    finally:
        runtime.close()
