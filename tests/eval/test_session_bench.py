"""The session-store benchmark runs end to end on a few turns and keeps ``max_traces`` (no timing assertions)."""

from __future__ import annotations

import json

import pytest

from eval.session_bench import MODES, format_result, run, synthetic_trace
from parsers.errors import DTDialogError


def test_synthetic_trace_has_about_the_asked_size():
    assert 3 * 1024 <= len(json.dumps(synthetic_trace(1, kb=4))) <= 5 * 1024


def test_run_reports_every_mode_and_prunes_to_max_traces(tmp_path):
    result = run(turns=6, trace_kb=1, max_traces=4, folder=tmp_path)
    assert set(result["modes"]) == set(MODES)
    for mode in MODES:
        assert result["modes"][mode]["traces_kept"] == 4
        assert result["modes"][mode]["late"]["turns"] == 2
    assert "history" in format_result(result)
    with pytest.raises(DTDialogError):
        run(turns=1, trace_kb=1, folder=tmp_path)
