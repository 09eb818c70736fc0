"""The learned ranker's side files are an explicit index step of ``build_engine``: ``build_side_files`` makes the
dense vectors and SG phrases, the ranking only loads them, and the ``encoder=`` hook is the query encoder only."""

from __future__ import annotations

import shutil

import pytest

import dtdialog.setup.assembly as assembly
from dtdialog.ranking.learned_scorer import DEFAULT_MODEL
from dtdialog.setup.assembly import EngineSpec, build_engine
from index.dense_store import DenseStore
from index.registry import open_index
from index.sg_store import SGPhraseStore
from parsers.errors import ConfigError

pytestmark = pytest.mark.dense


@pytest.fixture
def bare_index(dense_index, tmp_path):
    """Return a copy of the dense test index without its side files (no vectors, no SG phrases)."""
    if not DEFAULT_MODEL.is_file():
        pytest.skip("no shipped ranker model (python -m eval.train_ranker)")
    path = tmp_path / "answers.sqlite"
    shutil.copy(dense_index, path)
    assert not DenseStore.exists(path) and not SGPhraseStore.exists(path)
    return path


def test_the_index_step_builds_the_side_files_and_the_ranking_only_loads_them(bare_index, monkeypatch):
    import index.dense_store as dense_store
    import index.sg_store as sg_store

    calls: list[str] = []
    side_files, ranking = assembly.build_side_files, assembly._ranking

    def index_step(*args, **kwargs):
        calls.append("index step")
        return side_files(*args, **kwargs)

    def loading_only(*args, **kwargs):
        calls.append("ranking")
        with monkeypatch.context() as m:  # any build inside the ranking fails the test
            for module, name in ((dense_store, "build_dense_store"), (dense_store, "refresh_dense_store"),
                                 (sg_store, "build_for_index")):
                m.setattr(module, name, lambda *a, _n=name, **k: pytest.fail(f"{_n} called inside the ranking"))
            return ranking(*args, **kwargs)

    monkeypatch.setattr(assembly, "build_side_files", index_step)
    monkeypatch.setattr(assembly, "_ranking", loading_only)
    engine = build_engine(EngineSpec(ranker="learned"), progress=False, warm=False,
                          index=open_index(backend="sqlite", path=bare_index), index_path=bare_index)
    with engine.index:
        assert calls == ["index step", "ranking"] and engine.ranker == "learned"
        assert DenseStore.exists(bare_index)
        if engine.scorer.model.uses_sg:
            assert SGPhraseStore.exists(bare_index) and engine.scorer.extractor.sg_store is not None


def test_the_rule_scorer_has_no_side_files_to_build(bare_index):
    with open_index(backend="sqlite", path=bare_index) as index:
        model = assembly.learned_model(EngineSpec(ranker="rules"), index=index, index_path=bare_index)
        assert model is None and assembly.build_side_files(EngineSpec(), index, bare_index, model=None,
                                                           progress=False) == assembly.SideFiles()
    assert not DenseStore.exists(bare_index)


class _OtherEncoder:
    """A query encoder whose vectors are not the index's."""

    model_id = "some-other-encoder/fp32"


def test_a_query_encoder_making_other_vectors_than_the_index_is_refused_in_one_line(dense_index):
    if not DEFAULT_MODEL.is_file():
        pytest.skip("no shipped ranker model (python -m eval.train_ranker)")
    with pytest.raises(ConfigError, match="some-other-encoder") as caught:
        build_engine(EngineSpec(ranker="learned"), progress=False, warm=False, encoder=_OtherEncoder(),
                     index=open_index(backend="sqlite", path=dense_index), index_path=dense_index)
    assert "\n" not in str(caught.value)
