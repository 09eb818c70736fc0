"""``load_runtime``: a corpus is indexed once into its fingerprinted file under ``$DTDIALOG_HOME``."""

from __future__ import annotations

import json

import pytest

from data.model import Dialogue, Turn


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


def test_corpus_is_built_once_then_reused(tmp_path, monkeypatch, rules_parser):
    from dtdialog.runtime import load_runtime

    monkeypatch.setenv("DTDIALOG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DTDIALOG_RANKER", "rules")
    corpus = tmp_path / "mini.jsonl"
    dialogues = [Dialogue(id="d1", turns=(Turn("Q", "My brakes squeal when I stop."),
                                          Turn("A", "If the pads are new, the squeal usually comes from glazed rotors."))),
                 Dialogue(id="d2", turns=(Turn("Q", "The battery dies overnight."),
                                          Turn("A", "Because something drains it, test the parasitic draw.")))]
    corpus.write_text("\n".join(json.dumps(d.to_dict()) for d in dialogues) + "\n")
    first = load_runtime(corpus=corpus, corpus_format="jsonl", parser=rules_parser, progress=False)
    try:
        assert first.built and first.index.count() == 2
        assert first.index_location.startswith(str(tmp_path / "home"))
        hits = first.selector.rank(question="My brakes squeal even though the pads are new.")
        assert all(h.document.id in ("d1#1", "d2#1") for h in hits)
    finally:
        first.close()
    again = load_runtime(corpus=corpus, corpus_format="jsonl", parser=rules_parser, progress=False)
    try:
        assert not again.built and again.index_location == first.index_location
    finally:
        again.close()


def test_bad_options_are_config_errors(tmp_path):
    from dtdialog.runtime import load_runtime
    from parsers.errors import ConfigError, InputError

    with pytest.raises(ConfigError):
        load_runtime(backend="solr", progress=False)
    with pytest.raises(InputError):
        load_runtime(index_path=tmp_path, progress=False)  # a directory is not an index file
