"""``eval.load_test --workers``: one server per worker count in one run, and bad counts refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.load_test import compare, format_report, main, parse_workers, plot


def test_worker_lists_are_read() -> None:
    assert parse_workers("2") == [2]
    assert parse_workers("1,2") == [1, 2]


@pytest.mark.parametrize("value", ["0", "1,x", "", "17"])
def test_bad_worker_lists_are_one_line_errors(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--workers", value]) == 2
    assert capsys.readouterr().err.startswith("error: --workers")


def test_the_comparison_is_against_the_first_run() -> None:
    line = compare([{"server_workers": 1, "turns_per_second": 10.0, "load_average": [2.0, 1.0, 1.0]},
                    {"server_workers": 2, "turns_per_second": 25.0, "load_average": [3.0, 1.0, 1.0]}])
    assert "x1.00" in line and "x2.50" in line and "load average 3.00" in line


def _report(workers: int, means: list[float], held: list[int]) -> dict:
    return {"url": "http://127.0.0.1:1", "client_addresses": "shared", "sessions": len(means), "turns_per_session": 3,
            "server_workers": workers, "turns_ok": 3 * len(means), "turns_expected": 3 * len(means), "errors": 0,
            "lost_turns": 0, "leaked_tokens": 0, "timed_out_sessions": 0, "requests": 4 * len(means),
            "wall_seconds": 1.0, "turns_per_second": 12.0, "error_samples": [],
            "turn_latency_ms": {"p50": 200.0, "p95": 400.0, "p99": 450.0, "max": 500.0},
            "session_mean_turn_ms": means, "connections_per_process": held}


def test_the_report_says_how_customers_and_connections_were_shared() -> None:
    text = format_report(_report(2, [120.5, 200.0, 410.0, 415.5], [3, 1]))
    assert "customers' mean turn ms: fastest 120.5, median 410.0, slowest 415.5" in text
    assert "connections held per server process: 3 / 1" in text
    bare = format_report({**_report(1, [], []), "session_mean_turn_ms": [], "connections_per_process": []})
    assert "customers'" not in bare and "connections held" not in bare  # nothing measured: nothing said


def test_the_picture_is_drawn_for_each_run(tmp_path: Path) -> None:
    out = tmp_path / "load.png"
    plot([_report(1, [300.0, 310.0], [2]), {**_report(2, [150.0, 480.0], [2, 0]), "label": "before"}], out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000
