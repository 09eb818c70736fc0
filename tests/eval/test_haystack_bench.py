"""eval.haystack_bench: the summaries, paired CIs and target lines without Haystack, and one small real run."""

import json
import os
from pathlib import Path

import pytest

from eval.haystack_bench import (
    DT_ROW,
    SystemRun,
    bound_lines,
    bounds,
    haystack_available,
    main,
    markdown_table,
    summarize_runs,
    target_checks,
    target_lines,
)
from parsers.errors import InputError


def _runs(dt_correct, hay_correct, dt_ms, hay_ms):
    return [SystemRun(DT_ROW, list(dt_correct), list(dt_ms)), SystemRun("haystack RRF", list(hay_correct), list(hay_ms))]


def test_summary_gives_p1_with_ci_latency_and_paired_difference():
    dt = [True] * 8 + [False] * 2
    hay = [True] * 5 + [False] * 5
    rows = summarize_runs(_runs(dt, hay, [10.0 * (i + 1) for i in range(10)], [5.0] * 10))
    assert rows[DT_ROW]["p1"] == 0.8 and rows["haystack RRF"]["p1"] == 0.5
    assert rows[DT_ROW]["p1_lo"] <= 0.8 <= rows[DT_ROW]["p1_hi"]
    assert rows[DT_ROW]["p50_ms"] == pytest.approx(55.0, abs=5.01)
    assert "p1_dtdialog_minus_this" not in rows[DT_ROW]
    diff = rows["haystack RRF"]["p1_dtdialog_minus_this"]
    # dtdialog minus the other system, paired: every question dtdialog misses the other misses too
    assert diff["diff"] == pytest.approx(0.3)
    assert 0.0 <= diff["lo"] <= 0.3 <= diff["hi"]


def test_summary_refuses_runs_over_different_questions():
    with pytest.raises(InputError, match="answered 2 questions"):
        summarize_runs(_runs([True, False, True], [True, False], [1, 2, 3], [1, 2]))
    with pytest.raises(InputError, match="no run named"):
        summarize_runs([SystemRun("haystack RRF", [True], [1.0])])


def _rows(dt_p95, **hay_p95):
    return {DT_ROW: {"p95_ms": dt_p95}, **{name: {"p95_ms": v} for name, v in hay_p95.items()}}


def test_targets_compare_against_the_faster_haystack_row():
    targets = target_checks(_rows(90.0, rrf=200.0, dbsf=170.0), dt_rate=90.0, haystack_rate=30.0)
    assert targets["p95_ms"]["met"]
    assert targets["p95_ratio"]["against"] == "dbsf"
    assert targets["p95_ratio"]["value"] == pytest.approx(90 / 170, abs=1e-3)
    assert not targets["p95_ratio"]["met"]  # 0.53x the faster row, though 0.45x the slower one
    assert targets["index_ratio"]["value"] == pytest.approx(3.0) and targets["index_ratio"]["met"]


def test_target_lines_say_met_or_missed():
    lines = target_lines(target_checks(_rows(120.0, rrf=300.0), dt_rate=10.0, haystack_rate=29.0))
    assert len(lines) == 3
    assert lines[0].endswith("MISSED") and "120.0 ms" in lines[0]
    assert lines[1].endswith("met") and "0.40x" in lines[1]
    assert lines[2].endswith("MISSED") and "0.34x" in lines[2]


def test_markdown_table_has_one_row_per_system_and_the_settings():
    rows = summarize_runs(_runs([True, False], [True, True], [10, 20], [30, 40]))
    result = {"rows": rows, "indexing_answers_per_second": {"dtdialog": 50.0, "haystack": 25.0},
              "targets": target_checks(rows, dt_rate=50.0, haystack_rate=25.0), "questions": 2, "pool": 7,
              "settings": {"parser": "rules", "haystack_version": "2.x", "torch_threads": 1, "encoder_threads": 1,
                           "encoder_workers": 2, "cpu_count": 2, "load_average": [0.5, 0.7]}}
    table = markdown_table(result)
    assert f"| {DT_ROW} | 0.500" in table and "| haystack RRF | 1.000" in table
    assert "| 50.0 |" in table and "| 25.0 |" in table
    assert "load average 0.5 -> 0.7" in table and "2.00x" in table


def test_bounds_cap_the_indexing_ratio_and_floor_the_turn_p95():
    # 10 + 30 ms of CPU an answer on 2 cores: at most 50 answers/s, whatever else gets faster; 2x Haystack's 25
    b = bounds(encode_cpu_ms=10.0, parse_cpu_ms=30.0, cores=2, haystack_rate=25.0, floor_ms=[10.0] * 19 + [40.0],
               haystack_p95=50.0)
    assert b["index_answers_per_second_at_most"] == 50.0 and b["index_ratio_at_most"] == 2.0
    assert not b["index_target_reachable"]
    assert b["parse_or_encode_p95_ms"] == pytest.approx(11.5)  # numpy's p95 of 19 x 10 and one 40
    assert b["p95_ratio_at_least"] == pytest.approx(0.23)
    assert b["p95_target_budget_ms"] == pytest.approx(25.0 - 11.5)
    lines = bound_lines(b)
    assert "at most 50.0 answers/s, 2.00x Haystack: 3.0x is out of reach" in lines[0] and "13.5 ms at p95" in lines[1]
    fast = bounds(encode_cpu_ms=5.0, parse_cpu_ms=5.0, cores=2, haystack_rate=25.0, floor_ms=[30.0], haystack_p95=50.0)
    assert fast["index_target_reachable"] and "is reachable" in bound_lines(fast)[0]
    assert fast["p95_target_budget_ms"] == pytest.approx(-5.0)  # the floor alone is over 0.5x: nothing left


def test_bad_arguments_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--limit", "0"])
    assert exc.value.code == 2
    assert "--limit" in capsys.readouterr().err


def _shared_data() -> Path:
    return Path(os.environ.get("DTDIALOG_SHARED_DATA", "/work/shared/data"))


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.torch
@pytest.mark.timeout(1800)
def test_small_end_to_end_run(tmp_path, capsys, monkeypatch):
    why = haystack_available()
    if why:
        pytest.skip(why)
    if not (_shared_data() / "mechanics_qa").is_dir():
        pytest.skip(f"the shared mechanics_qa data is not under {_shared_data()}")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the model is a local folder: never ask the network
    out = tmp_path / "bench.json"
    assert main(["--data-dir", str(_shared_data()), "--limit", "5", "--quiet", "--json", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["questions"] == 5 and result["pool"] > 5
    assert set(result["rows"]) == {DT_ROW, "haystack RRF", "haystack DBSF"}
    for row in result["rows"].values():
        assert row["turns"] == 5 and row["p95_ms"] > 0
    assert all(v > 0 for v in result["indexing_answers_per_second"].values())
    b = result["bounds"]
    assert b["encode_cpu_ms_per_answer"] > 0 and b["parse_cpu_ms_per_answer"] > 0 and b["parse_or_encode_p95_ms"] > 0
    out = capsys.readouterr().out
    assert "dtdialog turn p95" in out and "bound: encoding and parsing an answer alone" in out
