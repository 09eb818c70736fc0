"""The learned ranker's SG feature reads the answers' phrases stored at index time: same values, no answer parsed."""

from __future__ import annotations

import pytest

import dtdialog.selection.syntactic_generalization as sg_module
from dtdialog.ranking.learned_scorer import DEFAULT_MODEL
from dtdialog.ranking.signals import SignalExtractor
from dtdialog.setup.assembly import EngineSpec, build_engine
from index.sg_store import SGPhraseStore

QUESTION = "My car cranks but does not start after I replaced the battery. What should I check?"


@pytest.mark.dense
def test_stored_phrases_give_the_same_sg_feature_without_parsing_answers(dense_index, monkeypatch):
    if not DEFAULT_MODEL.is_file():
        pytest.skip("no shipped ranker model (python -m eval.train_ranker)")
    from index.registry import open_index

    assert SGPhraseStore.exists(dense_index)  # build_index(dense=True) writes them beside the index
    fresh = sg_module.SyntacticGeneralizer()
    monkeypatch.setattr(sg_module, "_DEFAULT", fresh)
    engine = build_engine(EngineSpec(ranker="learned"), progress=False,
                          index=open_index(backend="sqlite", path=dense_index), index_path=dense_index)
    with engine.index:
        selector, scorer = engine.selector, engine.scorer
        if not scorer.model.uses_sg:
            pytest.skip("the shipped model does not use the sg feature")
        assert scorer.extractor.sg_store is not None
        outcome = selector.rank_outcome(question=QUESTION)
        candidates = outcome.candidates + outcome.rejected
        assert len(candidates) >= 3
        # only the query was parsed for SG: every candidate's phrases came from the store
        assert set(fresh._cache) == {QUESTION}
        stored = scorer.extractor.signals(plan=outcome.plan, part_index=0, followups=[], candidates=candidates)
        parsed = SignalExtractor(dense=scorer.extractor.dense, use_sg=True).signals(
            plan=outcome.plan, part_index=0, followups=[], candidates=candidates)
    assert [s.sg for s in stored] == [s.sg for s in parsed]
    assert any(s.sg > 0 for s in stored)


@pytest.mark.dense
def test_build_engine_builds_the_sg_phrases_before_the_ranking_and_hands_them_in(dense_index, tmp_path, monkeypatch):
    """The SG phrases are an index step of ``build_engine``: ``learned_ranking`` is given them and parses nothing."""
    if not DEFAULT_MODEL.is_file():
        pytest.skip("no shipped ranker model (python -m eval.train_ranker)")
    import shutil

    import dtdialog.ranking.factory as factory
    import index.sg_store as sg_store
    from index.registry import open_index

    path = tmp_path / "answers.sqlite"
    for side in dense_index.parent.glob(dense_index.name + "*"):  # the index with its vectors, without its phrases
        if ".sg-" not in side.name:
            shutil.copy(side, tmp_path / side.name)
    assert not SGPhraseStore.exists(path)
    ranking = factory.learned_ranking
    seen = {}

    def no_parsing_inside(**kwargs):
        seen["given"] = kwargs.get("sg_store")
        monkeypatch.setattr(sg_store, "build_for_index", lambda *a, **k: pytest.fail("SG phrases built in the ranker"))
        return ranking(**kwargs)

    monkeypatch.setattr(factory, "learned_ranking", no_parsing_inside)
    engine = build_engine(EngineSpec(ranker="learned"), progress=False, warm=False,
                          index=open_index(backend="sqlite", path=path), index_path=path)
    with engine.index:
        if not engine.scorer.model.uses_sg:
            pytest.skip("the shipped model does not use the sg feature")
        assert isinstance(seen["given"], SGPhraseStore) and engine.scorer.extractor.sg_store is seen["given"]
    assert SGPhraseStore.exists(path)


@pytest.mark.dense
def test_learned_ranking_called_alone_still_opens_the_sg_phrases(dense_index):
    if not DEFAULT_MODEL.is_file():
        pytest.skip("no shipped ranker model (python -m eval.train_ranker)")
    from dtdialog.ranking.factory import learned_ranking
    from dtdialog.ranking.learned_scorer import RankerModel
    from dtdialog.setup.engine_config import EngineConfig
    from index.registry import open_index

    model = RankerModel.load_deferred(None)
    if not model.uses_sg:
        pytest.skip("the shipped model does not use the sg feature")
    with open_index(backend="sqlite", path=dense_index) as index:
        _, scorer = learned_ranking(index=index, index_path=dense_index, model=model, config=EngineConfig(),
                                    progress=False, warm=False)
        assert isinstance(scorer.extractor.sg_store, SGPhraseStore)
