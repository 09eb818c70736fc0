"""One default parser for ``dtdialog parse``, ``POST /parse`` and the engine, and the paper's tree from it."""

from __future__ import annotations

import json

import pytest

from dtdialog.cli import main
from dtdialog.setup.spec_resolution import engine_parser_name
from parsers import base
from parsers.base import get_parser
from parsers.neural.encoder import encoder_id
from parsers.neural.model import MANIFEST_FILE, WEIGHTS_FILE
from parsers.relations import CONCESSION, JOINT

#: The paper's question as the repository's tests and corpus spell it.
PAPER = ("I have checked the spark plugs, replaced the battery, also replaced ignition coils and the solenoid, "
         "but I still could not start my car.")
#: The same question as issue 32 words it, with the complaint first.
PAPER_WITH_COMPLAINT = ("My car will not start. I have checked the spark plugs, replaced the battery, and replaced "
                        "the coils and the solenoid, but it still could not start.")


def _manifest(folder, *, encoder: str | None = None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / WEIGHTS_FILE).write_bytes(b"weights")
    (folder / MANIFEST_FILE).write_text(json.dumps({"encoder": {"id": encoder or encoder_id()}}))
    return folder


def test_parse_and_the_engine_share_one_default(monkeypatch, capsys):
    monkeypatch.delenv("DTDIALOG_PARSER", raising=False)
    monkeypatch.setattr(base, "neural_ready", lambda model_dir=None: True)  # the neural parser installed
    assert base.default_parser_name() == engine_parser_name() == base.DEFAULT_PARSER == "rules"
    assert get_parser().name == "rules"
    assert main(["parse", "--json", "The car stalls because the pump failed."]) == 0
    assert json.loads(capsys.readouterr().out)["parser"] == "rules"
    monkeypatch.setattr(base, "DEFAULT_PARSER", "isanlp")  # a new default moves both
    assert base.default_parser_name() == engine_parser_name() == "isanlp"


def test_the_environment_and_a_name_move_both(monkeypatch):
    monkeypatch.setenv("DTDIALOG_PARSER", "neural")
    assert base.default_parser_name() == engine_parser_name() == "neural"
    assert base.default_parser_name("rules") == engine_parser_name("rules") == "rules"


def test_neural_is_ready_only_with_its_files_and_encoder(tmp_path, monkeypatch):
    monkeypatch.setattr("parsers.neural.encoder.encoder_available", lambda: True)
    assert base.neural_ready(_manifest(tmp_path / "a"))
    assert not base.neural_ready(_manifest(tmp_path / "b", encoder="torch-dynamic-int8"))
    (tmp_path / "a" / MANIFEST_FILE).write_text("{broken")
    assert not base.neural_ready(tmp_path / "a")
    assert not base.neural_ready(tmp_path / "missing")
    monkeypatch.setattr("parsers.neural.encoder.encoder_available", lambda: False)
    assert not base.neural_ready(_manifest(tmp_path / "c"))


def _texts(tree, node) -> list[str]:
    return [e.text for e in tree.edus_of(node)]


def _check_paper_concession(tree, node) -> None:
    """``Concession[S][N](Joint(checked plugs, replaced battery, replaced coils and solenoid), still could not start)``."""
    assert node.relation == CONCESSION and tuple(node.nuclearity) == ("S", "N"), tree.to_compact()
    actions, failure = node.children
    assert actions.relation == JOINT and set(actions.nuclearity) == {"N"} and len(actions.children) == 3
    parts = [" ".join(_texts(tree, child)) for child in actions.children]
    assert "checked the spark plugs" in parts[0]
    assert "replaced the battery" in parts[1]
    assert "coils and the solenoid" in parts[2]
    assert failure.is_leaf and "still could not start" in _texts(tree, failure)[0]


@pytest.mark.parametrize("name", [None, "rules"])
def test_the_default_parser_builds_the_papers_tree(monkeypatch, name):
    monkeypatch.delenv("DTDIALOG_PARSER", raising=False)
    tree = get_parser(name).parse(PAPER)
    _check_paper_concession(tree, tree.root)


def test_the_default_parser_builds_the_papers_tree_after_the_complaint(monkeypatch):
    monkeypatch.delenv("DTDIALOG_PARSER", raising=False)
    tree = get_parser().parse(PAPER_WITH_COMPLAINT)
    concessions = tree.nodes_with_relation(CONCESSION)
    assert len(concessions) == 1, tree.to_compact()
    _check_paper_concession(tree, concessions[0])
    assert "My car will not start." not in " ".join(_texts(tree, concessions[0]))


def test_trained_is_gone_with_one_line_naming_the_parsers(capsys):
    from parsers.errors import ConfigError
    from parsers.train import main as train_main

    assert "trained" not in base.available_parsers()
    with pytest.raises(ConfigError, match=r"^unknown parser 'trained'; available: .*neural, rules\b"):
        get_parser("trained")
    assert main(["parse", "--parser", "trained", "The car stalls."]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "unknown parser 'trained'" in err and "rules" in err
    with pytest.raises(SystemExit):
        train_main(["--parser", "trained", "--out", "unused"])
