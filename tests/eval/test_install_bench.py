"""``eval.install_bench``: what the wheel holds, the figures' wording and its one-line errors (no install is timed)."""

from __future__ import annotations

import zipfile

import pytest

from eval.install_bench import build_wheel, main, markdown, wheel_contents


def test_the_largest_members_and_the_sizes_come_from_the_wheel(tmp_path):
    wheel = tmp_path / "dtdialog-0.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("dtdialog/big.bin", b"x" * 300_000)
        zf.writestr("dtdialog/small.txt", b"y" * 10)
    found = wheel_contents(wheel, top=1)
    assert found["files"] == 2 and [m["path"] for m in found["largest"]] == ["dtdialog/big.bin"]
    assert found["mb"] == round(wheel.stat().st_size / 1024 / 1024, 2) and found["unpacked_mb"] == 0.29
    report = {"wheel": found, "extras": "all", "cache": True, "load_before": 0.5, "load_after": 0.7,
              "installs": [{"seconds": 30.0, "venv_mb": 900.0}, {"seconds": 20.0, "venv_mb": 901.0}]}
    text = markdown(report)
    assert "p50 25.0 s, max 30.0 s" in text and "warm pip cache" in text and "dtdialog/big.bin" in text


@pytest.mark.slow
def test_the_built_wheel_ships_the_prebuilt_index_and_the_models(tmp_path):
    names = zipfile.ZipFile(build_wheel(tmp_path)).namelist()
    assert any("resources/prebuilt/" in n for n in names)
    assert any(n.endswith("ranker-v1.joblib") for n in names)
    assert not any(n.startswith(("tests/", "runs/")) for n in names)


def test_a_bad_run_count_is_one_line(capsys):
    assert main(["--runs", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --runs must be at least 1, got 0"


def test_a_failed_step_names_pips_error_not_its_hint():
    import sys

    from eval.install_bench import _run
    from parsers.errors import InputError

    script = "import sys; sys.stderr.write('ERROR: No matching distribution found for nothing\\nhint: see above\\n'); " \
             "sys.exit(1)"
    with pytest.raises(InputError, match=r"^pip install failed \(exit 1\): ERROR: No matching distribution found"):
        _run([sys.executable, "-c", script], what="pip install")
