"""The shipped judgments: ids and labels only (the texts stay in the shared data), and what they resolve to."""

from __future__ import annotations

import json

import pytest

from eval.already_tried.gold import JUDGMENTS_PATH, SECOND_JUDGE_PATH, load_shipped
from eval.datasets import default_data_dir


def _rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _shared():
    if not (default_data_dir() / "mechanics_qa" / "mechanics_qa_dev.jsonl").is_file():
        pytest.skip(f"needs the shared data at {default_data_dir()} (set $DTDIALOG_SHARED_DATA)")
    return load_shipped()


def test_the_judgments_hold_labels_and_ids_but_no_licensed_text():
    rows = _rows(JUDGMENTS_PATH)
    assert sum(r["states_tried"] for r in rows) >= 200
    for r in rows:
        assert set(r) == {"id", "states_tried", "tried", "candidates"}, r["id"]
        assert r["id"].startswith(("mechanics:", "reddit:"))
        for c in r["candidates"]:
            assert set(c) == {"id", "relevant", "repeats_tried", "why"}
            assert isinstance(c["relevant"], bool) == r["states_tried"]
        assert len(r["candidates"]) <= 10 and len({c["id"] for c in r["candidates"]}) == len(r["candidates"])


def test_a_second_judge_read_at_least_50_of_the_same_questions():
    first = {r["id"] for r in _rows(JUDGMENTS_PATH)}
    second = {r["id"] for r in _rows(SECOND_JUDGE_PATH)}
    assert len(second) >= 50 and second <= first


@pytest.mark.shared_data
def test_every_judged_id_resolves_to_shared_text_and_the_accepted_answer_is_marked_gold():
    gold = _shared()
    assert len(gold.questions) >= 200 and gold.judged == len(_rows(JUDGMENTS_PATH))
    pool = {a.id for a in gold.pool}
    assert all(c.id in pool and c.text for q in gold.questions for c in q.candidates)
    mechanics = [q for q in gold.questions if q.id.startswith("mechanics:")]
    assert all(sum(c.gold for c in q.candidates) == 1 for q in mechanics)
    assert not any(c.gold for q in gold.questions if q.id.startswith("reddit:") for c in q.candidates)


@pytest.mark.shared_data
def test_the_engine_reads_tried_actions_in_real_questions():
    from dtdialog.understanding.entities import EntityNormalizer
    from dtdialog.understanding.tried import extract_tried
    from parsers.base import get_parser

    by_id = {q.id: q for q in _shared().questions}
    parser, normalizer = get_parser("rules"), EntityNormalizer()

    def read(qid):
        return {(a.verb_class, term) for a in extract_tried(parser.parse(by_id[qid].question), normalizer)
                for term in a.objects}

    # "I replaced the front rotors and pads ..." (Stack Exchange, a brake question)
    assert {("replaced", "rotor"), ("replaced", "pad")} <= read("mechanics:auto_11612")
    # "replaced the pump ... flushed the system again" (a coolant question)
    assert {("replaced", "pump"), ("cleaned", "system")} <= read("mechanics:auto_74092")


@pytest.mark.shared_data
@pytest.mark.dense
def test_the_candidates_command_rebuilds_what_the_judges_read():
    pytest.importorskip("onnxruntime", reason="the dense ranking needs the [dense] extra")
    pytest.importorskip("rank_bm25", reason="the BM25 ranking needs the [eval] extra")
    from eval.already_tried.candidates import build

    _shared()
    built = build(default_data_dir())
    judged = _rows(JUDGMENTS_PATH)
    assert [q["id"] for q in built] == [r["id"] for r in judged]
    assert [[c["id"] for c in q["candidates"]] for q in built] == [[c["id"] for c in r["candidates"]] for r in judged]
