"""``eval.load_test --workers``: one server per worker count in one run, and bad counts refused."""

from __future__ import annotations

import pytest

from eval.load_test import compare, main, parse_workers


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
