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
