"""Which parser is the default: ``neural`` once its manifest shows it beat the rules on GUM and it can run, the
rules otherwise; the engine keeps the parser its ranker was trained with. No torch needed."""

from __future__ import annotations

import json

from dtdialog.spec_resolution import ENGINE_PARSER, engine_parser_name
from parsers import base
from parsers.neural.encoder import encoder_id
from parsers.neural.model import MANIFEST_FILE, WEIGHTS_FILE

RULES = {"seg_f1": 0.86, "span_f1": 0.43, "nuc_f1": 0.30, "rel_f1": 0.22, "full_f1": 0.22}
BETTER = {k: v + 0.01 for k, v in RULES.items()}


def _manifest(folder, test: dict, rules: dict, *, encoder: str | None = None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / WEIGHTS_FILE).write_bytes(b"weights")
    manifest = {"scores": {"test": test}, "rules_gum_test": rules, "encoder": {"id": encoder or encoder_id()}}
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest))
    return folder


def test_neural_is_ready_only_when_it_beat_the_rules_on_every_figure(tmp_path, monkeypatch):
    monkeypatch.setattr("parsers.neural.encoder.encoder_available", lambda: True)
    assert base.neural_default_ready(_manifest(tmp_path / "a", BETTER, RULES))
    assert not base.neural_default_ready(_manifest(tmp_path / "b", {**BETTER, "nuc_f1": 0.29}, RULES))
    assert not base.neural_default_ready(_manifest(tmp_path / "c", BETTER, {}))  # nothing to compare with
    (tmp_path / "a" / MANIFEST_FILE).write_text("{broken")
    assert not base.neural_default_ready(tmp_path / "a")
    assert not base.neural_default_ready(tmp_path / "missing")
    monkeypatch.setattr("parsers.neural.encoder.encoder_available", lambda: False)
    assert not base.neural_default_ready(_manifest(tmp_path / "d", BETTER, RULES))


def test_heads_of_another_encoder_are_not_ready(tmp_path, monkeypatch):
    monkeypatch.setattr("parsers.neural.encoder.encoder_available", lambda: True)
    assert not base.neural_default_ready(_manifest(tmp_path / "e", BETTER, RULES, encoder="torch-dynamic-int8"))


def test_default_parser_name_follows_readiness_and_the_environment(monkeypatch):
    monkeypatch.delenv("DTDIALOG_PARSER", raising=False)
    monkeypatch.setattr(base, "neural_default_ready", lambda model_dir=None: True)
    assert base.default_parser_name() == "neural"
    monkeypatch.setattr(base, "neural_default_ready", lambda model_dir=None: False)
    assert base.default_parser_name() == "rules"
    monkeypatch.setenv("DTDIALOG_PARSER", "trained")
    assert base.default_parser_name() == "trained"


def test_the_engine_keeps_its_rankers_parser(monkeypatch):
    monkeypatch.delenv("DTDIALOG_PARSER", raising=False)
    monkeypatch.setattr(base, "neural_default_ready", lambda model_dir=None: True)
    assert engine_parser_name() == ENGINE_PARSER == "rules"
    assert engine_parser_name("neural") == "neural"
    monkeypatch.setenv("DTDIALOG_PARSER", "neural")
    assert engine_parser_name() == "neural"


def test_the_shipped_model_is_the_default_where_it_can_run():
    """The shipped manifest must show a win on every figure; then readiness is only a matter of the install."""
    from parsers.neural.encoder import encoder_available

    assert base.neural_default_ready() == encoder_available()
