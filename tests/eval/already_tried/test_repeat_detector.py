"""``eval.already_tried.detector``: the repeat-reading features, the out-of-fold scoring and the command."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from eval.already_tried.detector import (
    SETS,
    Row,
    dense_features,
    evaluate,
    lexical_features,
    main,
    out_of_fold,
    sentences,
)
from parsers.errors import InputError

FIXTURE = Path(__file__).with_name("tried_questions.jsonl")


def test_an_answer_naming_the_tried_part_first_is_read_apart_from_one_naming_it_late():
    from dtdialog.understanding.entities import EntityNormalizer

    normalizer = EntityNormalizer()
    heads = [normalizer.terms_of_text("battery")]
    early = lexical_features("Replace the battery first. Then check the starter relay.", heads, normalizer)
    late = lexical_features("Check the starter relay. Then the ground strap. The battery is fine.", heads, normalizer)
    never = lexical_features("Check the starter relay and the ground strap.", heads, normalizer)
    assert (early["named"], early["named_first"]) == (1.0, 1.0)
    assert (late["named"], late["named_first"]) == (1.0, 0.0)
    assert never == {"named": 0.0, "named_first": 0.0, "named_share": 0.0}
    assert early["named_share"] > 0


def test_sentences_keep_the_answers_lead():
    text = " ".join(f"Sentence {i}." for i in range(12))
    assert sentences(text)[:2] == ["Sentence 0.", "Sentence 1."] and len(sentences(text)) == 8


def test_dense_features_read_the_best_sentence_and_the_first_two_apart():
    e = np.eye(4, dtype=np.float32)
    sentence_vectors = np.stack([e[0], e[1], e[2]])  # the tried action is said only in the third sentence
    found = dense_features(sentence_vectors, np.stack([e[2]]), e[3], e[3])
    assert found == {"sentence_best": 1.0, "sentence_first": 0.0, "answer_question": 1.0}
    assert dense_features(sentence_vectors, None, e[0], e[3])["sentence_best"] == 0.0


def _rows(n_questions: int, *, signal: str) -> list[Row]:
    """Four candidates per question, one of them a repeat; ``signal`` names the feature that marks it (0 elsewhere)."""
    rows = []
    for q in range(n_questions):
        for k in range(4):
            repeats = k == q % 4
            features = {f: 0.0 for features, _ in SETS.values() for f in features}
            features[signal] = float(repeats) + 0.01 * k  # ties broken, never crossing the classes
            rows.append(Row(question=q, repeats=repeats, relevant=k < 2 or repeats, engine=dict(features),
                            judges={**features, "sentence_best": float(repeats)}))
    return rows


def test_a_feature_that_marks_the_repeats_separates_them_out_of_fold_and_one_the_set_lacks_does_not():
    found = evaluate(_rows(20, signal="named_first"))
    assert found["rule"]["all"]["auc"] < 0.7  # the rule set does not hold the marking feature
    assert found["rule + lexical"]["all"]["auc"] == 1.0 and found["rule + lexical"]["relevant"]["auc"] == 1.0
    assert found["rule"]["all"]["repeats"] == 20 and found["rule"]["all"]["n"] == 80


def test_the_judges_phrases_are_read_only_by_their_own_set():
    rows = _rows(20, signal="answer_question")
    for r in rows:
        r.engine["answer_question"] = 0.0  # the engine's reading has nothing; the judges' phrases do
    found = evaluate(rows)
    assert found["rule + lexical + dense"]["all"]["auc"] < 0.7
    assert found["rule + lexical + dense, the judges' tried phrases"]["all"]["auc"] == 1.0


def test_folds_never_score_a_question_with_a_model_fitted_on_it():
    # the label is a question's own: only a model that saw the question could score it; out of fold it cannot
    groups = np.repeat(np.arange(10), 4)
    y = (groups % 2 == 0).astype(int)
    X = groups.reshape(-1, 1).astype(float)  # the question's id: a perfect key in-sample, no use out of fold
    p = out_of_fold(X, y, groups)
    assert not np.isnan(p).any()
    from sklearn.metrics import roc_auc_score
    assert roc_auc_score(y, p) < 0.9


def test_too_few_questions_is_a_clear_error():
    with pytest.raises(InputError, match="at least 5 judged questions"):
        out_of_fold(np.zeros((8, 1)), np.array([0, 1] * 4), np.array([0, 0, 1, 1, 2, 2, 3, 3]))


def test_the_command_refuses_a_file_with_too_few_questions_in_one_line(capsys):
    assert main(["--data", str(FIXTURE), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "at least 5 judged questions" in err and len(err.splitlines()) == 1


def test_the_command_writes_its_report(tmp_path, capsys):
    # five copies of the fixture's two questions, under new ids: enough questions for five folds
    lines = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]
    data = tmp_path / "judged.jsonl"
    data.write_text("".join(json.dumps({**row, "id": f"{row['id']}-{k}"}) + "\n" for k in range(5) for row in lines),
                    encoding="utf-8")
    out = tmp_path / "out"
    assert main(["--data", str(data), "--no-progress", "--out", str(out)]) == 0
    report = json.loads((out / "repeat_detector.json").read_text(encoding="utf-8"))
    assert set(report["sets"]) == set(SETS) and report["folds"] == 5
    assert report["sets"]["rule"]["all"]["n"] == 25 and report["sets"]["rule"]["relevant"]["n"] == 20
    assert "relevant only: ROC AUC" in (out / "repeat_detector.md").read_text(encoding="utf-8")
    assert "what the engine's signals can tell apart" in capsys.readouterr().out
