"""``dtdialog chat`` start-up: the warm-up runs after the engine is assembled, and a failure in it still stops the
chat with one line (issue 16, item 5)."""

from __future__ import annotations

import json
import shutil

import pytest

from dtdialog.cli import main
from dtdialog.ranking.learned_scorer import DEFAULT_MODEL
from dtdialog.setup.assembly import EngineSpec, build_engine


def test_an_unwarmed_engine_loads_its_lazy_parts_in_warm_up(tmp_path):
    engine = build_engine(EngineSpec(ranker="rules", sessions_path=str(tmp_path / "s.sqlite")), progress=False,
                          warm=False)
    try:
        assert engine.parser._nlp is None and engine.manager.scope._profile is None
        engine.warm_up()
        assert engine.parser._nlp is not None and engine.manager.scope._profile.n > 0
    finally:
        engine.close()


@pytest.mark.dense
def test_a_ranker_model_that_cannot_be_read_stops_the_chat_with_one_line(tmp_path, capsys):
    """The estimator is unpickled in the background warm-up now; its failure must still reach the user."""
    from index.dense import dense_available

    if not dense_available():
        pytest.skip("needs the [dense] extra")
    model = tmp_path / "ranker.joblib"
    model.write_bytes(b"not a joblib file")
    shutil.copy(DEFAULT_MODEL.with_suffix(".json"), model.with_suffix(".json"))  # a readable manifest
    spec = tmp_path / "engine.json"
    EngineSpec(ranker="learned", ranker_model=str(model)).save(spec)
    script = tmp_path / "turns.txt"
    script.write_text("my car overheats in traffic\n", encoding="utf-8")
    code = main(["chat", "--engine", str(spec), "--script", str(script), "--sessions", str(tmp_path / "s.sqlite"),
                 "--quiet", "--json"])
    err = capsys.readouterr().err
    assert code == 2
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "cannot read ranker model" in errors[0] and "Traceback" not in err


@pytest.mark.dense
def test_the_learned_chat_answers_after_a_background_warm_up(tmp_path, capsys):
    from index.dense import dense_available

    if not dense_available():
        pytest.skip("needs the [dense] extra")
    script = tmp_path / "turns.txt"
    script.write_text("my car overheats in traffic but is fine on the highway\n", encoding="utf-8")
    code = main(["chat", "--ranker", "learned", "--script", str(script), "--sessions", str(tmp_path / "s.sqlite"),
                 "--quiet", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    turn = json.loads(out.strip().splitlines()[-1])
    assert turn["answer_id"] and "fan" in turn["reply"].lower()
