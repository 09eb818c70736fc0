"""The learned ranker inside the engine: factory choices, one warning without the extra, contributions in the trace."""

from __future__ import annotations

import logging

import pytest

import dtdialog.ranking.factory as factory
from dtdialog.ranking.factory import build_ranking, resolve_ranker
from dtdialog.ranking.learned_scorer import DEFAULT_MODEL, LearnedScorer
from parsers.errors import ConfigError, ModelNotAvailableError


def test_resolve_ranker(monkeypatch):
    monkeypatch.delenv(factory.RANKER_ENV, raising=False)
    assert resolve_ranker(None) == "auto"
    monkeypatch.setenv(factory.RANKER_ENV, "Rules")
    assert resolve_ranker(None) == "rules"
    assert resolve_ranker("learned") == "learned"
    with pytest.raises(ConfigError, match="unknown ranker"):
        resolve_ranker("neural")


def test_rules_ranker_keeps_the_defaults():
    assert build_ranking(index=None, index_path=None, ranker="rules") == (None, None)


def test_auto_falls_back_once_without_the_extra(monkeypatch, caplog):
    import index.dense

    monkeypatch.setattr(index.dense, "dense_available", lambda: False)
    monkeypatch.setattr(factory, "_warned", False)
    with caplog.at_level(logging.WARNING, logger="dtdialog.ranking"):
        assert build_ranking(index=None, index_path="x.sqlite", ranker="auto") == (None, None)
        assert build_ranking(index=None, index_path="x.sqlite", ranker="auto") == (None, None)
    warnings = [r for r in caplog.records if "lexically" in r.getMessage()]
    assert len(warnings) == 1
    with pytest.raises(ModelNotAvailableError, match="dense"):
        build_ranking(index=None, index_path="x.sqlite", ranker="learned")


@pytest.mark.dense
def test_missing_model_auto_vs_learned(dense_index, tmp_path, monkeypatch):
    from index.registry import open_index

    monkeypatch.setattr(factory, "_warned", False)
    with open_index(backend="sqlite", path=dense_index) as index:
        assert build_ranking(index=index, index_path=dense_index, ranker="auto",
                             model_path=tmp_path / "none.joblib") == (None, None)
        with pytest.raises(ModelNotAvailableError):
            build_ranking(index=index, index_path=dense_index, ranker="learned", model_path=tmp_path / "none.joblib")


@pytest.mark.dense
def test_engine_trace_shows_feature_contributions(dense_index):
    if not DEFAULT_MODEL.is_file():
        pytest.skip("no shipped ranker model (python -m eval.train_ranker)")
    from dtdialog.runtime import load_runtime

    runtime = load_runtime(index_path=dense_index, ranker="learned", progress=False)
    try:
        assert isinstance(runtime.selector.scorer, LearnedScorer)
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
    from dtdialog.manager import DialogueManager
    from dtdialog.runtime import load_runtime
    from dtdialog.session_store import SessionStore
    from dtdialog.trace import format_trace

    runtime = load_runtime(index_path=dense_index, ranker="learned", progress=False)
    try:
        with SessionStore(tmp_path / "s.sqlite") as store:
            manager = DialogueManager(selector=runtime.selector, store=store)
            result = manager.handle(session_id=manager.start_session(),
                                    text="My car will not start although the battery is new.")
            text = format_trace(result.trace)
        assert "learned ranker logit" in text and "dense" in text.split("learned ranker logit", 1)[1]
    finally:
        runtime.close()
