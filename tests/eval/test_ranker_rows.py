"""Ranker training rows from multi-step dialogues: one row list per step, gold = the logged answer."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.dense


def test_each_step_of_each_dialogue_becomes_a_training_list(tmp_path):
    from index.dense import dense_available

    if not dense_available():
        pytest.skip("the [dense] extra (onnxruntime, tokenizers) is not installed")
    from data.builtin import load_builtin_corpus
    from dtdialog.ranking.features import FEATURE_SETS
    from eval.datasets import build_eval_set
    from eval.ranker_rows import collect_dialogue_rows

    eval_set = build_eval_set("builtin-sample", load_builtin_corpus()[:6])
    rows = collect_dialogue_rows(eval_set, cache=tmp_path, k=10, progress=False)
    assert len(rows) == sum(min(d.n_answers, 3) for d in eval_set.dialogues)
    first = rows[0]
    assert first.question_id.endswith("/1") and len(first.ids) == len(first.rows) == len(first.gold)
    assert set(FEATURE_SETS["hybrid+dt"]) <= set(first.rows[0])
    assert sum(any(r.gold) for r in rows) >= len(rows) // 2  # the logged answer is usually among the candidates
    # a later step never offers an answer given earlier in the same dialogue (teacher forcing excludes it)
    by_dialogue = {}
    for r in rows:
        by_dialogue.setdefault(r.question_id.rsplit("/", 1)[0], []).append(r)
    for d in eval_set.dialogues:
        for step, r in enumerate(by_dialogue.get(d.id, [])):
            assert not set(d.answer_ids[:step]) & set(r.ids)
    again = collect_dialogue_rows(eval_set, cache=tmp_path, k=10, progress=False)  # read back from the cache
    assert [r.question_id for r in again] == [r.question_id for r in rows]


def test_feature_code_digest_changes_with_the_feature_code(tmp_path):
    from eval.ranker_rows import FEATURE_CODE, feature_code_digest

    for package in FEATURE_CODE:
        (tmp_path / package).mkdir()
        (tmp_path / package / "a.py").write_text("x = 1\n")
    first = feature_code_digest(tmp_path)
    assert feature_code_digest(tmp_path) == first
    (tmp_path / "dtdialog" / "a.py").write_text("x = 2\n")
    assert feature_code_digest(tmp_path) != first
