"""The prebuilt built-in index shipped in the package: current, installable, and never used when stale."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from data.builtin import load_builtin_corpus
from dtdialog.runtime.paths import builtin_index_path
from dtdialog.setup import make_prebuilt, prebuilt
from dtdialog.setup.assembly import EngineSpec, build_engine, engine_parser_name
from dtdialog.setup.index_location import corpus_fingerprint
from index.dense_store import DenseStore
from index.index_files import index_generation
from index.sg_store import SGPhraseStore
from index.sqlite_index import SqliteIndex
from parsers.base import get_parser
from parsers.errors import DTDialogError

SHIPPED = sorted(p for p in prebuilt.PREBUILT_DIR.glob("builtin-*") if p.is_dir())
#: What the shipped bundles may weigh together (they are in every install).
MAX_SHIPPED_BYTES = 5_000_000


@pytest.fixture(scope="module")
def rules():
    return get_parser("rules")


@pytest.fixture()
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("DTDIALOG_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _copy_bundle(tmp_path: Path, name: str = "rules") -> Path:
    root = tmp_path / "bundles"
    shutil.copytree(prebuilt.bundle_dir(name), prebuilt.bundle_dir(name, root))
    return root


def test_a_bundle_ships_for_the_engines_parser_and_they_stay_small(monkeypatch):
    monkeypatch.delenv("DTDIALOG_PARSER", raising=False)
    names = [p.name for p in SHIPPED]
    assert f"builtin-{engine_parser_name()}" in names
    total = sum(f.stat().st_size for p in SHIPPED for f in p.iterdir())
    assert 0 < total <= MAX_SHIPPED_BYTES


@pytest.mark.parametrize("folder", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_shipped_bundle_matches_the_current_corpus_parser_and_encoder(folder):
    """Fails when the corpus, a parser's files, the encoder or a format changes without
    ``python -m dtdialog.setup.make_prebuilt --parser NAME`` being run again."""
    manifest = prebuilt.read_manifest(folder)
    assert manifest is not None
    try:
        parser = get_parser(folder.name.removeprefix("builtin-"))
    except (DTDialogError, ImportError) as exc:  # e.g. the neural parser without the [dense] extra
        pytest.skip(f"parser of {folder.name} unavailable here: {exc}")
    stale = prebuilt.stale_fields(manifest, prebuilt.builtin_stamp(parser, load_builtin_corpus()))
    assert stale == [], f"{folder.name} is stale in {stale}: run python -m dtdialog.setup.make_prebuilt --parser {parser.name}"
    for entry in manifest["files"].values():
        assert (folder / entry["file"]).is_file()


def test_install_unpacks_the_index_with_its_side_files_in_step(tmp_path, rules):
    dialogues = load_builtin_corpus()
    target = tmp_path / "index.sqlite"
    assert prebuilt.install_builtin(target, parser=rules, dialogues=dialogues, progress=False)
    manifest = prebuilt.read_manifest(prebuilt.bundle_dir("rules"))
    assert index_generation(target) == manifest["generation"]
    with SqliteIndex(target) as index:
        assert sorted(index.ids()) == sorted(_answer_ids(dialogues))
        store = DenseStore.load(target, generation=index.generation())
        assert len(store) == index.count()
        assert SGPhraseStore.load(target, generation=index.generation()).in_step_with(index)
    assert prebuilt.file_digest(target) == manifest["files"]["index"]["sha256"]


def test_a_first_start_uses_the_bundle_and_a_later_one_reopens_it(home, rules):
    first = build_engine(EngineSpec(ranker="rules"), parser=rules, progress=False, warm=False)
    try:
        assert not first.built and first.index.count() > 0
        location = first.index_location
    finally:
        first.close()
    again = build_engine(EngineSpec(ranker="rules"), parser=rules, progress=False, warm=False)
    try:
        assert not again.built and again.index_location == location
    finally:
        again.close()
    key = json.dumps(prebuilt.parser_identity(rules), sort_keys=True)
    assert Path(location) == builtin_index_path(corpus_fingerprint(load_builtin_corpus(), key))


def test_a_stale_stamp_builds_the_index_instead(home, tmp_path, rules, monkeypatch, capsys):
    """The corpus changed but the bundle was not regenerated: the index is built from the corpus as it is."""
    import data.builtin

    few = load_builtin_corpus()[:3]
    monkeypatch.setattr(data.builtin, "load_builtin_corpus", lambda directory=None: few)
    engine = build_engine(EngineSpec(ranker="rules"), parser=rules, progress=True, warm=False)
    try:
        assert engine.built
        assert sorted(engine.index.ids()) == sorted(_answer_ids(few))
    finally:
        engine.close()
    assert "out of date (corpus changed)" in capsys.readouterr().err


def _answer_ids(dialogues) -> list[str]:
    return [d.answer_id(position) for d in dialogues for position, _ in d.answers()]


@pytest.mark.parametrize("field", ["corpus", "encoder", "formats", "parser"])
def test_any_stale_field_refuses_the_install(tmp_path, rules, field, capsys):
    root = _copy_bundle(tmp_path)
    path = prebuilt.bundle_dir("rules", root) / prebuilt.MANIFEST
    manifest = json.loads(path.read_text())
    manifest["stamp"][field] = {"changed": True}
    path.write_text(json.dumps(manifest))
    target = tmp_path / "home" / "index.sqlite"
    assert not prebuilt.install_builtin(target, parser=rules, dialogues=load_builtin_corpus(), root=root)
    assert not target.parent.exists() or not any(target.parent.iterdir())
    assert f"({field} changed)" in capsys.readouterr().err


def test_no_bundle_for_a_parser_means_a_build(tmp_path, rules):
    assert not prebuilt.install_builtin(tmp_path / "i.sqlite", parser=rules, dialogues=load_builtin_corpus(),
                                        root=tmp_path / "empty", progress=False)


@pytest.mark.slow
@pytest.mark.dense
def test_a_rebuild_gives_the_shipped_bundle(tmp_path, rules):
    """Rebuilding today gives the same stamp and the same content: trees, phrases and (within float noise)
    vectors. Catches a change of the parser's or the builder's code that leaves every stamp field alone."""
    from index.dense import dense_available

    if not dense_available():
        pytest.skip("needs the [dense] extra")
    rebuilt = make_prebuilt.prebuild("rules", root=tmp_path / "bundles", progress=False)
    shipped = prebuilt.bundle_dir("rules")
    assert prebuilt.read_manifest(rebuilt)["stamp"] == prebuilt.read_manifest(shipped)["stamp"]
    dialogues = load_builtin_corpus()
    for name, root in (("new", tmp_path / "bundles"), ("old", None)):
        assert prebuilt.install_builtin(tmp_path / name / "i.sqlite", parser=rules, dialogues=dialogues, root=root)
    new, old = tmp_path / "new" / "i.sqlite", tmp_path / "old" / "i.sqlite"
    assert _documents(new) == _documents(old)
    with SqliteIndex(new) as a, SqliteIndex(old) as b:
        sg_new = SGPhraseStore.load(new, generation=a.generation())
        sg_old = SGPhraseStore.load(old, generation=b.generation())
        dense_new = DenseStore.load(new, generation=a.generation())
        dense_old = DenseStore.load(old, generation=b.generation())
    assert sg_new.ids == sg_old.ids and all(sg_new.phrases(i) == sg_old.phrases(i) for i in sg_new.ids)
    assert dense_new.ids == dense_old.ids and dense_new.model == dense_old.model
    cos = np.sum(np.asarray(dense_new.vectors, dtype=np.float32) * np.asarray(dense_old.vectors, dtype=np.float32),
                 axis=1)
    assert float(cos.min()) > 0.999


def _documents(path: Path) -> dict[str, bytes]:
    conn = sqlite3.connect(path)
    try:
        return dict(conn.execute("SELECT id, doc FROM docs").fetchall())
    finally:
        conn.close()


def test_the_shipped_vectors_are_the_portable_runtime_s():
    # a bundle remade on a CPU with bfloat16 units held OpenVINO's vectors: every first chat elsewhere re-encoded the
    # whole corpus before its first answer, and the rebuild test failed on every other machine
    import gzip

    from parsers.encoder import vectors_label

    with gzip.open(prebuilt.bundle_dir("rules") / "dense.ids.json.gz", "rt", encoding="utf-8") as f:
        model = json.load(f)["model"]
    assert model == vectors_label(runtime=make_prebuilt.SHIPPED_RUNTIME)
